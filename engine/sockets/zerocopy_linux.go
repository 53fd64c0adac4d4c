package sockets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

// ZeroCopy sends with SO_ZEROCOPY and MSG_ZEROCOPY: the kernel sends from
// the user's pages instead of copying them, and says on the socket's error
// queue when it is done with each send and whether it had to copy after all
// (SO_EE_CODE_ZEROCOPY_COPIED: always on loopback and veth, where the data
// is delivered locally). A buffer is reused only after the completion of
// every send that used it. It only sends, TCP or UDP.
//
// The sends block on the flow's thread like write(2). Completions are read
// from the error queue without waiting (recvmsg with MSG_ERRQUEUE and
// MSG_DONTWAIT) whenever no buffer is free; when none has come yet, the
// flow waits for one in ppoll on the socket's POLLERR and the flow's
// eventfd (Flow.Wait), in slices that let a time limit end the send.
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
func (b ZeroCopy) Recv(context.Context, *engine.Flow) error { return engine.SendOnly(b.Name()) }

const (
	// drainWait bounds the wait for outstanding completions at the end of
	// a flow that was not cancelled.
	drainWait = 2 * time.Second
	// waitSlice bounds one wait for completions, so that a time-limited
	// send looks at its time limit this often while none comes.
	waitSlice = 50 * time.Millisecond
)

// RunsFree implements engine.Free: its sends go through the flow (the
// completions are read without blocking, and waited for in Flow.Wait).
func (ZeroCopy) RunsFree(send bool) bool { return send }

// Send implements engine.Backend.
func (b ZeroCopy) Send(ctx context.Context, f *engine.Flow) error {
	fd := f.Sock.FD()
	if err := enableZeroCopy(fd); err != nil {
		return err
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
	z := &zcSender{f: f, fd: fd, book: newZCBook(nbuf),
		syscalls:  f.Facts.Counter(engine.FactSyscalls),
		zc:        f.Facts.Counter(engine.FactZeroCopySends),
		copied:    f.Facts.Counter(engine.FactCopiedSends),
		notCopied: f.Facts.Counter(engine.FactBytesNotCopied),
	}
	z.bufs = make([][]byte, nbuf)
	for i := range z.bufs {
		z.bufs[i] = mem[i*stride : i*stride+f.Spec.BufLen : i*stride+f.Spec.BufLen]
		if f.Spec.Source == nil {
			engine.Pattern(z.bufs[i])
		}
	}
	err = z.loop(engine.NewSender(f))
	if err == nil && !f.Cancelled() {
		// A clean end (the limit, the time, the Source's end): give the
		// kernel a moment to hand back what it still holds, so that the
		// facts are complete.
		if derr := z.drain(drainWait); derr != nil && !errors.Is(derr, engine.ErrCancelled) {
			err = derr
		}
	}
	z.reap() // whatever came in meanwhile
	z.publish()
	f.Facts.Set(engine.FactPending, int64(z.book.pending()))
	if z.book.bogus > 0 {
		f.Facts.Set("zerocopy_unknown_completions", z.book.bogus)
	}
	return err
}

// zcBuffers picks how many buffers to rotate: enough to fill the socket's
// send buffer with a few to spare, between 4 and 1024, at most 64 MiB.
func zcBuffers(f *engine.Flow) int {
	sndbuf := 4 << 20
	if n, err := f.Sock.BufSize(true); err == nil && n > 0 {
		sndbuf = n
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
	fd    int
	book  *zcBook
	bufs  [][]byte
	oob   [512]byte
	dummy [1]byte // recvmsg's data buffer: with none, x/sys/unix asks the socket's type first
	noted bool

	syscalls, zc, copied, notCopied *atomic.Int64
}

func (z *zcSender) loop(s *engine.Sender) error {
	udp := z.f.Spec.Protocol == engine.UDP
	for {
		b, err := z.take(s)
		if err != nil || b < 0 {
			return err
		}
		var p []byte
		if s.Fills() {
			p, err = s.Next(z.bufs[b])
		} else {
			var n int
			n, err = s.Take(len(z.bufs[b]))
			p = z.bufs[b][:n]
		}
		if err != nil || len(p) == 0 {
			z.book.release(b)
			return err
		}
		end, err := z.send(s, b, p, udp)
		z.book.release(b)
		if end {
			return err
		}
	}
}

// take returns a free buffer, waiting for completions while there is
// none; -1 when the time limit ended the send meanwhile.
func (z *zcSender) take(s *engine.Sender) (int, error) {
	for {
		if b, ok := z.book.take(); ok {
			return b, nil
		}
		got, err := z.await(s)
		if err != nil || !got {
			return -1, err
		}
	}
}

// send sends p, from buffer b, with as many MSG_ZEROCOPY calls as it takes
// (a datagram: one), as one I/O operation. end says that the send is over:
// the time limit ended it, or err.
func (z *zcSender) send(s *engine.Sender, b int, p []byte, udp bool) (end bool, err error) {
	sent := 0
	for sent < len(p) {
		n, serr := z.f.Send(z.fd, p[sent:], unix.MSG_ZEROCOPY|unix.MSG_NOSIGNAL)
		z.syscalls.Add(1)
		if serr == nil {
			z.book.sent(b, n)
			sent += n
			if udp {
				break
			}
			continue
		}
		if serr == unix.ENOBUFS && z.book.pending() > 0 {
			// Completions free what the kernel ran out of (option
			// memory, locked pages): wait for some, send again.
			got, werr := z.await(s)
			if werr != nil || !got {
				end, err = true, werr
				break
			}
			continue
		}
		again, rerr := retry(z.f, s, "sendmsg MSG_ZEROCOPY", serr)
		if again {
			continue
		}
		if rerr != nil && serr == unix.ENOBUFS {
			rerr = fmt.Errorf("%w (no send in flight: raise net.core.optmem_max or RLIMIT_MEMLOCK)", rerr)
		}
		end, err = true, rerr
		break
	}
	if sent > 0 {
		dg := 0
		if udp {
			dg = 1
		}
		z.f.Stats.AddIO(sent, dg)
	}
	return end, err
}

// await reads completions, waiting for them when none is ready: true once
// some came, false when the time limit ended the send while none did.
func (z *zcSender) await(s *engine.Sender) (bool, error) {
	if got, err := z.reap(); err != nil || got {
		return got, err
	}
	for {
		got, err := z.wait(waitSlice)
		if err != nil || got {
			return got, err
		}
		// A slice without completions: the same question as a write
		// that timed out, whether time remains.
		if again, rerr := s.Retry(engine.ErrTimeout); !again && rerr == nil {
			return false, nil
		}
	}
}

// drain waits up to d until every send has completed.
func (z *zcSender) drain(d time.Duration) error {
	deadline := time.Now().Add(d)
	if _, err := z.reap(); err != nil {
		return err
	}
	for z.book.pending() > 0 {
		left := time.Until(deadline)
		if left <= 0 {
			return nil
		}
		if _, err := z.wait(left); err != nil {
			return err
		}
	}
	return nil
}

// wait waits up to d for completions in ppoll (the socket's POLLERR and
// the flow's eventfd) and reads them: it says whether any came.
func (z *zcSender) wait(d time.Duration) (bool, error) {
	rev, err := z.f.Wait(z.fd, unix.POLLERR, d)
	z.syscalls.Add(1)
	if err != nil || rev == 0 {
		return false, err
	}
	got, err := z.reap()
	if err != nil || got {
		return got, err
	}
	// Woken without a completion: the socket failed or closed.
	soerr, err := unix.GetsockoptInt(z.fd, unix.SOL_SOCKET, unix.SO_ERROR)
	z.syscalls.Add(1)
	if err == nil && soerr != 0 {
		return false, fmt.Errorf("zerocopy: waiting for completions: %w", syscall.Errno(soerr))
	}
	if rev&(unix.POLLHUP|unix.POLLNVAL) != 0 {
		return false, fmt.Errorf("zerocopy: the socket closed with %d sends in flight", z.book.pending())
	}
	return false, nil
}

// reap reads every completion on the error queue without waiting
// (MSG_DONTWAIT on the blocking socket) and says whether there was any.
func (z *zcSender) reap() (bool, error) {
	got := false
	defer func() {
		if got {
			z.publish()
		}
	}()
	for {
		_, oobn, _, _, err := unix.Recvmsg(z.fd, z.dummy[:], z.oob[:], unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
		z.syscalls.Add(1)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return got, nil
		case err != nil:
			return got, os.NewSyscallError("recvmsg MSG_ERRQUEUE", err)
		}
		got = true
		msgs, err := unix.ParseSocketControlMessage(z.oob[:oobn])
		if err != nil {
			return got, fmt.Errorf("zerocopy: parse completion: %w", err)
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
					return got, fmt.Errorf("zerocopy: error queue: %w", syscall.Errno(ee.Errno))
				}
				continue
			}
			copied := ee.Code&unix.SO_EE_CODE_ZEROCOPY_COPIED != 0
			if copied && !z.noted {
				z.noted = true
				z.f.Facts.Notef("the kernel copied zero-copy sends (SO_EE_CODE_ZEROCOPY_COPIED: loopback, veth or a device without scatter-gather)")
			}
			z.book.complete(ee.Info, ee.Data, copied)
		}
	}
}

// publish brings the facts up to date with the book.
func (z *zcSender) publish() {
	z.zc.Store(z.book.zc)
	z.copied.Store(z.book.copied)
	z.notCopied.Store(z.book.zcBytes)
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
