package sockets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

// Sendfile sends a TCP stream with sendfile(2): the kernel hands page-cache
// pages to the socket without copying them through user memory. In
// sink/source mode the pages are a memfd holding one buffer of the
// pattern; with the file option (ttcp -F) or a Source that is a regular
// file, they are that file's. It only sends.
//
// Every buffer the Sender grants (Take, BufLen bytes) goes in as many
// blocking sendfile calls as the kernel needs and counts as one I/O
// operation; FactSyscalls counts the calls.
type Sendfile struct{ file string }

var (
	_ engine.Backend      = Sendfile{}
	_ engine.Configurable = Sendfile{}
)

// Name implements engine.Backend.
func (Sendfile) Name() string { return "sendfile" }

// Options implements engine.Configurable.
func (Sendfile) Options() []engine.Option {
	return []engine.Option{{
		Name:    "file",
		Kind:    engine.Text,
		Default: "the pattern, from a memfd holding one buffer of it (or the source, when it is a regular file)",
		Help:    "send this file (ttcp -F), from the page cache to the socket",
	}}
}

// Configure implements engine.Configurable: the file must exist now, so
// that a mistyped path fails before any connection is made.
func (b Sendfile) Configure(o engine.Options) (engine.Backend, error) {
	file := o.Text("file")
	if file != "" {
		if _, err := os.Stat(file); err != nil {
			return nil, fmt.Errorf("backend sendfile option file: %w", err)
		}
	}
	return Sendfile{file: file}, nil
}

// Probe implements engine.Backend: sendfile is always there on Linux; the
// memfd it sends the pattern from needs memfd_create (3.17).
func (Sendfile) Probe() error {
	fd, err := unix.MemfdCreate("blast-probe", unix.MFD_CLOEXEC)
	if err != nil {
		if errors.Is(err, unix.ENOSYS) {
			return fmt.Errorf("memfd_create is missing (kernel older than 3.17): %w", engine.ErrNotSupported)
		}
		return os.NewSyscallError("memfd_create", err)
	}
	unix.Close(fd)
	return nil
}

// RunsFree implements engine.Free: its sends go through the flow.
func (Sendfile) RunsFree(send bool) bool { return send }

// Recv implements engine.Backend: sendfile only sends.
func (b Sendfile) Recv(context.Context, *engine.Flow) error { return engine.SendOnly(b.Name()) }

// Send implements engine.Backend.
func (b Sendfile) Send(ctx context.Context, f *engine.Flow) error {
	if err := engine.TCPOnly(b.Name(), f); err != nil {
		return err
	}
	var (
		src     int
		pattern bool
	)
	switch {
	case b.file != "":
		file, err := os.Open(b.file)
		if err != nil {
			return fmt.Errorf("sendfile: %w", err)
		}
		defer file.Close()
		if err := regularFile(file, "sendfile"); err != nil {
			return err
		}
		if src, err = fileFD(file); err != nil {
			return err
		}
		f.Facts.Notef("sent from file %s", b.file)
	case f.Spec.Source != nil:
		file, ok := f.Spec.Source.(*os.File)
		if !ok {
			return fmt.Errorf("sendfile sends from a file, and the source is a %T: give the file option (-F FILE), or use the splice or readwrite backend", f.Spec.Source)
		}
		if err := regularFile(file, "sendfile"); err != nil {
			return err
		}
		var err error
		if src, err = fileFD(file); err != nil {
			return err
		}
		f.Facts.Notef("sent from the source file %s", file.Name())
	default:
		mfd, err := patternMemfd(f.Spec.BufLen)
		if err != nil {
			return err
		}
		defer unix.Close(mfd)
		src, pattern = mfd, true
		f.Facts.Notef("sent from a memfd holding %d bytes of the pattern", f.Spec.BufLen)
	}
	return sendfileLoop(f, engine.NewFileSender(f), src, pattern)
}

// sendfileLoop sends from src: the pattern buffer at offset 0 over and
// over when pattern, else from src's position to its end.
func sendfileLoop(f *engine.Flow, s *engine.Sender, src int, pattern bool) error {
	sock := f.Sock.FD()
	syscalls := f.Facts.Counter(engine.FactSyscalls)
	notCopied := f.Facts.Counter(engine.FactBytesNotCopied)
	for {
		n, err := s.Take(f.Spec.BufLen)
		if err != nil || n == 0 {
			return err
		}
		sent, end := 0, false
		for sent < n {
			var k int
			var serr error
			if pattern {
				off := int64(sent)
				k, serr = f.Sendfile(sock, src, &off, n-sent)
			} else {
				k, serr = f.Sendfile(sock, src, nil, n-sent)
			}
			syscalls.Add(1)
			if serr != nil {
				again, err := retry(f, s, "sendfile", serr)
				if again {
					continue
				}
				if err != nil {
					account(f, sent, notCopied)
					return err
				}
				end = true // the time limit
				break
			}
			if k == 0 { // the end of the file
				end = true
				break
			}
			sent += k
		}
		account(f, sent, notCopied)
		if end {
			return nil
		}
	}
}

// account counts one buffer's worth of bytes moved without a copy as one
// I/O operation (none when nothing moved).
func account(f *engine.Flow, n int, notCopied *atomic.Int64) {
	if n > 0 {
		f.Stats.AddIO(n, 0)
		notCopied.Add(int64(n))
	}
}

// retry decides about a failed send call with the Sender's policy: again
// to make the same call again; otherwise the send ends, with nil when the
// time limit ended it, engine.ErrCancelled when the flow was cancelled
// (Run reports the context's error), or the call's error (counted).
func retry(f *engine.Flow, s *engine.Sender, op string, err error) (again bool, _ error) {
	again, rerr := s.Retry(err)
	switch {
	case again:
		return true, nil
	case rerr == nil:
		return false, nil
	case f.Cancelled():
		return false, engine.ErrCancelled
	}
	f.Stats.AddError()
	return false, engine.IOErr(op, rerr)
}

// fileFD is file's descriptor, left in the mode it is in (File.Fd would
// make a pipe blocking). It stays valid while file is open.
func fileFD(file *os.File) (int, error) {
	rc, err := file.SyscallConn()
	if err != nil {
		return -1, fmt.Errorf("%s: %w", file.Name(), err)
	}
	fd := -1
	if err := rc.Control(func(u uintptr) { fd = int(u) }); err != nil {
		return -1, fmt.Errorf("%s: %w", file.Name(), err)
	}
	return fd, nil
}

// patternMemfd returns a memfd holding n bytes of the pattern.
func patternMemfd(n int) (int, error) {
	fd, err := unix.MemfdCreate("blast-pattern", unix.MFD_CLOEXEC)
	if err != nil {
		return -1, os.NewSyscallError("memfd_create", err)
	}
	buf := make([]byte, n)
	engine.Pattern(buf)
	for off := 0; off < n; {
		k, err := unix.Pwrite(fd, buf[off:], int64(off))
		if err != nil {
			unix.Close(fd)
			return -1, os.NewSyscallError("pwrite memfd", err)
		}
		off += k
	}
	return fd, nil
}

// regularFile refuses what sendfile cannot read from: pipes, terminals,
// sockets.
func regularFile(file *os.File, backend string) error {
	st, err := file.Stat()
	if err != nil {
		return fmt.Errorf("%s: %w", backend, err)
	}
	if !st.Mode().IsRegular() && st.Mode()&os.ModeDevice == 0 {
		return fmt.Errorf("%s sends from a regular file, and %s is a %v: use the splice backend for pipes, or readwrite", backend, file.Name(), st.Mode().Type())
	}
	return nil
}
