package iouring

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/uring"
)

// Backend moves a flow's bytes through an io_uring of its own. The zero
// value sends and receives with plain operations, 8 per submission.
type Backend struct {
	batch     int // operations per submission (0: defaultBatch)
	zc        bool
	multishot bool
}

var (
	_ engine.Backend      = Backend{}
	_ engine.Configurable = Backend{}
)

const (
	defaultBatch = 8
	maxBatch     = 256
	provideGroup = 7
	// drainWait bounds the wait for cancelled operations at the end of a
	// flow: past it their buffers are left mapped (and noted).
	drainWait = 5 * time.Second
	// sendSlice bounds how long a time-limited send waits for a
	// completion before it asks the Sender whether its time is up: the
	// engine's send timeout slice, which SO_SNDTIMEO cannot give io_uring
	// operations.
	sendSlice = 50 * time.Millisecond

	// user_data: the kind in the top byte, an index below.
	udSend    = 1 << 56
	udRecv    = 2 << 56
	udProvide = 3 << 56
	udCancel  = 4 << 56
	udWatch   = 5 << 56
	udKind    = 0xff << 56
)

// Name implements engine.Backend.
func (Backend) Name() string { return "iouring" }

// Options implements engine.Configurable.
func (Backend) Options() []engine.Option {
	return []engine.Option{
		{Name: "batch", Kind: engine.Count, Default: fmt.Sprint(defaultBatch),
			Help: fmt.Sprintf("operations per io_uring_enter: buffers sent per submission, UDP receives in flight (at most %d)", maxBatch)},
		{Name: "zc", Kind: engine.Flag, Default: "off: IORING_OP_SEND copies",
			Help: "send with IORING_OP_SEND_ZC (Linux 6.0): the facts count sends the kernel sent from user memory and those it copied"},
		{Name: "multishot", Kind: engine.Flag, Default: "off: one IORING_OP_RECV per buffer",
			Help: "receive with one multishot IORING_OP_RECV into a group of provided buffers (Linux 6.0)"},
	}
}

// Configure implements engine.Configurable.
func (b Backend) Configure(o engine.Options) (engine.Backend, error) {
	n := o.Count("batch", defaultBatch)
	if n > maxBatch {
		return nil, fmt.Errorf("backend iouring option batch=%d: at most %d operations per submission", n, maxBatch)
	}
	return Backend{batch: n, zc: o.Flag("zc"), multishot: o.Flag("multishot")}, nil
}

func (b Backend) batchN() int {
	if b.batch > 0 {
		return b.batch
	}
	return defaultBatch
}

// Probe implements engine.Backend: set up a ring and ask the kernel for
// what the options need.
func (b Backend) Probe() error {
	r, err := newRing(4, 0)
	if err != nil {
		return err
	}
	defer r.Close()
	return b.check(r)
}

// newRing sets up a ring as uring.New does; a ring refused here (uring's
// errors.ErrUnsupported) is engine.ErrNotSupported, the backend's "not here".
func newRing(entries, cqEntries uint32) (*uring.Ring, error) {
	r, err := uring.New(entries, cqEntries)
	return r, engine.AsNotSupported(err)
}

// check says whether r's kernel has what b needs.
func (b Backend) check(r *uring.Ring) error {
	if r.Features()&uring.FeatExtArg == 0 {
		return fmt.Errorf("io_uring without IORING_FEAT_EXT_ARG (kernel older than 5.11): %w", engine.ErrNotSupported)
	}
	ops, err := r.Supported()
	if err != nil {
		return err
	}
	need := map[uint8]string{uring.OpSend: "IORING_OP_SEND", uring.OpRecv: "IORING_OP_RECV", uring.OpAsyncCancel: "IORING_OP_ASYNC_CANCEL"}
	if b.zc {
		need[uring.OpSendZC] = "IORING_OP_SEND_ZC (Linux 6.0)"
	}
	if b.multishot {
		need[uring.OpProvideBuffers] = "IORING_OP_PROVIDE_BUFFERS"
	}
	for op, name := range need {
		if !ops[op] {
			return fmt.Errorf("io_uring has no %s: %w", name, engine.ErrNotSupported)
		}
	}
	// The end of a flow cancels by descriptor (Linux 5.19): ask the
	// kernel to cancel whatever runs on the ring's own descriptor, which
	// is nothing (ENOENT) where it knows the flags, EINVAL where not.
	e := r.SQE()
	e.PrepCancelFD(r.FD(), udCancel)
	if err := r.Wait(time.Second); err != nil {
		return fmt.Errorf("io_uring cancel probe: %w", err)
	}
	if c, ok := r.CQE(); !ok || c.Res == -int32(unix.EINVAL) {
		return fmt.Errorf("io_uring cannot cancel by descriptor (kernel older than 5.19): %w", engine.ErrNotSupported)
	}
	return nil
}

// uflow is one flow on its ring.
type uflow struct {
	f        *engine.Flow
	r        *uring.Ring
	sock     int
	udp      bool
	inflight int // requests on our buffers whose last CQE has not come
	notifs   int // SEND_ZC buffers the kernel still holds (their sends done)
	arena    []byte
	err      error // no SQE could be had
	// watching: the poll for the socket's hang-up is armed (watch).
	watching bool
}

// open sets up the flow's ring and an arena of slots buffers of size
// bytes; cq asks for a completion queue of at least that many entries.
func (b Backend) open(f *engine.Flow, slots, size, cq int) (*uflow, error) {
	u := &uflow{f: f, sock: f.Sock.FD(), udp: f.Spec.Protocol == engine.UDP}
	entries := uint32(8)
	for int(entries) < slots+2 {
		entries *= 2
	}
	var err error
	if u.r, err = newRing(entries, uint32(max(cq, 2*int(entries)))); err != nil {
		return nil, err
	}
	if err := b.check(u.r); err != nil {
		u.r.Close()
		return nil, err
	}
	u.r.CountEnters(f.Facts.Counter(engine.FactSyscalls))
	if u.arena, err = unix.Mmap(-1, 0, roundPage(slots*size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); err != nil {
		u.r.Close()
		return nil, os.NewSyscallError("mmap", err)
	}
	u.watch()
	return u, nil
}

// watch arms a one-shot poll for POLLHUP on the socket. Run's shutdown
// raises it, which wakes the flow's wait also when no operation in
// flight would complete for it (a multishot UDP receive sees only
// EAGAIN and waits for more; a zero-copy send waits for notifications a
// shutdown does not bring). It holds no buffer of ours.
func (u *uflow) watch() {
	if e := u.sqe(); e != nil {
		e.PrepPollAdd(u.sock, unix.POLLHUP, udWatch)
		u.watching = true
	}
}

func roundPage(n int) int {
	pg := os.Getpagesize()
	return (max(n, 1) + pg - 1) / pg * pg
}

// close ends the flow's ring. The arena is unmapped only when no
// operation is in flight: a kernel that still holds a buffer address must
// find it mapped to us, never to whatever Go maps there next. (Pages a
// zero-copy send still references are pinned by the kernel; unmapping
// them is safe.)
func (u *uflow) close() {
	u.r.Close()
	if n := u.inflight + u.notifs; n > 0 {
		u.f.Facts.Set(engine.FactPending, int64(n))
	}
	if u.inflight == 0 {
		unix.Munmap(u.arena)
	} else {
		u.f.Facts.Notef("%d io_uring operations did not finish within %v of the end: their buffers are left mapped", u.inflight, drainWait)
	}
}

// sqe returns a free SQE, submitting what is queued when the queue is
// full, or nil (with u.err set) when the kernel takes none.
func (u *uflow) sqe() *uring.SQE {
	if e := u.r.SQE(); e != nil {
		return e
	}
	if err := u.r.Submit(); err != nil {
		u.err = err
		return nil
	}
	if e := u.r.SQE(); e != nil {
		return e
	}
	u.err = errors.New("io_uring: the submission queue stays full")
	return nil
}

// reap submits what is queued, blocks in io_uring_enter until a
// completion comes or timeout passes (timeout < 0: no bound), and hands
// every completion of an operation of the flow's to handle. It reports
// false when the timeout passed with nothing done.
//
// The watch's completion means the socket hung up: cancelled (the caller
// looks at f.Cancelled after every reap) or failed (the operations in
// flight fail too). Once it has fired, waits without bound are cut into
// slices, after which the caller looks at f.Cancelled again.
func (u *uflow) reap(timeout time.Duration, handle func(uring.CQE)) (bool, error) {
	sliced := timeout < 0 && !u.watching
	if sliced {
		timeout = sendSlice
	}
	err := u.r.Wait(timeout)
	if errors.Is(err, uring.ErrTimedOut) {
		return sliced, nil
	}
	if err != nil {
		return false, err
	}
	for c, ok := u.r.CQE(); ok; c, ok = u.r.CQE() {
		switch c.UserData & udKind {
		case udWatch:
			u.watching = false
		case udCancel:
			u.inflight--
		default:
			handle(c)
		}
	}
	return true, nil
}

// drain cancels everything in flight on the socket and reaps until it is
// all back (or drainWait passed), handing each completion to handle.
func (u *uflow) drain(handle func(uring.CQE)) {
	if u.inflight == 0 {
		return
	}
	if e := u.sqe(); e != nil {
		e.PrepCancelFD(u.sock, udCancel)
		u.inflight++
	}
	deadline := time.Now().Add(drainWait)
	for u.inflight > 0 {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		if _, err := u.reap(left, handle); err != nil {
			return
		}
	}
}

// errnoOf is the error of a failed operation's result.
func errnoOf(res int32) unix.Errno { return unix.Errno(-res) }

// ---- send ----

type chunk struct {
	p    []byte
	slot int
}

// Send implements engine.Backend: rounds of up to batch buffers, each
// round submitted at once (linked for TCP, so the stream keeps its order)
// and waited for before the next.
//
// The time limit: a send blocked on a full socket is an operation in
// flight with nothing to complete, and SO_SNDTIMEO does not reach it. So a
// time-limited send waits in slices (sendSlice, an io_uring_enter
// timeout); a slice with nothing done asks the Sender (Retry), which ends
// the send once its time is up; then the operations still in flight are
// cancelled, and what they had sent counted. A send blocks at most one
// slice past Spec.Duration.
func (b Backend) Send(ctx context.Context, f *engine.Flow) error {
	batch := b.batchN()
	bufLen := f.Spec.BufLen
	u, err := b.open(f, batch, bufLen, 0)
	if err != nil {
		return err
	}
	defer u.close()
	s := engine.NewSender(f)
	slots := make([][]byte, batch)
	for i := range slots {
		slots[i] = u.arena[i*bufLen : (i+1)*bufLen : (i+1)*bufLen]
		if f.Spec.Source == nil {
			engine.Pattern(slots[i])
		}
	}
	var zcSends, copiedSends, notCopied *atomic.Int64
	if b.zc {
		zcSends = f.Facts.Counter(engine.FactZeroCopySends)
		copiedSends = f.Facts.Counter(engine.FactCopiedSends)
		notCopied = f.Facts.Counter(engine.FactBytesNotCopied)
		f.Facts.Notef("sends with IORING_OP_SEND_ZC")
		defer func() {
			if copiedSends.Load() > 0 {
				f.Facts.Notef("the kernel copied zero-copy sends (loopback, veth or a device without scatter-gather)")
			}
		}()
	}
	msgFlags := uint32(unix.MSG_NOSIGNAL)
	if !u.udp {
		// A short TCP send would break the chain: the kernel retries
		// it until the whole buffer went (or the socket failed).
		msgFlags |= unix.MSG_WAITALL
	}
	// A time-limited send waits in slices; others block until a
	// completion (or the watch).
	timeout := time.Duration(-1)
	if f.Spec.Duration > 0 {
		timeout = sendSlice
	}
	dg := 0
	if u.udp {
		dg = 1
	}

	res := make([]int32, batch)
	handle := func(c uring.CQE) {
		i := int(c.UserData &^ udKind)
		switch {
		case c.Flags&uring.CqeFNotif != 0:
			u.notifs--
			if res[i] <= 0 {
				return // a failed send's notification
			}
			if uint32(c.Res)&uring.NotifUsageZCCopied != 0 {
				copiedSends.Add(1)
			} else {
				zcSends.Add(1)
				notCopied.Add(int64(res[i]))
			}
		default:
			res[i] = c.Res
			u.inflight--
			if c.Res > 0 {
				f.Stats.AddIO(int(c.Res), dg) // counted as it completes
			}
			if c.Flags&uring.CqeFMore != 0 {
				u.notifs++ // the buffer is the kernel's until the notification
			}
		}
	}

	var pending []chunk // what a round left to send again, in order
	round := make([]chunk, 0, batch)
	used := make([]bool, batch)
	for !f.Cancelled() {
		// The chunks of this round: what the last one left, then new
		// buffers in the free slots.
		round = append(round[:0], pending...)
		pending = pending[:0]
		clear(used)
		for _, c := range round {
			used[c.slot] = true
		}
		for slot := 0; slot < batch && len(round) < batch; slot++ {
			if used[slot] {
				continue
			}
			var p []byte
			if s.Fills() {
				if p, err = s.Next(slots[slot]); err != nil {
					return err
				}
			} else {
				n, err := s.Take(bufLen)
				if err != nil {
					return err
				}
				p = slots[slot][:n]
			}
			if len(p) == 0 {
				break
			}
			round = append(round, chunk{p: p, slot: slot})
		}
		if len(round) == 0 {
			return nil // the Sender says the send is over
		}
		s.Sent() // the round goes now; the next one is stamped afresh
		for i, c := range round {
			res[i] = -int32(unix.ECANCELED) // until its CQE says otherwise
			e := u.sqe()
			if e == nil {
				continue
			}
			e.PrepSend(u.sock, c.p, msgFlags, b.zc, udSend|uint64(i))
			if !u.udp && i < len(round)-1 {
				e.Flags |= uring.SqeIOLink
			}
			u.inflight++
		}

		// Wait for the round: every send, and every notification of a
		// zero-copy send (its buffer is reused next round).
		timeUp := false
		for (u.inflight > 0 || u.notifs > 0) && u.err == nil {
			if f.Cancelled() {
				break
			}
			got, err := u.reap(timeout, handle)
			if err != nil {
				u.drain(handle)
				return err
			}
			if got || f.Spec.Duration == 0 {
				continue
			}
			// A slice with nothing done: is the time up?
			again, err := s.Retry(engine.ErrTimeout)
			if again {
				continue
			}
			if err != nil {
				u.drain(handle)
				return err
			}
			timeUp = true
			break
		}
		stop := timeUp || f.Cancelled()
		if stop || u.err != nil {
			// Whatever is still in flight is cancelled; what it sent
			// before counts.
			u.drain(handle)
		}

		// Account in order. A short or failed send leaves its rest, and
		// the sends chained after it (cancelled), for the next round.
		var ferr error
		for i, c := range round {
			r := res[i]
			if r > 0 {
				if !u.udp && int(r) < len(c.p) && !stop && ferr == nil {
					pending = append(pending, chunk{p: c.p[r:], slot: c.slot})
				}
				continue
			}
			if stop || ferr != nil {
				continue // not sent, and not to be
			}
			switch {
			case r == 0:
				f.Stats.AddCall()
				pending = append(pending, c)
			case r == -int32(unix.ECANCELED):
				pending = append(pending, c)
			default:
				errno := errnoOf(r)
				again, rerr := s.Retry(errno)
				switch {
				case again:
					pending = append(pending, c)
				case rerr == nil:
					stop = true // the time limit ended the send
				case f.Cancelled():
					stop = true
				default:
					if errno != unix.ENOBUFS {
						f.Stats.AddError() // Retry counted its own
					}
					ferr = engine.IOErr("io_uring send", errno)
					if b.zc && errno == unix.EOPNOTSUPP {
						// Seen on 6.18 for accepted TCP sockets: the
						// kernel takes SEND_ZC only on sockets it marked
						// for it.
						ferr = fmt.Errorf("iouring[zc]: the kernel refuses IORING_OP_SEND_ZC on this socket (%w; it does so for accepted TCP sockets): use iouring without zc on this end", engine.ErrNotSupported)
					}
				}
			}
		}
		switch {
		case u.err != nil:
			return u.err
		case u.inflight > 0:
			return fmt.Errorf("io_uring: %d sends did not come back within %v of their cancel", u.inflight, drainWait)
		case ferr != nil:
			return ferr
		case stop:
			return nil
		}
	}
	return nil
}

// ---- receive ----

// Recv implements engine.Backend: one receive in flight for TCP (a stream
// stays in order), batch of them for UDP, or one multishot receive into
// provided buffers. The socket's receive timeout (SO_RCVTIMEO, which
// io_uring operations do not see) bounds each wait for a completion.
func (b Backend) Recv(ctx context.Context, f *engine.Flow) error {
	s := f.Spec
	udp := s.Protocol == engine.UDP
	depth := 1
	if udp {
		depth = b.batchN()
	}
	nbuf := depth
	if b.multishot {
		nbuf = max(b.batchN(), 16)
	}
	timeout, err := recvTimeout(f.Sock.FD())
	if err != nil {
		return err
	}
	u, err := b.open(f, nbuf, s.BufLen, 2*nbuf+16)
	if err != nil {
		return err
	}
	defer u.close()
	buf := func(i int) []byte { return u.arena[i*s.BufLen : (i+1)*s.BufLen : (i+1)*s.BufLen] }
	var left int64 = -1 // bytes still to receive (TCP with a byte limit)
	if s.Bytes > 0 && !udp {
		left = s.Bytes
	}

	// Arming: a plain receive per slot, or one multishot receive.
	arm := func(slot int) {
		e := u.sqe()
		if e == nil {
			return
		}
		if b.multishot {
			e.PrepRecvMultishot(u.sock, provideGroup, udRecv)
		} else {
			p := buf(slot)
			if left > 0 && left < int64(len(p)) {
				p = p[:left]
			}
			e.PrepRecv(u.sock, p, udRecv|uint64(slot))
		}
		u.inflight++
	}
	provide := func(first, n int) {
		e := u.sqe()
		if e == nil {
			return
		}
		e.PrepProvideBuffers(u.arena[first*s.BufLen:], n, s.BufLen, first, provideGroup, udProvide)
		u.inflight++
	}
	var rearms *atomic.Int64
	if b.multishot {
		rearms = f.Facts.Counter("multishot_rearms")
		provide(0, nbuf)
		arm(0)
		f.Facts.Notef("multishot receive into %d provided buffers of %d bytes", nbuf, s.BufLen)
	} else {
		for i := range depth {
			arm(i)
		}
	}

	done := false
	var ferr error
	handle := func(c uring.CQE) {
		kind := c.UserData & udKind
		more := c.Flags&uring.CqeFMore != 0
		if !more {
			u.inflight--
		}
		if kind != udRecv {
			if kind == udProvide && c.Res < 0 && ferr == nil && !done {
				ferr = os.NewSyscallError("io_uring provide buffers", errnoOf(c.Res))
			}
			return
		}
		slot := int(c.UserData &^ udKind)
		if b.multishot && c.Flags&uring.CqeFBuffer != 0 {
			slot = int(c.Flags >> uring.CqeBufferShift)
		}
		rearm := func() {
			if done || ferr != nil {
				return
			}
			if b.multishot {
				if c.Flags&uring.CqeFBuffer != 0 {
					provide(slot, 1)
				}
				if !more {
					arm(0)
				}
				return
			}
			arm(slot)
		}
		switch {
		case done || ferr != nil:
			return // after the end: not part of this flow
		case c.Res == -int32(unix.ECANCELED):
			return
		case c.Res == -int32(unix.ENOBUFS) && b.multishot:
			rearms.Add(1) // the provided buffers ran dry
			rearm()
			return
		case c.Res < 0 && f.Cancelled():
			done = true // woken by the shutdown
			return
		case c.Res < 0:
			f.Stats.AddError()
			ferr = engine.IOErr("io_uring recv", errnoOf(c.Res))
			return
		case c.Res == 0 && !udp, f.Cancelled():
			f.Stats.AddCall() // EOF (or the shutdown)
			done = true
			return
		case udp && int(c.Res) <= s.SentinelMax:
			f.Stats.AddCall()
			done = true
			return
		}
		p := buf(slot)[:c.Res]
		if left > 0 && int64(len(p)) > left {
			p = p[:left] // a multishot receive may read past the limit
		}
		if err := engine.Deliver(f, p, udp); err != nil {
			ferr = err
			return
		}
		if left > 0 {
			if left -= int64(len(p)); left == 0 {
				done = true
				return
			}
		}
		rearm()
	}
	for !done && ferr == nil && u.err == nil && !f.Cancelled() {
		got, err := u.reap(timeout, handle)
		if err != nil {
			ferr = err
			break
		}
		if !got && !f.Cancelled() {
			f.Stats.AddError()
			ferr = engine.IOErr("io_uring recv", unix.EAGAIN) // the socket's timeout
		}
	}
	done = true
	u.drain(handle)
	if ferr == nil {
		ferr = u.err
	}
	return ferr
}

// recvTimeout is the socket's receive timeout (SO_RCVTIMEO), -1 for none.
func recvTimeout(fd int) (time.Duration, error) {
	tv, err := unix.GetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO)
	if err != nil {
		return 0, os.NewSyscallError("getsockopt SO_RCVTIMEO", err)
	}
	if d := time.Duration(tv.Nano()); d > 0 {
		return d, nil
	}
	return -1, nil
}

// Footprint implements engine.Footprinter: a send holds a batch of
// buffers; a receive one (TCP), a batch (UDP), or the provided buffers of
// a multishot receive.
func (b Backend) Footprint(spec *engine.Spec, send bool) int64 {
	n := 1
	switch {
	case send, spec.Protocol == engine.UDP:
		n = b.batchN()
	}
	if !send && b.multishot {
		n = max(b.batchN(), 16)
	}
	return int64(n) * int64(max(spec.BufLen, 0))
}
