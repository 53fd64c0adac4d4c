package sockets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

func init() { engine.Register(Sendfile{}) }

// Sendfile sends a TCP stream with sendfile(2): the kernel hands page-cache
// pages to the socket without copying them through user memory. In
// sink/source mode the pages are a memfd holding one buffer of the
// pattern; with the file option (ttcp -F) or a Source that is a regular
// file, they are that file's. It only sends.
type Sendfile struct{ opts engine.Options }

var (
	_ engine.Backend      = Sendfile{}
	_ engine.Configurable = Sendfile{}
)

// Name implements engine.Backend.
func (Sendfile) Name() string { return "sendfile" }

// Configure implements engine.Configurable: sendfile takes the file option.
func (b Sendfile) Configure(o engine.Options) (engine.Backend, error) {
	if err := engine.Refuse(b.Name(), o, engine.Options{File: o.File}); err != nil {
		return nil, err
	}
	return Sendfile{opts: o}, nil
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

// Recv implements engine.Backend: sendfile only sends.
func (b Sendfile) Recv(ctx context.Context, f *engine.Flow) error { return sendOnly(b.Name()) }

// Send implements engine.Backend.
func (b Sendfile) Send(ctx context.Context, f *engine.Flow) error {
	if err := tcpOnly(b.Name(), f); err != nil {
		return err
	}
	facts := engine.FactsOf(f)
	var (
		fd      int
		pattern bool
	)
	switch {
	case b.opts.File != "":
		file, err := os.Open(b.opts.File)
		if err != nil {
			return fmt.Errorf("sendfile: %w", err)
		}
		defer file.Close()
		if err := regularFile(file, "sendfile"); err != nil {
			return err
		}
		fd = int(file.Fd())
		facts.Notef("sent from file %s", b.opts.File)
	case f.Spec.Source != nil:
		file, ok := f.Spec.Source.(*os.File)
		if !ok {
			return fmt.Errorf("sendfile sends from a file, and the source is a %T: give the file option (-F FILE), or use the splice or readwrite backend", f.Spec.Source)
		}
		if err := regularFile(file, "sendfile"); err != nil {
			return err
		}
		rc, err := file.SyscallConn()
		if err != nil {
			return fmt.Errorf("sendfile: source: %w", err)
		}
		rc.Control(func(u uintptr) { fd = int(u) })
		facts.Notef("sent from the source file %s", file.Name())
	default:
		mfd, err := patternMemfd(f.Spec.BufLen)
		if err != nil {
			return err
		}
		defer unix.Close(mfd)
		fd, pattern = mfd, true
		facts.Notef("sent from a memfd holding %d bytes of the pattern", f.Spec.BufLen)
	}
	return runSend(ctx, f, func(rc syscall.RawConn) error {
		return sendfileLoop(ctx, rc, f, fd, pattern)
	})
}

// sendfileLoop sends from fd: the pattern buffer at offset 0 over and over
// when pattern, else from fd's position to its end.
func sendfileLoop(ctx context.Context, rc syscall.RawConn, f *engine.Flow, fd int, pattern bool) error {
	s := f.Spec
	facts := engine.FactsOf(f)
	pacer := engine.NewPacer(s.Rate)
	left := limit(s)
	for left != 0 {
		n := chunk(s.BufLen, left)
		if err := pacer.Wait(ctx, n); err != nil {
			return err
		}
		for off := 0; off < n; {
			var k int
			var serr error
			err := rc.Write(func(sock uintptr) bool {
				if pattern {
					o := int64(off)
					k, serr = unix.Sendfile(int(sock), fd, &o, n-off)
				} else {
					k, serr = unix.Sendfile(int(sock), fd, nil, n-off)
				}
				facts.Add(engine.FactSyscalls, 1)
				return serr != unix.EAGAIN
			})
			if err != nil {
				return err
			}
			if serr != nil {
				f.Stats.AddError()
				return os.NewSyscallError("sendfile", serr)
			}
			if k == 0 { // end of the file
				f.Stats.AddCall()
				return nil
			}
			f.Stats.AddIO(k, 0)
			facts.Add(engine.FactBytesNotCopied, int64(k))
			off += k
		}
		if left > 0 {
			left -= int64(n)
		}
	}
	return nil
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
