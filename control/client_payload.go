package control

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
)

// repeatingPayload holds iperf3's --repeating-payload: byte i is '0' +
// i%10 (fill_with_repeating_pattern in iperf_util.c), long enough for the
// largest datagram.
var repeatingPayload = func() []byte {
	b := make([]byte, wire.MaxUDPBlock+16)
	for i := range b {
		b[i] = '0' + byte(i%10)
	}
	return b
}()

// repeatingSource feeds a TCP sender iperf3's repeating payload. Every
// buffer starts again at '0': iperf3 fills its one buffer once and sends
// it over and over.
type repeatingSource struct{}

func (repeatingSource) Read(p []byte) (int, error) {
	for n := 0; n < len(p); {
		n += copy(p[n:], repeatingPayload[n%10:])
	}
	return len(p), nil
}

// clientFiles are the -F file opened for a test's streams: one reader
// for each sending stream (each reads the file from its start, as iperf3
// opens it once per stream), or the one writer of the receiving stream.
type clientFiles struct {
	name    string
	sources []*os.File
	sink    *os.File
}

// openClientFiles opens cfg's -F file for the streams that will use it,
// before the test connects, so that a file that cannot be opened costs
// no connection. A sink is created or truncated.
func openClientFiles(cfg *Config) (*clientFiles, error) {
	if cfg.File == "" {
		return nil, nil
	}
	f := &clientFiles{name: cfg.File}
	if cfg.sends() {
		for range cfg.Parallel {
			src, err := os.Open(cfg.File)
			if err != nil {
				f.close()
				return nil, fmt.Errorf("-F: unable to open -F file: %w", err)
			}
			f.sources = append(f.sources, src)
		}
		return f, nil
	}
	sink, err := os.OpenFile(cfg.File, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("-F: unable to open -F file: %w", err)
	}
	f.sink = sink
	return f, nil
}

// attach gives each sending stream its reader and the receiving stream
// the writer.
func (f *clientFiles) attach(streams []*stream) {
	si := 0
	for _, st := range streams {
		switch {
		case st.sender && si < len(f.sources):
			st.source = f.sources[si]
			si++
		case !st.sender && f.sink != nil:
			st.sink = f.sink
		}
	}
}

// result is the file as the Result reports it: its name and its size
// now that the test is over.
func (f *clientFiles) result() *result.DiskFile {
	d := &result.DiskFile{Name: f.name}
	if fi, err := os.Stat(f.name); err == nil {
		d.Size = fi.Size()
	}
	return d
}

// close closes every descriptor; a sink's close error (the written bytes
// did not reach the file) is returned.
func (f *clientFiles) close() error {
	if f == nil {
		return nil
	}
	var errs []error
	for _, s := range f.sources {
		s.Close()
	}
	f.sources = nil
	if f.sink != nil {
		if err := f.sink.Close(); err != nil {
			errs = append(errs, fmt.Errorf("-F %s: %w", f.name, err))
		}
		f.sink = nil
	}
	return errors.Join(errs...)
}

var _ io.Reader = repeatingSource{}
