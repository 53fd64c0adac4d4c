package sockets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

func init() { engine.Register(ZeroCopy{}) }

// ZeroCopy sends with SO_ZEROCOPY and MSG_ZEROCOPY: the kernel sends from
// the user's pages instead of copying them, and says on the socket's error
// queue when it is done with each send and whether it had to copy after all
// (SO_EE_CODE_ZEROCOPY_COPIED: always on loopback and veth, where the data
// is delivered locally). A buffer is reused only after the completion of
// every send that used it. It only sends, TCP or UDP.
//
// The buffers are an anonymous mapping, not Go memory: if a flow ends with
// sends still in flight (a peer that stopped reading, a cancelled context)
// the pages the kernel holds stay valid after the unmapping, and the Go heap
// never reuses them.
type ZeroCopy struct{}

var _ engine.Backend = ZeroCopy{}

// Name implements engine.Backend.
func (ZeroCopy) Name() string { return "zerocopy" }

// Probe implements engine.Backend: set SO_ZEROCOPY on a TCP socket.
func (ZeroCopy) Probe() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return os.NewSyscallError("socket", err)
	}
	defer unix.Close(fd)
	return enableZeroCopy(fd)
}

func enableZeroCopy(fd int) error {
	err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ZEROCOPY, 1)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOPROTOOPT), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EINVAL):
		return fmt.Errorf("SO_ZEROCOPY refused (%v): the kernel is older than 4.14 (UDP: 5.0) or the socket type has no zero-copy send: %w", err, engine.ErrNotSupported)
	}
	return fmt.Errorf("set SO_ZEROCOPY: %w", err)
}

// Recv implements engine.Backend: zerocopy only sends.
func (b ZeroCopy) Recv(context.Context, *engine.Flow) error { return sendOnly(b.Name()) }

// drainWait bounds the wait for outstanding completions at the end of a
// flow that was not cancelled.
const drainWait = 2 * time.Second

// Send implements engine.Backend.
func (b ZeroCopy) Send(ctx context.Context, f *engine.Flow) error {
	rc, err := rawConn(f)
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = enableZeroCopy(int(fd)) }); err != nil {
		return err
	}
	if serr != nil {
		return serr
	}
	nbuf := zcBuffers(f)
	stride := f.Spec.BufLen
	if stride >= 4096 {
		stride = roundPage(stride)
	} else {
		stride = (stride + 63) &^ 63
	}
	mem, err := unix.Mmap(-1, 0, roundPage(nbuf*stride), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return os.NewSyscallError("mmap", err)
	}
	defer unix.Munmap(mem)
	z := &zcSender{f: f, facts: engine.FactsOf(f), book: newZCBook(nbuf), oob: make([]byte, 512)}
	z.bufs = make([][]byte, nbuf)
	for i := range z.bufs {
		z.bufs[i] = mem[i*stride : i*stride+f.Spec.BufLen : i*stride+f.Spec.BufLen]
		if f.Spec.Source == nil {
			engine.Pattern(z.bufs[i])
		}
	}
	err = runSend(ctx, f, func(rc syscall.RawConn) error {
		err := z.loop(ctx, rc)
		if err == nil || (f.Spec.Duration > 0 && errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil) {
			// A clean end: give the kernel a moment to hand back
			// what it still holds, so the facts are complete.
			f.Conn.SetWriteDeadline(time.Now().Add(drainWait))
			if ctx.Err() != nil {
				f.Conn.SetDeadline(time.Unix(1, 0)) // lost a race with the cancel
			}
			if derr := z.drain(rc); derr != nil && !errors.Is(derr, os.ErrDeadlineExceeded) && err == nil {
				err = derr
			}
		}
		return err
	})
	z.reap(rc) // whatever came in meanwhile
	z.publish()
	return err
}

// zcBuffers picks how many buffers to rotate: enough to fill the socket's
// send buffer with a few to spare, between 4 and 1024, at most 64 MiB.
func zcBuffers(f *engine.Flow) int {
	sndbuf := 4 << 20
	if sc, ok := f.Conn.(syscall.Conn); ok {
		if n, err := BufSize(sc, true); err == nil && n > 0 {
			sndbuf = n
		}
	}
	n := sndbuf/f.Spec.BufLen + 4
	n = min(max(n, 4), 1024)
	for n > 4 && n*f.Spec.BufLen > 64<<20 {
		n /= 2
	}
	return n
}

type zcSender struct {
	f     *engine.Flow
	facts *engine.Facts
	book  *zcBook
	bufs  [][]byte
	oob   []byte
	noted bool
}

func (z *zcSender) loop(ctx context.Context, rc syscall.RawConn) error {
	s := z.f.Spec
	pacer := engine.NewPacer(s.Rate)
	udp := s.Protocol == engine.UDP
	left := limit(s)
	for left != 0 {
		b, err := z.take(rc)
		if err != nil {
			return err
		}
		n := chunk(s.BufLen, left)
		if s.Source != nil {
			n, err = s.Source.Read(z.bufs[b][:n])
			if n == 0 {
				z.book.release(b)
				if err == nil {
					continue
				}
				if errors.Is(err, io.EOF) {
					return nil
				}
				return fmt.Errorf("read source: %w", err)
			}
		}
		if err := pacer.Wait(ctx, n); err != nil {
			z.book.release(b)
			return err
		}
		err = z.send(rc, b, z.bufs[b][:n], udp)
		z.book.release(b)
		if err != nil {
			return err
		}
		if left > 0 {
			left -= int64(n)
		}
	}
	return nil
}

// take returns a free buffer, waiting for completions when there is none.
func (z *zcSender) take(rc syscall.RawConn) (int, error) {
	if b, ok := z.book.take(); ok {
		return b, nil
	}
	var b int
	var ok bool
	var rerr error
	// EPOLLERR (a completion queued) wakes writers in Go's poller; a
	// reader would see "not pollable".
	err := rc.Write(func(fd uintptr) bool {
		rerr = z.reapFD(int(fd))
		b, ok = z.book.take()
		return ok || rerr != nil
	})
	if err != nil {
		return 0, err
	}
	return b, rerr
}

// send sends p, from buffer b, with as many MSG_ZEROCOPY calls as it takes.
func (z *zcSender) send(rc syscall.RawConn, b int, p []byte, udp bool) error {
	c := z.f.Stats
	for len(p) > 0 {
		var n int
		var werr error
		err := rc.Write(func(fd uintptr) bool {
			n, werr = unix.SendmsgN(int(fd), p, nil, nil, unix.MSG_ZEROCOPY)
			z.facts.Add(engine.FactSyscalls, 1)
			if werr == unix.EAGAIN || werr == unix.ENOBUFS {
				// Completions free memory (optmem, locked pages):
				// read them, and wait if none are ready.
				if z.reapFD(int(fd)) == nil && werr == unix.ENOBUFS && z.book.pending() == 0 {
					return true
				}
				return false
			}
			return true
		})
		if err != nil {
			return err
		}
		if werr == unix.ENOBUFS {
			c.AddError()
			if udp {
				time.Sleep(18 * time.Millisecond) // ttcp's pause for a full queue
				continue
			}
			return fmt.Errorf("send with MSG_ZEROCOPY: %w (no send in flight: raise net.core.optmem_max or RLIMIT_MEMLOCK)", os.NewSyscallError("sendmsg", werr))
		}
		if werr != nil {
			c.AddError()
			return os.NewSyscallError("sendmsg", werr)
		}
		dg := 0
		if udp {
			dg = 1
		}
		c.AddIO(n, dg)
		z.book.sent(b, n)
		p = p[n:]
	}
	return nil
}

// drain waits until every send has completed (or the deadline passes).
func (z *zcSender) drain(rc syscall.RawConn) error {
	if z.book.pending() == 0 {
		return nil
	}
	var rerr error
	err := rc.Write(func(fd uintptr) bool {
		rerr = z.reapFD(int(fd))
		return z.book.pending() == 0 || rerr != nil
	})
	return errors.Join(err, rerr)
}

func (z *zcSender) reap(rc syscall.RawConn) {
	rc.Control(func(fd uintptr) { z.reapFD(int(fd)) })
}

// reapFD reads every completion on the error queue without blocking.
func (z *zcSender) reapFD(fd int) error {
	for {
		_, oobn, _, _, err := unix.Recvmsg(fd, nil, z.oob, unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
		z.facts.Add(engine.FactSyscalls, 1)
		if err == unix.EAGAIN || err == unix.EINTR {
			return nil
		}
		if err != nil {
			return os.NewSyscallError("recvmsg MSG_ERRQUEUE", err)
		}
		msgs, err := unix.ParseSocketControlMessage(z.oob[:oobn])
		if err != nil {
			return fmt.Errorf("zerocopy: parse completion: %w", err)
		}
		for _, m := range msgs {
			if !(m.Header.Level == unix.SOL_IP && m.Header.Type == unix.IP_RECVERR) &&
				!(m.Header.Level == unix.SOL_IPV6 && m.Header.Type == unix.IPV6_RECVERR) {
				continue
			}
			if len(m.Data) < int(unsafe.Sizeof(unix.SockExtendedErr{})) {
				continue
			}
			ee := *(*unix.SockExtendedErr)(unsafe.Pointer(&m.Data[0]))
			if ee.Origin != unix.SO_EE_ORIGIN_ZEROCOPY {
				if ee.Errno != 0 {
					return fmt.Errorf("zerocopy: error queue: %w", syscall.Errno(ee.Errno))
				}
				continue
			}
			copied := ee.Code&unix.SO_EE_CODE_ZEROCOPY_COPIED != 0
			if copied && !z.noted {
				z.noted = true
				z.facts.Notef("the kernel copied zero-copy sends (SO_EE_CODE_ZEROCOPY_COPIED: loopback, veth or a device without scatter-gather)")
			}
			z.book.complete(ee.Info, ee.Data, copied)
		}
	}
}

func (z *zcSender) publish() {
	b := z.book
	z.facts.Set(engine.FactZeroCopySends, b.zc)
	z.facts.Set(engine.FactCopiedSends, b.copied)
	z.facts.Set(engine.FactBytesNotCopied, b.zcBytes)
	z.facts.Set(engine.FactPending, int64(b.pending()))
	if b.bogus > 0 {
		z.facts.Set("zerocopy_unknown_completions", b.bogus)
	}
}

// zcBook keeps the accounts of MSG_ZEROCOPY sends: which buffer each send
// (by its notification id) used, which buffers are free, and what the
// completions said. Ids are given by the kernel in order, one per
// successful send, starting at 0; completions name ranges of them.
type zcBook struct {
	refs     []int  // sends in flight per buffer
	held     []bool // taken and not yet released by the sender
	free     []int
	returned []int // times each buffer went back to the free list
	recs     []zcRec
	base     uint32 // id of recs[0]
	inflight int    // sends not yet completed

	zc, copied, zcBytes, bogus int64
}

type zcRec struct {
	buf, n int
	done   bool
}

func newZCBook(nbuf int) *zcBook {
	z := &zcBook{refs: make([]int, nbuf), held: make([]bool, nbuf), returned: make([]int, nbuf)}
	for i := nbuf - 1; i >= 0; i-- {
		z.free = append(z.free, i)
	}
	return z
}

func (z *zcBook) take() (int, bool) {
	if len(z.free) == 0 {
		return 0, false
	}
	b := z.free[len(z.free)-1]
	z.free = z.free[:len(z.free)-1]
	z.held[b] = true
	return b, true
}

func (z *zcBook) release(b int) {
	z.held[b] = false
	z.maybeFree(b)
}

func (z *zcBook) maybeFree(b int) {
	if !z.held[b] && z.refs[b] == 0 {
		z.free = append(z.free, b)
		z.returned[b]++
	}
}

func (z *zcBook) sent(b, n int) {
	z.recs = append(z.recs, zcRec{buf: b, n: n})
	z.refs[b]++
	z.inflight++
}

func (z *zcBook) pending() int { return z.inflight }

// complete accounts for the sends with ids lo through hi.
func (z *zcBook) complete(lo, hi uint32, copied bool) {
	count := hi - lo + 1 // ids wrap around at 2^32
	for k := uint32(0); k < count; k++ {
		if k > uint32(len(z.recs)) { // a range beyond anything sent
			z.bogus += int64(count - k)
			break
		}
		id := lo + k
		i := id - z.base
		if i >= uint32(len(z.recs)) || z.recs[i].done {
			z.bogus++
		} else {
			r := &z.recs[i]
			r.done = true
			if copied {
				z.copied++
			} else {
				z.zc++
				z.zcBytes += int64(r.n)
			}
			z.inflight--
			z.refs[r.buf]--
			z.maybeFree(r.buf)
		}
	}
	for len(z.recs) > 0 && z.recs[0].done {
		z.recs = z.recs[1:]
		z.base++
	}
}
