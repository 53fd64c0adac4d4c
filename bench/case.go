package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/blastnet/blast/netlab"
)

// Case is one blast transfer run on its own, for profiling a backend
// pair: what compare's environment-gated TestOneCase did, in ttcp mode
// (two processes) on bench's lab.
type Case struct {
	Tx, TxOpts string // the transmitter's backend and its options
	Rx, RxOpts string
	UDP        bool
	BufLen     int
}

var backendNameRe = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

// ParseCase reads the transmitter's and receiver's NAME[:OPTS] (either
// may be empty: readwrite), UDP or TCP and the buffer length (0: 131072
// for TCP, 64 for UDP).
func ParseCase(tx, rx string, udp bool, bufLen int) (Case, error) {
	c := Case{UDP: udp, BufLen: bufLen}
	var errs []error
	split := func(end, s string) (string, string) {
		if s == "" {
			return "readwrite", ""
		}
		name, opts, _ := strings.Cut(s, ":")
		if !backendNameRe.MatchString(name) {
			errs = append(errs, fmt.Errorf("%s backend %q: want NAME or NAME:OPTS (blast backends lists them)", end, s))
		}
		return name, opts
	}
	c.Tx, c.TxOpts = split("transmitter", tx)
	c.Rx, c.RxOpts = split("receiver", rx)
	switch {
	case c.BufLen < 0 || c.BufLen > 1<<26:
		errs = append(errs, fmt.Errorf("buffer length %d: want 1 to %d bytes", c.BufLen, 1<<26))
	case c.BufLen == 0 && udp:
		c.BufLen = 64
	case c.BufLen == 0:
		c.BufLen = 128 << 10
	}
	return c, errors.Join(errs...)
}

func (c Case) spec() ttcpSpec {
	return ttcpSpec{id: "case", udp: c.UDP, bufLen: c.BufLen, txBackend: c.Tx, txOpt: c.TxOpts, rxBackend: c.Rx, rxOpt: c.RxOpts}
}

// RunCase builds a lab, sizes the transfer to about secs seconds with
// warm-up runs, runs it once and writes both ends' output and the
// kernel's accounting of each process to out. The lab is gone when it
// returns.
func RunCase(ctx context.Context, blast string, c Case, secs int, out io.Writer) error {
	if os.Geteuid() != 0 {
		return errors.New("bench: needs root to build its netns lab")
	}
	caps := DetectCaps(ctx, blast)
	if (c.TxOpts != "" || c.RxOpts != "") && caps.OptionArgs == nil {
		return errors.New("bench: this blast takes no backend options in ttcp mode")
	}
	lab, err := netlab.New(netlab.Direct, netlab.Options{})
	if err != nil {
		return err
	}
	defer lab.Close()
	e := &Env{Lab: lab, Blast: blast, Secs: secs, Caps: caps, counts: map[string]int64{}}
	if err := e.Check(); err != nil {
		return err
	}
	s := c.spec()
	if err := s.calibrate(ctx, e); err != nil {
		return err
	}
	rxArgv, txArgv := s.argv(e, e.counts[s.id])
	srv, cli, err := clientServer(ctx, lab.B, rxArgv, s.network(), ttcpPort, lab.A, txArgv, e.timeout(), false)
	for _, p := range []*proc{cli, srv} {
		if p == nil {
			continue
		}
		st := p.stats()
		fmt.Fprintf(out, "== %s\n%s%s", strings.Join(p.argv, " "), p.stdout.String(), p.stderr.String())
		fmt.Fprintf(out, "-- rusage: %.2f s user, %.2f s sys, %.2f s wall, max RSS %d KiB\n\n", st.UserSec, st.SysSec, st.WallSec, st.MaxRSSKB)
	}
	return err
}
