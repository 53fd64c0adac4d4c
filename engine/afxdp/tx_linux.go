package afxdp

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

// txPlan is what the senders of one flow (one per queue) share: the
// sequence numbers still to hand out and when to stop.
type txPlan struct {
	total    uint64 // datagrams to send (0: no count limit)
	next     atomic.Uint64
	deadline time.Time // zero: none
	full     *Template
	last     *Template // the shorter last datagram of a byte count, or nil
	payload  int       // bytes of a full datagram's payload
	lastLen  int
	stats    *engine.Counters
}

// claim hands out up to n sequence numbers (1-based); got is 0 when the
// count is used up.
func (p *txPlan) claim(n int) (first uint64, got int) {
	if p.total == 0 {
		return p.next.Add(uint64(n)) - uint64(n) + 1, n
	}
	start := p.next.Add(uint64(n)) - uint64(n)
	if start >= p.total {
		return 0, 0
	}
	return start + 1, int(min(uint64(n), p.total-start))
}

// bucket is a token bucket in payload bytes, taken from once per batch.
type bucket struct {
	rate   float64 // bytes per second; 0: unlimited
	burst  float64
	tokens float64
	last   time.Time
}

// take returns how many datagrams of size bytes (at most want, at least
// one) may go now, waiting for the tokens of the first one if need be.
func (b *bucket) take(done <-chan struct{}, want, size int) int {
	if b.rate <= 0 {
		return want
	}
	for {
		now := time.Now()
		if b.last.IsZero() {
			b.last = now
			b.tokens = float64(size) // the first datagram goes at once
		}
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
		if n := int(b.tokens / float64(size)); n > 0 {
			n = min(n, want)
			b.tokens -= float64(n * size)
			return n
		}
		wait := time.Duration((float64(size) - b.tokens) / b.rate * float64(time.Second))
		t := time.NewTimer(wait)
		select {
		case <-done:
			t.Stop()
			return 0
		case <-t.C:
		}
	}
}

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

// sender drives the TX ring of one socket, with frames from its queue's
// pool.
type sender struct {
	s      *Socket
	pool   *txPool
	plan   *txPlan
	batch  int
	bucket bucket
	frames []uint64 // taken from the pool, not yet sent
	kicks  int64
}

func newSender(s *Socket, pool *txPool, plan *txPlan, batch int, rate float64) *sender {
	x := &sender{s: s, pool: pool, plan: plan, batch: min(batch, s.txN)}
	x.frames = make([]uint64, 0, x.batch)
	x.bucket = bucket{rate: rate / 8, burst: float64(x.batch * plan.payload)}
	return x
}

// run sends until the plan is used up, the deadline passes or done is
// closed, then waits (briefly) for the kernel to finish what is in flight.
func (x *sender) run(done <-chan struct{}) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p := x.plan
	finished := false
	var idle int
	for !finished {
		progress := false
		if len(x.frames) < x.batch {
			x.frames, progress = x.pool.take(x.frames, x.batch-len(x.frames))
		}
		select {
		case <-done:
			finished = true
		default:
		}
		if !p.deadline.IsZero() && time.Now().After(p.deadline) {
			finished = true
		}
		if want := len(x.frames); want > 0 && !finished {
			n := x.bucket.take(done, want, p.payload)
			first, got := p.claim(n)
			if got == 0 {
				if n > 0 {
					finished = true
				}
			} else {
				x.send(first, got)
				progress = true
			}
		}
		if x.s.txQueued() > 0 && x.s.tx.needWakeup() {
			if err := x.s.kick(); err != nil {
				return err
			}
			x.kicks++
		}
		if !progress {
			if idle++; idle > 64 {
				runtime.Gosched()
			}
		} else {
			idle = 0
		}
	}
	x.pool.give(x.frames)
	x.frames = x.frames[:0]
	// Drain: the frames in flight are the kernel's until it completes them.
	stop := time.Now().Add(2 * time.Second)
	for x.pool.pending() > 0 && time.Now().Before(stop) {
		if x.s.txQueued() > 0 && x.s.tx.needWakeup() {
			x.s.kick()
			x.kicks++
		}
		unix.Poll([]unix.PollFd{{Fd: int32(x.s.fd), Events: unix.POLLOUT}}, 1)
	}
	return nil
}

// send puts got datagrams, numbered from first, into the TX ring.
func (x *sender) send(first uint64, got int) {
	p := x.plan
	idx, n := x.s.tx.reserve(uint32(got)) // the ring holds every TX frame
	now := time.Now()
	sec, usec := uint32(now.Unix()), uint32(now.Nanosecond()/1000)
	bytes := 0
	frames := x.frames[len(x.frames)-int(n):]
	for i := range n {
		addr := frames[i]
		seq := first + uint64(i)
		t, plen := p.full, p.payload
		if p.last != nil && seq == p.total {
			t, plen = p.last, p.lastLen
			copy(x.s.frame(addr, t.Len()), t.Frame) // the frame is not reused
		}
		t.Patch(x.s.frame(addr, t.Len()), uint32(seq), sec, usec)
		*x.s.tx.at(idx + i) = unix.XDPDesc{Addr: addr, Len: uint32(t.Len())}
		bytes += plen
	}
	x.frames = x.frames[:len(x.frames)-int(n)]
	x.s.tx.submit()
	p.stats.AddIO(bytes, int(n))
}
