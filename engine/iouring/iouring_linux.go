package sockets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

func init() { engine.Register(IOURing{}) }

// IOURing moves bytes through an io_uring of its own per flow, written on
// x/sys/unix: IORING_OP_SEND and IORING_OP_RECV, a batch of operations per
// io_uring_enter.
//
// TCP sends are chained (IOSQE_IO_LINK, MSG_WAITALL) so the stream keeps
// its order; a TCP receive has one receive in flight, UDP Batch of them.
// Options: Batch (operations per submission, default 8), ZeroCopy
// (IORING_OP_SEND_ZC: the result counts sends the kernel really sent from
// user memory and those it copied) and Multishot (one multishot receive
// into a group of provided buffers).
//
// Counters count one I/O call per operation; FactSyscalls counts the
// io_uring_enter calls. Buffers are an anonymous mapping, so a kernel still
// holding one after the flow never touches Go memory.
type IOURing struct{ opts engine.Options }

var (
	_ engine.Backend      = IOURing{}
	_ engine.Configurable = IOURing{}
)

const (
	uringDefaultBatch = 8
	uringMaxBatch     = 256
	uringProvideGroup = 7
	// uringDrainWait bounds the wait for cancelled operations at the end.
	uringDrainWait = 5 * time.Second

	// user_data: the kind in the top byte, an index below.
	udSend    = 1 << 56
	udRecv    = 2 << 56
	udProvide = 3 << 56
	udCancel  = 4 << 56
	udKind    = 0xff << 56
)

// Name implements engine.Backend.
func (IOURing) Name() string { return "iouring" }

// Configure implements engine.Configurable: batch, zc, multishot.
func (b IOURing) Configure(o engine.Options) (engine.Backend, error) {
	if err := engine.Refuse(b.Name(), o, engine.Options{Batch: o.Batch, ZeroCopy: o.ZeroCopy, Multishot: o.Multishot}); err != nil {
		return nil, err
	}
	if o.Batch < 0 || o.Batch > uringMaxBatch {
		return nil, fmt.Errorf("iouring: batch %d: must be between 1 and %d", o.Batch, uringMaxBatch)
	}
	return IOURing{opts: o}, nil
}

func (b IOURing) batch() int {
	if b.opts.Batch > 0 {
		return b.opts.Batch
	}
	return uringDefaultBatch
}

// Probe implements engine.Backend: set up a ring and ask which operations
// the kernel has.
func (b IOURing) Probe() error {
	r, err := newURing(4, 0)
	if err != nil {
		return err
	}
	defer r.close()
	return r.check(b.opts)
}

// check says whether r's kernel has what o needs.
func (r *uring) check(o engine.Options) error {
	if r.features&uringFeatExtArg == 0 {
		return fmt.Errorf("io_uring without IORING_FEAT_EXT_ARG (kernel older than 5.11): %w", engine.ErrNotSupported)
	}
	ops, err := r.ops()
	if err != nil {
		return err
	}
	need := map[uint8]string{uringOpSend: "IORING_OP_SEND", uringOpRecv: "IORING_OP_RECV", uringOpAsyncCancel: "IORING_OP_ASYNC_CANCEL"}
	if o.ZeroCopy {
		need[uringOpSendZC] = "IORING_OP_SEND_ZC (Linux 6.0)"
	}
	if o.Multishot {
		need[uringOpProvideBuffers] = "IORING_OP_PROVIDE_BUFFERS"
	}
	for op, name := range need {
		if !ops[op] {
			return fmt.Errorf("io_uring has no %s: %w", name, engine.ErrNotSupported)
		}
	}
	return nil
}

// uflow is one flow on its ring.
type uflow struct {
	f        *engine.Flow
	facts    *engine.Facts
	r        *uring
	sock     int
	udp      bool
	end      time.Time // Spec.Duration's end (zero: none)
	inflight int       // operations whose last CQE has not come
	notifs   int       // SEND_ZC buffers the kernel still holds (ops done)
	arena    []byte
	cancel   bool // a cancel of everything on sock has been issued
}

func (b IOURing) open(f *engine.Flow, slots, size, cq int) (*uflow, error) {
	rc, err := rawConn(f)
	if err != nil {
		return nil, err
	}
	u := &uflow{f: f, facts: engine.FactsOf(f), udp: f.Spec.Protocol == engine.UDP}
	rc.Control(func(fd uintptr) { u.sock = int(fd) })
	entries := uint32(8)
	for int(entries) < slots+2 {
		entries *= 2
	}
	if u.r, err = newURing(entries, uint32(max(cq, 2*int(entries)))); err != nil {
		return nil, err
	}
	if err := u.r.check(b.opts); err != nil {
		u.r.close()
		return nil, err
	}
	if u.arena, err = unix.Mmap(-1, 0, roundPage(slots*size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); err != nil {
		u.r.close()
		return nil, os.NewSyscallError("mmap", err)
	}
	if f.Spec.Duration > 0 {
		u.end = time.Now().Add(f.Spec.Duration)
	}
	return u, nil
}

// close ends the flow's ring. The arena is unmapped only when nothing is
// in flight: a kernel that still holds a buffer must find it mapped to us
// or nothing, never to whatever Go maps there next.
func (u *uflow) close() {
	u.facts.Add(engine.FactSyscalls, u.r.enters)
	u.r.enters = 0
	u.r.close()
	if u.notifs > 0 {
		u.facts.Set(engine.FactPending, int64(u.notifs))
	}
	if u.inflight == 0 {
		unix.Munmap(u.arena)
	} else {
		u.facts.Set(engine.FactPending, int64(u.inflight))
		u.facts.Notef("%d io_uring operations did not finish within %v of the end: their buffers are left mapped", u.inflight, uringDrainWait)
	}
}

// stopping reports whether the flow must end: cancelled, or its time up.
func (u *uflow) stopping(ctx context.Context) bool {
	return ctx.Err() != nil || (!u.end.IsZero() && !time.Now().Before(u.end))
}

// wait submits what is queued and waits a little for at least one CQE.
func (u *uflow) wait() error {
	d := uringDefaultWaitInterval
	if !u.end.IsZero() {
		d = min(d, max(time.Until(u.end), time.Millisecond))
	}
	return u.r.enter(1, d)
}

// sqe returns a free SQE, submitting what is queued when the SQ is full.
func (u *uflow) sqe() *uringSQE {
	if e := u.r.sqe(); e != nil {
		return e
	}
	u.r.enter(0, 0)
	if e := u.r.sqe(); e != nil {
		return e
	}
	return &uringSQE{} // only if the kernel took nothing: a lost SQE, noticed as a hang-free error below
}

// cancelAll asks the kernel to cancel every operation on the socket.
func (u *uflow) cancelAll() {
	if u.cancel {
		return
	}
	e := u.sqe()
	u.cancel = true
	e.opcode = uringOpAsyncCancel
	e.fd = int32(u.sock)
	e.opFlags = uringAsyncCancelAll | uringAsyncCancelFD
	e.userData = udCancel
	u.inflight++
}

// drain cancels what is in flight and reaps until it is all back, calling
// handle for each CQE.
func (u *uflow) drain(handle func(c uringCQE)) {
	deadline := time.Now().Add(uringDrainWait)
	for u.inflight > 0 && time.Now().Before(deadline) {
		u.cancelAll()
		if err := u.r.enter(1, uringDefaultWaitInterval); err != nil {
			return
		}
		for {
			c, ok := u.r.cqe()
			if !ok {
				break
			}
			handle(c)
		}
	}
}

// settle waits a little for zero-copy notifications after a timed end,
// so the counts of zero-copy and copied sends are complete.
func (u *uflow) settle(handle func(c uringCQE)) {
	deadline := time.Now().Add(time.Second)
	for u.notifs > 0 && time.Now().Before(deadline) {
		if u.r.enter(1, uringDefaultWaitInterval) != nil {
			return
		}
		for {
			c, ok := u.r.cqe()
			if !ok {
				break
			}
			handle(c)
		}
	}
}

// ---- send ----

type uchunk struct {
	p    []byte
	slot int
}

// Send implements engine.Backend.
func (b IOURing) Send(ctx context.Context, f *engine.Flow) error {
	batch := b.batch()
	u, err := b.open(f, batch, f.Spec.BufLen, 0)
	if err != nil {
		return err
	}
	defer u.close()
	s := f.Spec
	slots := make([][]byte, batch)
	for i := range slots {
		slots[i] = u.arena[i*s.BufLen : (i+1)*s.BufLen : (i+1)*s.BufLen]
		if s.Source == nil {
			engine.Pattern(slots[i])
		}
	}
	op := uint8(uringOpSend)
	if b.opts.ZeroCopy {
		op = uringOpSendZC
		u.facts.Notef("sends with IORING_OP_SEND_ZC")
	}
	var zc, copied, zcBytes int64
	defer func() {
		if b.opts.ZeroCopy {
			u.facts.Set(engine.FactZeroCopySends, zc)
			u.facts.Set(engine.FactCopiedSends, copied)
			u.facts.Set(engine.FactBytesNotCopied, zcBytes)
			if copied > 0 {
				u.facts.Notef("the kernel copied zero-copy sends (loopback, veth or a device without scatter-gather)")
			}
		}
	}()

	pacer := engine.NewPacer(s.Rate)
	left := limit(s)
	eof := false
	var pending []uchunk // remainders of short sends come first
	round := make([]uchunk, 0, batch)
	res := make([]int32, batch)
	for {
		if u.stopping(ctx) {
			break
		}
		// The chunks of this round.
		round = round[:0]
		round = append(round, pending...)
		pending = pending[:0]
		used := make([]bool, batch)
		for _, c := range round {
			used[c.slot] = true
		}
		for slot := 0; slot < batch && len(round) < batch && !eof && left != 0; slot++ {
			if used[slot] {
				continue
			}
			n := chunk(s.BufLen, left)
			if s.Source != nil {
				k, err := s.Source.Read(slots[slot][:n])
				if k == 0 {
					if err == nil {
						slot--
						continue
					}
					if errors.Is(err, io.EOF) {
						eof = true
						break
					}
					return fmt.Errorf("read source: %w", err)
				}
				n = k
			}
			if err := pacer.Wait(ctx, n); err != nil {
				break
			}
			round = append(round, uchunk{p: slots[slot][:n], slot: slot})
			if left > 0 {
				left -= int64(n)
			}
		}
		if len(round) == 0 {
			break
		}
		// Submit: chained for TCP, so the stream keeps its order.
		for i, c := range round {
			e := u.sqe()
			e.opcode = op
			e.fd = int32(u.sock)
			e.addr = uint64(uintptrOf(c.p))
			e.len = uint32(len(c.p))
			e.userData = udSend | uint64(i)
			if op == uringOpSendZC {
				e.ioprio = uringSendZCReportUsage
			}
			if !u.udp {
				e.opFlags = unix.MSG_WAITALL
				if i < len(round)-1 {
					e.flags = uringSqeIOLink
				}
			}
			res[i] = 0
			u.inflight++
		}
		handle := func(c uringCQE) {
			i := int(c.userData &^ udKind)
			switch {
			case c.userData&udKind == udCancel:
				u.inflight--
			case c.flags&uringCqeFNotif != 0:
				u.notifs--
				if uint32(c.res)&uringNotifUsageZCCopied != 0 {
					copied++
				} else {
					zc++
					zcBytes += int64(res[i])
				}
			default:
				res[i] = c.res
				u.inflight--
				if c.flags&uringCqeFMore != 0 {
					u.notifs++ // the buffer is reusable at the notification
				}
			}
		}
		for u.inflight > 0 || u.notifs > 0 {
			if u.stopping(ctx) {
				// The kernel holds pages of a zero-copy send by
				// reference: our buffers may go once the operations
				// are done, notified or not.
				u.drain(handle)
				if ctx.Err() == nil {
					u.settle(handle)
				}
				break
			}
			if err := u.wait(); err != nil {
				return err
			}
			for {
				c, ok := u.r.cqe()
				if !ok {
					break
				}
				handle(c)
			}
		}
		// Account in order; a short or failed send leaves its rest and
		// the chunks after it (cancelled) for the next round.
		var ferr error
		for i, c := range round {
			r := res[i]
			if ferr != nil || r == -int32(unix.ECANCELED) {
				pending = append(pending, c)
				continue
			}
			if r < 0 {
				f.Stats.AddError()
				if u.udp && r == -int32(unix.ENOBUFS) {
					pending = append(pending, c)
					time.Sleep(18 * time.Millisecond)
					continue
				}
				ferr = os.NewSyscallError("io_uring send", syscall.Errno(-r))
				if op == uringOpSendZC && r == -int32(unix.EOPNOTSUPP) {
					// Seen on 6.18 for accepted TCP sockets: the kernel
					// takes SEND_ZC only on sockets it marked for it.
					ferr = fmt.Errorf("iouring[zc]: the kernel refuses IORING_OP_SEND_ZC on this socket (%w; it does so for accepted TCP sockets): use iouring without zc on this end", engine.ErrNotSupported)
				}
				continue
			}
			if r == 0 {
				f.Stats.AddCall()
			} else {
				dg := 0
				if u.udp {
					dg = 1
				}
				f.Stats.AddIO(int(r), dg)
			}
			if int(r) < len(c.p) {
				pending = append(pending, uchunk{p: c.p[r:], slot: c.slot})
			}
		}
		if u.inflight > 0 {
			break // the drain timed out
		}
		if ferr != nil {
			return ferr
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return nil
}

// ---- receive ----

// Recv implements engine.Backend.
func (b IOURing) Recv(ctx context.Context, f *engine.Flow) error {
	s := f.Spec
	depth := 1 // one receive at a time keeps a stream in order
	if s.Protocol == engine.UDP {
		depth = b.batch()
	}
	nbuf := depth
	if b.opts.Multishot {
		nbuf = max(b.batch(), 16)
	}
	u, err := b.open(f, nbuf, s.BufLen, 2*nbuf+16)
	if err != nil {
		return err
	}
	defer u.close()
	buf := func(i int) []byte { return u.arena[i*s.BufLen : (i+1)*s.BufLen] }

	// Arming: a plain receive per slot, or one multishot receive.
	arm := func(slot int) {
		e := u.sqe()
		e.opcode = uringOpRecv
		e.fd = int32(u.sock)
		e.userData = udRecv | uint64(slot)
		if b.opts.Multishot {
			e.ioprio = uringRecvMultishot
			e.flags = uringSqeBufferSelect
			e.bufGroup = uringProvideGroup
		} else {
			p := buf(slot)
			e.addr = uint64(uintptrOf(p))
			e.len = uint32(len(p))
		}
		u.inflight++
	}
	provide := func(first, n int) {
		e := u.sqe()
		e.opcode = uringOpProvideBuffers
		e.fd = int32(n)
		e.addr = uint64(uintptrOf(buf(first)))
		e.len = uint32(s.BufLen)
		e.off = uint64(first)
		e.bufGroup = uringProvideGroup
		e.userData = udProvide
		u.inflight++
	}
	if b.opts.Multishot {
		provide(0, nbuf)
		arm(0)
		u.facts.Notef("multishot receive into %d provided buffers of %d bytes", nbuf, s.BufLen)
	} else {
		for i := range depth {
			arm(i)
		}
	}

	left := limit(s)
	done := false
	var ferr error
	handle := func(c uringCQE) {
		kind := c.userData & udKind
		more := c.flags&uringCqeFMore != 0
		if !more {
			u.inflight--
		}
		if kind != udRecv {
			if kind == udProvide && c.res < 0 && ferr == nil && !done {
				ferr = os.NewSyscallError("io_uring provide buffers", syscall.Errno(-c.res))
			}
			return
		}
		slot := int(c.userData &^ udKind)
		if b.opts.Multishot && c.flags&uringCqeFBuffer != 0 {
			slot = int(c.flags >> uringBufShift)
		}
		rearm := func() {
			if done || ferr != nil {
				return
			}
			if b.opts.Multishot {
				if c.flags&uringCqeFBuffer != 0 {
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
		case done:
			return // after the end: not part of this flow
		case c.res == -int32(unix.ECANCELED):
			return
		case c.res == -int32(unix.ENOBUFS) && b.opts.Multishot:
			u.facts.Add("multishot_rearms", 1)
			rearm()
			return
		case c.res < 0:
			f.Stats.AddError()
			ferr = os.NewSyscallError("io_uring recv", syscall.Errno(-c.res))
			return
		case c.res == 0 && !u.udp:
			f.Stats.AddCall() // EOF
			done = true
			return
		case u.udp && int(c.res) <= s.SentinelMax:
			f.Stats.AddCall()
			done = true
			return
		}
		dg := 0
		if u.udp {
			dg = 1
		}
		p := buf(slot)[:c.res]
		f.Stats.AddIO(len(p), dg)
		if err := consume(f, p); err != nil {
			ferr = err
			return
		}
		if left > 0 {
			left = max(left-int64(len(p)), 0)
			if left == 0 {
				done = true
				return
			}
		}
		rearm()
	}
	for !done && ferr == nil {
		if ctx.Err() != nil {
			break
		}
		if err := u.wait(); err != nil {
			ferr = err
			break
		}
		for {
			c, ok := u.r.cqe()
			if !ok {
				break
			}
			handle(c)
		}
	}
	done = true
	u.drain(handle)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return ferr
}
