package afxdp

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

// txPlan is what the senders of one flow (one per thread) share: the
// flow's engine.Sender, which applies the byte limit, the time limit and
// the pacing for all of them, and the sequence numbers. Every sender
// takes its datagrams from it under mu, so the total is the Sender's to
// the byte, however many threads send.
type txPlan struct {
	mu      sync.Mutex
	s       *engine.Sender
	next    uint64 // the next sequence number (1-based)
	stopped atomic.Bool

	full    *Template
	last    *Template // the shorter last datagram of a byte count, or nil
	payload int       // bytes of a full datagram's payload
	lastLen int
	stats   *engine.Counters
}

// errShortGrant is a grant the plan cannot build frames for; the setup
// makes it impossible (the byte limit's remainder has its template).
var errShortGrant = errors.New("afxdp: the sender granted a datagram shorter than the buffer length with no template for it")

// claim takes up to n datagrams from the Sender (waiting for them when
// paced) and numbers them. got is 0 when the send is over; short says
// that the last of them carries only lastLen bytes (the byte limit's
// remainder).
func (p *txPlan) claim(n int) (first uint64, got int, short bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped.Load() {
		return 0, 0, false, nil
	}
	bytes, err := p.s.Take(n * p.payload)
	if err != nil || bytes == 0 {
		return 0, 0, false, err
	}
	got = bytes / p.payload
	if r := bytes % p.payload; r != 0 {
		if p.last == nil || r != p.lastLen {
			return 0, 0, false, errShortGrant
		}
		got++
		short = true
	}
	first = p.next
	p.next += uint64(got)
	return first, got, short, nil
}

// stop makes every sender of the flow stop (one of them failed).
func (p *txPlan) stop() { p.stopped.Store(true) }

// txPool is the TX frames of one UMEM and its completion ring, shared by
// the senders on one queue (the owner socket's and those opened with
// OpenShared). A sender takes frames a batch at a time, under mu.
type txPool struct {
	mu       sync.Mutex
	comp     *ring[uint64]
	free     []uint64
	inFlight int // in the TX rings or the kernel, not yet completed
}

// newTxPool copies the template into every TX frame of owner's UMEM.
func newTxPool(owner *Socket, t *Template) *txPool {
	p := &txPool{comp: &owner.comp}
	fs := uint64(owner.cfg.FrameSize)
	for i := range owner.txN {
		addr := uint64(owner.rxN+i) * fs
		copy(owner.frame(addr, t.Len()), t.Frame)
		p.free = append(p.free, addr)
	}
	return p
}

// reapLocked takes finished frames back from the completion ring.
func (p *txPool) reapLocked() int {
	idx, n := p.comp.peek(p.comp.size)
	for i := range n {
		p.free = append(p.free, *p.comp.at(idx + i))
	}
	if n > 0 {
		p.comp.release(n)
		p.inFlight -= int(n)
	}
	return int(n)
}

// take moves up to want free frames (reaping completions first) to dst,
// counting them in flight.
func (p *txPool) take(dst []uint64, want int) ([]uint64, bool) {
	p.mu.Lock()
	reaped := p.reapLocked() > 0
	n := min(want, len(p.free))
	dst = append(dst, p.free[len(p.free)-n:]...)
	p.free = p.free[:len(p.free)-n]
	p.inFlight += n
	p.mu.Unlock()
	return dst, reaped
}

// give returns frames taken but not sent.
func (p *txPool) give(frames []uint64) {
	p.mu.Lock()
	p.free = append(p.free, frames...)
	p.inFlight -= len(frames)
	p.mu.Unlock()
}

// pending reaps and returns how many frames are still in flight.
func (p *txPool) pending() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reapLocked()
	return p.inFlight
}

// Waiting on a TX socket. AF_XDP has no call that blocks until frames
// complete, so a sender with no free frame spins a little (completions
// follow a copy-mode kick within microseconds), then waits in Flow.Wait
// for idleWait: ppoll on the socket, which in copy mode also drives the
// transmit, and on the flow's eventfd, which cancellation wakes.
const (
	idleSpins = 64
	idleWait  = 50 * time.Microsecond
	// drainMax bounds the wait, at the end, for the frames in flight.
	drainMax  = 2 * time.Second
	drainWait = 200 * time.Microsecond
)

// sender drives the TX ring of one socket, with frames from its queue's
// pool.
type sender struct {
	s      *Socket
	pool   *txPool
	plan   *txPlan
	batch  int      // frames taken from the pool at a time
	chunk  int      // datagrams taken from the Sender at a time
	frames []uint64 // taken from the pool, not yet sent
}

// newSender makes the sender of socket s. rate (bits per second, 0:
// unpaced) bounds a chunk to about a millisecond of datagrams, so a paced
// flow leaves in small bursts rather than a ring batch at a time.
func newSender(s *Socket, pool *txPool, plan *txPlan, batch int, rate float64) *sender {
	x := &sender{s: s, pool: pool, plan: plan, batch: min(batch, s.txN)}
	x.chunk = x.batch
	if rate > 0 {
		perMs := rate / 8 / float64(plan.payload) / 1000
		x.chunk = max(1, min(x.batch, int(perMs)))
	}
	x.frames = make([]uint64, 0, x.batch)
	return x
}

// txCounts are the flow's fact counters the senders add to, taken once.
type txCounts struct{ syscalls, kicks *atomic.Int64 }

// run sends until the Sender says the send is over, the flow is cancelled
// or another sender failed, then waits (at most drainMax, not after a
// cancel) for the kernel to finish the frames in flight, so that nothing
// sent later on the flow's socket (an end sentinel) overtakes them.
func (x *sender) run(f *engine.Flow, c txCounts) error {
	p := x.plan
	idle := 0
	var err error
	for !f.Cancelled() && !p.stopped.Load() {
		progress := false
		if len(x.frames) < x.batch {
			x.frames, progress = x.pool.take(x.frames, x.batch-len(x.frames))
		}
		if len(x.frames) > 0 {
			first, got, short, cerr := p.claim(min(len(x.frames), x.chunk))
			if cerr != nil {
				if !errors.Is(cerr, engine.ErrCancelled) {
					err = cerr
					p.stop()
				}
				break
			}
			if got == 0 {
				break // the send is over
			}
			x.send(first, got, short)
			progress = true
		}
		if kerr := x.kickIfNeeded(c); kerr != nil {
			err = kerr
			p.stop()
			break
		}
		if progress {
			idle = 0
			continue
		}
		if idle++; idle < idleSpins {
			continue
		}
		c.syscalls.Add(1)
		if _, werr := f.Wait(x.s.fd, 0, idleWait); werr != nil {
			if !errors.Is(werr, engine.ErrCancelled) {
				err = werr
				p.stop()
			}
			break
		}
	}
	x.pool.give(x.frames)
	x.frames = x.frames[:0]
	if err == nil {
		x.drain(f, c)
	}
	return err
}

// kickIfNeeded asks the kernel to send what the TX ring holds when it
// says it needs the call (always, in copy mode).
func (x *sender) kickIfNeeded(c txCounts) error {
	if x.s.txQueued() == 0 || !x.s.tx.needWakeup() {
		return nil
	}
	c.syscalls.Add(1)
	c.kicks.Add(1)
	return x.s.kick()
}

// drain waits for the frames in flight on this sender's queue.
func (x *sender) drain(f *engine.Flow, c txCounts) {
	stop := time.Now().Add(drainMax)
	for x.pool.pending() > 0 && time.Now().Before(stop) {
		if x.kickIfNeeded(c) != nil {
			return
		}
		c.syscalls.Add(1)
		if _, err := f.Wait(x.s.fd, 0, drainWait); err != nil {
			return
		}
	}
}

// send puts got datagrams, numbered from first, into the TX ring, the
// last of them the short one when short, and counts them as one I/O
// operation.
func (x *sender) send(first uint64, got int, short bool) {
	p := x.plan
	idx, n := x.s.tx.reserve(uint32(got)) // the ring holds every TX frame
	now := time.Now()
	sec, usec := uint32(now.Unix()), uint32(now.Nanosecond()/1000)
	bytes := 0
	frames := x.frames[len(x.frames)-int(n):]
	for i := range n {
		addr := frames[i]
		t, plen := p.full, p.payload
		if short && int(i) == got-1 {
			t, plen = p.last, p.lastLen
			copy(x.s.frame(addr, t.Len()), t.Frame) // the last frame of the flow: not reused
		}
		t.Patch(x.s.frame(addr, t.Len()), uint32(first+uint64(i)), sec, usec)
		*x.s.tx.at(idx + i) = unix.XDPDesc{Addr: addr, Len: uint32(t.Len())}
		bytes += plen
	}
	x.frames = x.frames[:len(x.frames)-int(n)]
	x.s.tx.submit()
	p.stats.AddIO(bytes, int(n))
}
