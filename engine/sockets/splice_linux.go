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

// Splice moves a TCP stream through a pipe with splice(2).
//
// Sending, each buffer the Sender grants is put into the pipe with
// vmsplice(2) of the pattern (pages mapped into the pipe, not copied),
// with splice(2) from the file option or a Source that is a file or pipe,
// or, for any other Source, with write(2) (one copy, noted); then a
// blocking splice(2) moves it to the socket.
//
// Receiving, a blocking splice(2) moves socket data into the pipe and a
// second splice(2) moves it on to /dev/null, or to the Sink when the Sink
// is a file or pipe; a Sink of another kind, or touching the data, reads
// the pipe into memory (one copy, noted). The receive honours the socket's
// timeout (SO_RCVTIMEO).
//
// Counters count one I/O operation per buffer sent and per socket-side
// splice received; FactSyscalls counts every call on both sides of the
// pipe.
type Splice struct{ file string }

var (
	_ engine.Backend      = Splice{}
	_ engine.Configurable = Splice{}
)

// Name implements engine.Backend.
func (Splice) Name() string { return "splice" }

// Options implements engine.Configurable.
func (Splice) Options() []engine.Option {
	return []engine.Option{{
		Name:    "file",
		Kind:    engine.Text,
		Default: "the pattern, vmspliced into the pipe (or the source, spliced when it is a file or pipe)",
		Help:    "send this file or named pipe (ttcp -F), spliced into the pipe without a copy",
	}}
}

// Configure implements engine.Configurable: the file must exist now, so
// that a mistyped path fails before any connection is made.
func (b Splice) Configure(o engine.Options) (engine.Backend, error) {
	file := o.Text("file")
	if file != "" {
		if _, err := os.Stat(file); err != nil {
			return nil, fmt.Errorf("backend splice option file: %w", err)
		}
	}
	return Splice{file: file}, nil
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

// pipe is a non-blocking pipe of a known capacity. The backend empties it
// before it fills it again, so that no call on it ever has to wait: a
// blocking pipe would hold the flow's thread where cancelling the flow
// cannot reach it.
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

func iovec(b []byte) unix.Iovec {
	v := unix.Iovec{Base: &b[0]}
	v.SetLen(len(b))
	return v
}

// Recv implements engine.Backend.
func (b Splice) Recv(ctx context.Context, f *engine.Flow) error {
	if err := engine.TCPOnly(b.Name(), f); err != nil {
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
	fd := f.Sock.FD()
	left := int64(-1)
	if f.Spec.Bytes > 0 {
		left = f.Spec.Bytes
	}
	for left != 0 {
		n := min(f.Spec.BufLen, p.cap)
		if left > 0 && left < int64(n) {
			n = int(left)
		}
		// The pipe is empty, so only the socket can make this wait.
		k, err := unix.Splice(fd, nil, p.w, nil, n, unix.SPLICE_F_MOVE)
		d.syscalls.Add(1)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil && f.Cancelled():
			return engine.ErrCancelled
		case err != nil:
			f.Stats.AddError()
			return engine.IOErr("splice from socket", err)
		case k == 0:
			f.Stats.AddCall() // the splice that saw EOF (or the shutdown)
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
	f    *engine.Flow
	p    *pipe
	fd   int  // splice target, -1: read through buf
	null bool // fd is our /dev/null
	buf  []byte

	syscalls, notCopied *atomic.Int64
}

func newDrain(f *engine.Flow, p *pipe) (*drain, error) {
	d := &drain{f: f, p: p, fd: -1,
		syscalls:  f.Facts.Counter(engine.FactSyscalls),
		notCopied: f.Facts.Counter(engine.FactBytesNotCopied),
	}
	sink, isFile := f.Spec.Sink.(*os.File)
	switch {
	case f.Spec.Touch || (f.Spec.Sink != nil && !isFile):
		d.buf = make([]byte, p.cap)
		if f.Spec.Touch {
			f.Facts.Notef("touching the data: read from the pipe into memory (one copy)")
		} else {
			f.Facts.Notef("the output is a %T, not a file: data read from the pipe into memory (one copy)", f.Spec.Sink)
		}
	case f.Spec.Sink != nil:
		fd, err := fileFD(sink)
		if err != nil {
			return nil, fmt.Errorf("splice: output: %w", err)
		}
		d.fd = fd
		f.Facts.Notef("spliced to the output %s", sink.Name())
	default:
		fd, err := unix.Open("/dev/null", unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("splice: open /dev/null: %w", err)
		}
		d.fd, d.null = fd, true
		f.Facts.Notef("spliced to /dev/null")
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
			d.syscalls.Add(1)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return os.NewSyscallError("read pipe", err)
			}
			if err := engine.Consume(d.f, d.buf[:k]); err != nil {
				return err
			}
			n -= k
			continue
		}
		// SPLICE_F_NONBLOCK: an output pipe that is full says so
		// instead of holding the thread; the flow then waits for it in
		// ppoll, where cancelling reaches it.
		k, err := unix.Splice(d.p.r, nil, d.fd, nil, n, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
		d.syscalls.Add(1)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN && !d.null:
			if _, err := d.f.Wait(d.fd, unix.POLLOUT, -1); err != nil {
				return err
			}
			d.syscalls.Add(1)
			continue
		case err == unix.EINVAL && !d.null:
			// The output takes no splice (a terminal, say): go
			// through memory from now on.
			d.f.Facts.Notef("the output refuses splice (%v): data read from the pipe into memory (one copy)", err)
			d.fd = -1
			d.buf = make([]byte, d.p.cap)
			continue
		case err != nil:
			return os.NewSyscallError("splice to output", err)
		}
		d.notCopied.Add(k)
		n -= int(k)
	}
	return nil
}

// Send implements engine.Backend.
func (b Splice) Send(ctx context.Context, f *engine.Flow) error {
	if err := engine.TCPOnly(b.Name(), f); err != nil {
		return err
	}
	p, err := newPipe(f.Spec.BufLen)
	if err != nil {
		return err
	}
	defer p.close()
	sp := &spliceSender{f: f, p: p, sock: f.Sock.FD(),
		syscalls:  f.Facts.Counter(engine.FactSyscalls),
		notCopied: f.Facts.Counter(engine.FactBytesNotCopied),
	}
	file, _ := f.Spec.Source.(*os.File)
	if b.file != "" {
		if file, err = os.Open(b.file); err != nil {
			return fmt.Errorf("splice: %w", err)
		}
		defer file.Close()
	}
	switch {
	case file != nil:
		fill, err := sp.fromFile(file)
		if err != nil {
			return err
		}
		f.Facts.Notef("spliced from %s", file.Name())
		return sp.sendTaken(engine.NewFileSender(f), fill)
	case f.Spec.Source != nil:
		f.Facts.Notef("the source is a %T, not a file: copied into the pipe with write(2)", f.Spec.Source)
		return sp.sendRead(engine.NewSender(f))
	}
	mem, err := unix.Mmap(-1, 0, roundPage(f.Spec.BufLen), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return os.NewSyscallError("mmap", err)
	}
	// Pages the kernel still holds (in the socket's queue) stay valid
	// after the unmapping, and the Go heap never reuses them.
	defer unix.Munmap(mem)
	pattern := mem[:f.Spec.BufLen]
	engine.Pattern(pattern)
	f.Facts.Notef("pattern vmspliced into the pipe")
	return sp.sendTaken(engine.NewSender(f), sp.fromPattern(pattern))
}

type spliceSender struct {
	f    *engine.Flow
	p    *pipe
	sock int

	syscalls, notCopied *atomic.Int64
}

// A filler puts bytes off through off+max of the buffer being sent into
// the empty pipe and says how many it put, at least one; 0 at the end of
// the source.
type filler func(off, max int) (int, error)

// sendTaken sends buffers granted by Take, each filled into the pipe by
// fill: one I/O operation per buffer.
func (sp *spliceSender) sendTaken(s *engine.Sender, fill filler) error {
	for {
		n, err := s.Take(sp.f.Spec.BufLen)
		if err != nil || n == 0 {
			return err
		}
		sent, end, err := sp.move(s, n, fill)
		if sent > 0 {
			sp.f.Stats.AddIO(sent, 0)
		}
		if end {
			return err
		}
	}
}

// sendRead sends buffers read from the Source by Next, written into the
// pipe: one I/O operation per buffer.
func (sp *spliceSender) sendRead(s *engine.Sender) error {
	buf := engine.Buffer(sp.f.Spec)
	for {
		p, err := s.Next(buf)
		if err != nil || len(p) == 0 {
			return err
		}
		sent, end, err := sp.move(s, len(p), func(off, max int) (int, error) {
			for {
				k, err := unix.Write(sp.p.w, p[off:off+max])
				sp.syscalls.Add(1)
				if err == unix.EINTR {
					continue
				}
				if err != nil { // EAGAIN too: the pipe is empty
					return 0, os.NewSyscallError("write pipe", err)
				}
				return k, nil
			}
		})
		if sent > 0 {
			sp.f.Stats.AddIO(sent, 0)
		}
		if end {
			return err
		}
	}
}

// move sends n bytes through the pipe, as many pipefuls as it takes: it
// returns how many reached the socket and whether the send is over (the
// end of the source, the time limit, an error).
func (sp *spliceSender) move(s *engine.Sender, n int, fill filler) (sent int, end bool, err error) {
	for sent < n {
		k, err := fill(sent, min(n-sent, sp.p.cap))
		if err != nil {
			return sent, true, err
		}
		if k == 0 {
			return sent, true, nil
		}
		moved, err := sp.out(s, k, sent+k < n)
		sent += moved
		if err != nil || moved < k {
			return sent, true, err
		}
	}
	return sent, false, nil
}

// out splices the k bytes in the pipe to the socket, blocking on the
// socket; it returns fewer when the time limit ended the send. more says
// that more of the same buffer follows (SPLICE_F_MORE, as a write(2) of
// the whole buffer would not push a partial segment).
func (sp *spliceSender) out(s *engine.Sender, k int, more bool) (int, error) {
	flags := unix.SPLICE_F_MOVE
	if more {
		flags |= unix.SPLICE_F_MORE
	}
	moved := 0
	for moved < k {
		// Never more than the pipe holds, so only the socket can make
		// this wait.
		m, err := unix.Splice(sp.p.r, nil, sp.sock, nil, k-moved, flags)
		sp.syscalls.Add(1)
		if err != nil {
			again, err := retry(sp.f, s, "splice to socket", err)
			if again {
				continue
			}
			return moved, err
		}
		moved += int(m)
	}
	return moved, nil
}

// fromPattern vmsplices the pattern buffer into the pipe: its pages are
// mapped into the pipe, not copied.
func (sp *spliceSender) fromPattern(buf []byte) filler {
	return func(off, max int) (int, error) {
		for {
			k, err := unix.Vmsplice(sp.p.w, []unix.Iovec{iovec(buf[off : off+max])}, unix.SPLICE_F_NONBLOCK)
			sp.syscalls.Add(1)
			if err == unix.EINTR {
				continue
			}
			if err != nil { // EAGAIN too: the pipe is empty
				return 0, os.NewSyscallError("vmsplice", err)
			}
			sp.notCopied.Add(int64(k))
			return k, nil
		}
	}
}

// fromFile splices from a file or pipe into the pipe. A source that can
// make it wait (a pipe, a device) is spliced from without blocking and
// waited for in ppoll (Flow.Wait), where cancelling the flow reaches it.
func (sp *spliceSender) fromFile(file *os.File) (filler, error) {
	src, err := fileFD(file)
	if err != nil {
		return nil, fmt.Errorf("splice: source: %w", err)
	}
	st, err := file.Stat()
	if err != nil {
		return nil, fmt.Errorf("splice: source: %w", err)
	}
	pollable := !st.Mode().IsRegular()
	flags := unix.SPLICE_F_MOVE
	if pollable {
		flags |= unix.SPLICE_F_NONBLOCK
	}
	return func(_, max int) (int, error) {
		for {
			k, err := unix.Splice(src, nil, sp.p.w, nil, max, flags)
			sp.syscalls.Add(1)
			switch {
			case err == unix.EINTR:
				continue
			case err == unix.EAGAIN && pollable:
				if _, err := sp.f.Wait(src, unix.POLLIN, -1); err != nil {
					return 0, err
				}
				sp.syscalls.Add(1)
				continue
			case err == unix.EINVAL:
				return 0, fmt.Errorf("splice: %s refuses splice (not a file or pipe?): use the readwrite backend", file.Name())
			case err != nil:
				return 0, os.NewSyscallError("splice from source", err)
			}
			sp.notCopied.Add(k)
			return int(k), nil
		}
	}, nil
}
