package sockets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

func init() { engine.Register(Splice{}) }

// Splice moves a TCP stream through a pipe with splice(2).
//
// Sending, the pipe is filled with vmsplice(2) of the pattern (pages mapped
// into the pipe, not copied), with splice(2) from the file option or a
// Source that is a file or pipe, or, for any other Source, with write(2)
// (one copy, noted); then splice(2) moves it to the socket.
//
// Receiving, splice(2) moves socket data into the pipe and a second
// splice(2) moves it on to /dev/null, or to the Sink when the Sink is a
// file or pipe; a Sink of another kind, or touching the data, reads the pipe
// into memory (one copy, noted).
//
// Counters count the socket-side splices; FactSyscalls counts both sides.
type Splice struct{ opts engine.Options }

var (
	_ engine.Backend      = Splice{}
	_ engine.Configurable = Splice{}
)

// Name implements engine.Backend.
func (Splice) Name() string { return "splice" }

// Configure implements engine.Configurable: splice takes the file option.
func (b Splice) Configure(o engine.Options) (engine.Backend, error) {
	if err := engine.Refuse(b.Name(), o, engine.Options{File: o.File}); err != nil {
		return nil, err
	}
	return Splice{opts: o}, nil
}

// Probe implements engine.Backend: vmsplice a byte into a pipe and splice
// it to /dev/null.
func (Splice) Probe() error {
	p, err := newPipe(1)
	if err != nil {
		return err
	}
	defer p.close()
	buf := []byte{'x'}
	if _, err := unix.Vmsplice(p.w, []unix.Iovec{iovec(buf)}, 0); err != nil {
		if errors.Is(err, unix.ENOSYS) {
			return fmt.Errorf("vmsplice is missing: %w", engine.ErrNotSupported)
		}
		return os.NewSyscallError("vmsplice", err)
	}
	null, err := unix.Open("/dev/null", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open /dev/null: %w", err)
	}
	defer unix.Close(null)
	if _, err := unix.Splice(p.r, nil, null, nil, 1, 0); err != nil {
		if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("splice to /dev/null refused (%v): %w", err, engine.ErrNotSupported)
		}
		return os.NewSyscallError("splice", err)
	}
	return nil
}

// pipe is a non-blocking pipe of a known capacity.
type pipe struct {
	r, w int
	cap  int
}

// newPipe makes a pipe that holds at least want bytes where the system
// allows (fs.pipe-max-size), and at least the default 64 KiB.
func newPipe(want int) (*pipe, error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, os.NewSyscallError("pipe2", err)
	}
	p := &pipe{r: fds[0], w: fds[1], cap: 65536}
	for size := roundPage(want); size > p.cap; size /= 2 {
		if n, err := unix.FcntlInt(uintptr(p.w), unix.F_SETPIPE_SZ, size); err == nil {
			p.cap = n
			break
		}
	}
	if n, err := unix.FcntlInt(uintptr(p.w), unix.F_GETPIPE_SZ, 0); err == nil {
		p.cap = n
	}
	return p, nil
}

func (p *pipe) close() error {
	return errors.Join(unix.Close(p.r), unix.Close(p.w))
}

func roundPage(n int) int {
	pg := os.Getpagesize()
	return (n + pg - 1) / pg * pg
}

// Recv implements engine.Backend.
func (b Splice) Recv(ctx context.Context, f *engine.Flow) error {
	if err := tcpOnly(b.Name(), f); err != nil {
		return err
	}
	p, err := newPipe(f.Spec.BufLen)
	if err != nil {
		return err
	}
	defer p.close()
	d, err := newDrain(f, p)
	if err != nil {
		return err
	}
	defer d.close()
	return runRecv(ctx, f, func(rc syscall.RawConn) error {
		return spliceRecvLoop(rc, f, p, d)
	})
}

func spliceRecvLoop(rc syscall.RawConn, f *engine.Flow, p *pipe, d *drain) error {
	s := f.Spec
	facts := engine.FactsOf(f)
	left := limit(s)
	for left != 0 {
		n := min(chunk(s.BufLen, left), p.cap)
		var k int64
		var serr error
		err := rc.Read(func(sock uintptr) bool {
			k, serr = unix.Splice(int(sock), nil, p.w, nil, n, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
			facts.Add(engine.FactSyscalls, 1)
			return serr != unix.EAGAIN
		})
		if err != nil {
			return err
		}
		if serr != nil {
			f.Stats.AddError()
			return os.NewSyscallError("splice from socket", serr)
		}
		if k == 0 {
			f.Stats.AddCall() // the splice that saw EOF
			return nil
		}
		f.Stats.AddIO(int(k), 0)
		if err := d.drain(int(k)); err != nil {
			return err
		}
		if left > 0 {
			left -= k
		}
	}
	return nil
}

// drain empties the pipe of a receiving splice: to /dev/null, to a Sink
// that is a file or pipe, or through memory.
type drain struct {
	f     *engine.Flow
	p     *pipe
	fd    int             // splice target, -1: read through buf
	rc    syscall.RawConn // the Sink's, to wait when it is non-blocking
	null  bool            // fd is our /dev/null
	buf   []byte
	facts *engine.Facts
}

func newDrain(f *engine.Flow, p *pipe) (*drain, error) {
	d := &drain{f: f, p: p, fd: -1, facts: engine.FactsOf(f)}
	sink, isFile := f.Spec.Sink.(*os.File)
	switch {
	case f.Spec.Touch || (f.Spec.Sink != nil && !isFile):
		d.buf = make([]byte, p.cap)
		if f.Spec.Touch {
			d.facts.Notef("touching the data: read from the pipe into memory (one copy)")
		} else {
			d.facts.Notef("the output is a %T, not a file: data read from the pipe into memory (one copy)", f.Spec.Sink)
		}
	case f.Spec.Sink != nil:
		rc, err := sink.SyscallConn()
		if err != nil {
			return nil, fmt.Errorf("splice: output: %w", err)
		}
		rc.Control(func(fd uintptr) { d.fd = int(fd) })
		d.rc = rc
		d.facts.Notef("spliced to the output %s", sink.Name())
	default:
		fd, err := unix.Open("/dev/null", unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("splice: open /dev/null: %w", err)
		}
		d.fd, d.null = fd, true
		d.facts.Notef("spliced to /dev/null")
	}
	return d, nil
}

func (d *drain) close() {
	if d.null {
		unix.Close(d.fd)
	}
}

// drain moves n bytes out of the pipe.
func (d *drain) drain(n int) error {
	for n > 0 {
		if d.fd < 0 {
			k, err := unix.Read(d.p.r, d.buf[:min(n, len(d.buf))])
			d.facts.Add(engine.FactSyscalls, 1)
			if err != nil {
				return os.NewSyscallError("read pipe", err)
			}
			if err := consume(d.f, d.buf[:k]); err != nil {
				return err
			}
			n -= k
			continue
		}
		var k int64
		var serr error
		do := func(fd uintptr) bool {
			k, serr = unix.Splice(d.p.r, nil, int(fd), nil, n, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
			d.facts.Add(engine.FactSyscalls, 1)
			return serr != unix.EAGAIN
		}
		if d.rc != nil {
			if err := d.rc.Write(do); err != nil {
				return fmt.Errorf("splice to output: %w", err)
			}
		} else {
			do(uintptr(d.fd))
		}
		if serr == unix.EINVAL && d.rc != nil {
			// The output takes no splice (a terminal, say): go
			// through memory from now on.
			d.facts.Notef("the output refuses splice (%v): data read from the pipe into memory (one copy)", serr)
			d.fd, d.rc = -1, nil
			d.buf = make([]byte, d.p.cap)
			continue
		}
		if serr != nil {
			return os.NewSyscallError("splice to output", serr)
		}
		d.facts.Add(engine.FactBytesNotCopied, k)
		n -= int(k)
	}
	return nil
}

// Send implements engine.Backend.
func (b Splice) Send(ctx context.Context, f *engine.Flow) error {
	if err := tcpOnly(b.Name(), f); err != nil {
		return err
	}
	p, err := newPipe(f.Spec.BufLen)
	if err != nil {
		return err
	}
	defer p.close()
	var fill filler
	switch {
	case b.opts.File != "":
		file, err := os.Open(b.opts.File)
		if err != nil {
			return fmt.Errorf("splice: %w", err)
		}
		defer file.Close()
		fill, err = newFileFiller(f, p, file)
		if err != nil {
			return err
		}
	case f.Spec.Source != nil:
		if file, ok := f.Spec.Source.(*os.File); ok {
			fill, err = newFileFiller(f, p, file)
			if err != nil {
				return err
			}
			break
		}
		fill = newCopyFiller(f, p)
	default:
		pf, err := newPatternFiller(f, p)
		if err != nil {
			return err
		}
		defer pf.close()
		fill = pf.fill
	}
	return runSend(ctx, f, func(rc syscall.RawConn) error {
		return spliceSendLoop(ctx, rc, f, p, fill)
	})
}

// errPipeFull says a filler found no room in the pipe.
var errPipeFull = errors.New("pipe full")

// A filler puts at most max bytes into the pipe (empty: the pipe holds
// nothing now) and says how many: 0 and a nil error at the end of the
// source, errPipeFull when there was no room or nothing to put yet.
type filler func(max int, empty bool) (int, error)

func spliceSendLoop(ctx context.Context, rc syscall.RawConn, f *engine.Flow, p *pipe, fill filler) error {
	s := f.Spec
	facts := engine.FactsOf(f)
	pacer := engine.NewPacer(s.Rate)
	left := limit(s)
	queued := 0 // bytes in the pipe
	eof := false
	for {
		if want := p.cap - queued; !eof && want > 0 && (left < 0 || int64(queued) < left) {
			if left >= 0 && left-int64(queued) < int64(want) {
				want = int(left - int64(queued))
			}
			k, err := fill(want, queued == 0)
			switch {
			case errors.Is(err, errPipeFull):
			case err != nil:
				return err
			case k == 0:
				eof = true
			}
			queued += k
		}
		if queued == 0 {
			if eof || left == 0 {
				return nil
			}
			continue
		}
		n := min(queued, s.BufLen)
		if err := pacer.Wait(ctx, n); err != nil {
			return err
		}
		var k int64
		var serr error
		err := rc.Write(func(sock uintptr) bool {
			k, serr = unix.Splice(p.r, nil, int(sock), nil, n, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK|unix.SPLICE_F_MORE)
			facts.Add(engine.FactSyscalls, 1)
			return serr != unix.EAGAIN
		})
		if err != nil {
			return err
		}
		if serr != nil {
			f.Stats.AddError()
			return os.NewSyscallError("splice to socket", serr)
		}
		f.Stats.AddIO(int(k), 0)
		queued -= int(k)
		if left > 0 {
			left -= k
		}
	}
}

// patternFiller vmsplices one buffer of the pattern, round and round. The
// buffer is an anonymous mapping: pages the kernel still holds (in the pipe
// or the socket's queue) stay valid after it is unmapped, and the Go heap
// never reuses them.
type patternFiller struct {
	mem   []byte
	buf   []byte
	pos   int
	p     *pipe
	facts *engine.Facts
}

func newPatternFiller(f *engine.Flow, p *pipe) (*patternFiller, error) {
	mem, err := unix.Mmap(-1, 0, roundPage(f.Spec.BufLen), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, os.NewSyscallError("mmap", err)
	}
	pf := &patternFiller{mem: mem, buf: mem[:f.Spec.BufLen], p: p, facts: engine.FactsOf(f)}
	engine.Pattern(pf.buf)
	pf.facts.Notef("pattern vmspliced into the pipe")
	return pf, nil
}

func (pf *patternFiller) close() { unix.Munmap(pf.mem) }

func (pf *patternFiller) fill(max int, _ bool) (int, error) {
	chunk := pf.buf[pf.pos:min(len(pf.buf), pf.pos+max)]
	n, err := unix.Vmsplice(pf.p.w, []unix.Iovec{iovec(chunk)}, unix.SPLICE_F_NONBLOCK)
	pf.facts.Add(engine.FactSyscalls, 1)
	if err == unix.EAGAIN {
		return 0, errPipeFull
	}
	if err != nil {
		return 0, os.NewSyscallError("vmsplice", err)
	}
	pf.facts.Add(engine.FactBytesNotCopied, int64(n))
	pf.pos = (pf.pos + n) % len(pf.buf)
	return n, nil
}

// newFileFiller splices from a file or pipe.
func newFileFiller(f *engine.Flow, p *pipe, file *os.File) (filler, error) {
	rc, err := file.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("splice: source: %w", err)
	}
	facts := engine.FactsOf(f)
	facts.Notef("spliced from %s", file.Name())
	var fd int
	rc.Control(func(u uintptr) { fd = int(u) })
	return func(max int, empty bool) (int, error) {
		var n int64
		var serr error
		try := func(uintptr) bool {
			n, serr = unix.Splice(fd, nil, p.w, nil, max, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
			facts.Add(engine.FactSyscalls, 1)
			// EAGAIN with our pipe empty: a non-blocking source has
			// nothing yet, so wait for it; with something in our pipe,
			// draining it comes first.
			return serr != unix.EAGAIN || !empty
		}
		if err := rc.Read(try); err != nil {
			return 0, fmt.Errorf("splice: source: %w", err)
		}
		switch {
		case serr == unix.EAGAIN:
			return 0, errPipeFull
		case serr == unix.EINVAL:
			return 0, fmt.Errorf("splice: %s refuses splice (not a file or pipe?): use the readwrite backend", file.Name())
		case serr != nil:
			return 0, os.NewSyscallError("splice from source", serr)
		}
		facts.Add(engine.FactBytesNotCopied, n)
		return int(n), nil
	}, nil
}

// newCopyFiller reads an io.Reader and writes what it read into the pipe.
func newCopyFiller(f *engine.Flow, p *pipe) filler {
	facts := engine.FactsOf(f)
	facts.Notef("the source is a %T, not a file: copied into the pipe with write(2)", f.Spec.Source)
	buf := make([]byte, f.Spec.BufLen)
	var pending []byte
	return func(max int, _ bool) (int, error) {
		if len(pending) == 0 {
			n, err := f.Spec.Source.Read(buf[:min(max, len(buf))])
			if n == 0 {
				if err == nil || errors.Is(err, io.EOF) {
					if err == nil {
						return 0, errPipeFull // nothing this time; try again
					}
					return 0, nil
				}
				return 0, fmt.Errorf("read source: %w", err)
			}
			pending = buf[:n]
		}
		n, err := unix.Write(p.w, pending[:min(max, len(pending))])
		facts.Add(engine.FactSyscalls, 1)
		if err == unix.EAGAIN {
			return 0, errPipeFull
		}
		if err != nil {
			return 0, os.NewSyscallError("write pipe", err)
		}
		pending = pending[n:]
		return n, nil
	}
}

func iovec(b []byte) unix.Iovec {
	v := unix.Iovec{Base: &b[0]}
	v.SetLen(len(b))
	return v
}
