package afxdp

import (
	"runtime"
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

// sender drives the TX and completion rings of one socket.
type sender struct {
	s        *Socket
	plan     *txPlan
	batch    int
	bucket   bucket
	free     []uint64
	inFlight int
	kicks    int64
	pending  int // in flight when the flow ended
}

func newSender(s *Socket, plan *txPlan, batch int, rate float64) *sender {
	x := &sender{s: s, plan: plan, batch: min(batch, s.txN)}
	fs := uint64(s.cfg.FrameSize)
	for i := range s.txN {
		addr := uint64(s.rxN+i) * fs
		copy(s.frame(addr, plan.full.Len()), plan.full.Frame)
		x.free = append(x.free, addr)
	}
	x.bucket = bucket{rate: rate / 8, burst: float64(x.batch * plan.payload)}
	return x
}

// reap takes finished TX frames back from the completion ring.
func (x *sender) reap() int {
	idx, n := x.s.comp.peek(uint32(x.s.txN))
	for i := range n {
		x.free = append(x.free, *x.s.comp.at(idx + i))
	}
	if n > 0 {
		x.s.comp.release(n)
		x.inFlight -= int(n)
	}
	return int(n)
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
		progress := x.reap() > 0
		select {
		case <-done:
			finished = true
		default:
		}
		if !p.deadline.IsZero() && time.Now().After(p.deadline) {
			finished = true
		}
		if want := min(x.batch, len(x.free)); want > 0 && !finished {
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
	// Drain: the frames in flight are the kernel's until it completes them.
	stop := time.Now().Add(2 * time.Second)
	for x.inFlight > 0 && time.Now().Before(stop) {
		if x.reap() == 0 {
			if x.s.txQueued() > 0 && x.s.tx.needWakeup() {
				x.s.kick()
				x.kicks++
			}
			unix.Poll([]unix.PollFd{{Fd: int32(x.s.fd), Events: unix.POLLOUT}}, 1)
		}
	}
	x.pending = x.inFlight
	return nil
}

// send puts got datagrams, numbered from first, into the TX ring.
func (x *sender) send(first uint64, got int) {
	p := x.plan
	idx, n := x.s.tx.reserve(uint32(got)) // the ring holds every TX frame
	now := time.Now()
	sec, usec := uint32(now.Unix()), uint32(now.Nanosecond()/1000)
	bytes := 0
	for i := range n {
		addr := x.free[len(x.free)-1]
		x.free = x.free[:len(x.free)-1]
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
	x.s.tx.submit()
	x.inFlight += int(n)
	p.stats.AddIO(bytes, int(n))
}
