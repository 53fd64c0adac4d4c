package netlab

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// MaxDelay bounds Options.Delay: a frame held longer than this is no
// network path worth emulating, and the delay line's queue is sized for
// shorter ones.
const MaxDelay = 10 * time.Second

// lineQueue is how much backlog the delay line's bottleneck holds, in
// time at Options.RateMbit, before it drops frames (drop-tail): 50 ms,
// like the tbf limit of the other topologies.
const lineQueue = 50 * time.Millisecond

// check rejects options that topo cannot honour.
func (o Options) check(topo Topology) error {
	if topo != Delayed {
		if o.Delay != 0 || o.LossPct != 0 || o.LossMinBytes != 0 {
			return fmt.Errorf("netlab: Delay, LossPct and LossMinBytes need the Delayed topology, not %v", topo)
		}
		return nil
	}
	switch {
	case o.Delay < 0 || o.Delay > MaxDelay:
		return fmt.Errorf("netlab: delay %v: give 0 to %v", o.Delay, MaxDelay)
	case !(o.LossPct >= 0 && o.LossPct <= 100): // NaN fails too
		return fmt.Errorf("netlab: loss %g%%: give 0 to 100", o.LossPct)
	case o.LossMinBytes < 0:
		return fmt.Errorf("netlab: loss from %d bytes: give 0 (every frame) or more", o.LossMinBytes)
	case o.RateMbit < 0:
		return fmt.Errorf("netlab: rate %d Mbit/s: give 0 (no limit) or more", o.RateMbit)
	}
	return nil
}

// verdict is what a shaper does with a frame.
type verdict int

const (
	pass      verdict = iota
	lost              // the random loss took it
	queueFull         // the bottleneck's queue had no room
)

// shaper is one direction of the delay line as a model, apart from the
// sockets: it decides, for a frame that arrived at now (nanoseconds on a
// monotonic clock), whether it passes and when it leaves. Frames leave in
// the order they arrived, so the due times it returns never decrease.
type shaper struct {
	oneWay  int64   // ns every frame is held
	lossP   float64 // probability that a frame is lost, 0 to 1
	lossMin int     // frames shorter than this (bytes) are never lost
	rng     *rand.Rand

	rateMbit int   // bottleneck rate (0: none)
	queue    int64 // ns of backlog the bottleneck holds
	busy     int64 // when the bottleneck has sent every frame it took
}

// newShaper builds the shaper of direction dir (0: A to B, 1: B to A).
func newShaper(o Options, dir uint64) *shaper {
	return &shaper{
		oneWay:   int64(o.Delay / 2),
		lossP:    o.LossPct / 100,
		lossMin:  o.LossMinBytes,
		rng:      rand.New(rand.NewPCG(o.Seed, dir)),
		rateMbit: o.RateMbit,
		queue:    int64(lineQueue),
	}
}

// admit decides on a frame of size bytes (Ethernet header included, no
// FCS) that arrived at now. A passing frame first waits for the bottleneck
// to send those before it, then takes size*8/rate to send, then is held
// for the one-way delay; due is when it leaves the line.
func (s *shaper) admit(now int64, size int) (due int64, v verdict) {
	if s.lossP > 0 && size >= s.lossMin && s.rng.Float64() < s.lossP {
		return 0, lost
	}
	if s.rateMbit <= 0 {
		return now + s.oneWay, pass
	}
	start := max(now, s.busy)
	if start-now > s.queue {
		return 0, queueFull
	}
	s.busy = start + int64(size)*8000/int64(s.rateMbit) // ns: bits / (Mbit/s) * 1000
	return s.busy + s.oneWay, pass
}

// LineCounts count what a direction of the delay line did with frames:
// those it passed, lost at random (Options.LossPct), dropped because the
// bottleneck's queue was full, because the line had not read them before
// its receive buffer filled (a line the host held up), as malformed, or because the next veth refused them; and those of the
// frames it read that carried no arrival time from the kernel (the
// line then takes the time it read them).
type LineCounts struct {
	Passed, Lost, QueueFull, RingFull, Bad, SendFailed, Unstamped int64
}

func (c LineCounts) String() string {
	return fmt.Sprintf("%d passed, %d lost (loss), %d dropped by the full queue, %d unread in its full receive buffer, %d malformed, %d failed to send, %d without an arrival time",
		c.Passed, c.Lost, c.QueueFull, c.RingFull, c.Bad, c.SendFailed, c.Unstamped)
}
