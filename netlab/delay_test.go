package netlab

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestOptionsCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		topo Topology
		opt  Options
		ok   bool
	}{
		{"direct", Direct, Options{RateMbit: 10}, true},
		{"delay needs Delayed", Direct, Options{Delay: time.Millisecond}, false},
		{"loss needs Delayed", Routed, Options{LossPct: 1}, false},
		{"delayed", Delayed, Options{Delay: 20 * time.Millisecond, LossPct: 1, RateMbit: 50}, true},
		{"delayed, nothing added", Delayed, Options{}, true},
		{"longest delay", Delayed, Options{Delay: MaxDelay}, true},
		{"negative delay", Delayed, Options{Delay: -time.Millisecond}, false},
		{"too long a delay", Delayed, Options{Delay: MaxDelay + 1}, false},
		{"negative loss", Delayed, Options{LossPct: -1}, false},
		{"loss over 100%", Delayed, Options{LossPct: 101}, false},
		{"negative rate", Delayed, Options{RateMbit: -1}, false},
		{"loss of data frames", Delayed, Options{LossPct: 1, LossMinBytes: 100}, true},
		{"loss from a negative size", Delayed, Options{LossPct: 1, LossMinBytes: -1}, false},
		{"loss from a size needs Delayed", Direct, Options{LossMinBytes: 100}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.opt.check(tc.topo); (err == nil) != tc.ok {
				t.Errorf("check(%v, %+v) = %v, want ok %v", tc.topo, tc.opt, err, tc.ok)
			}
		})
	}
}

// TestShaper drives the model of one direction with frames at given
// arrival times (ns) and sizes and compares what it decides.
func TestShaper(t *testing.T) {
	type frame struct {
		at   int64
		size int
	}
	type out struct {
		Due     int64
		Verdict verdict
	}
	const ms = int64(time.Millisecond)
	// A burst of 52 frames of 1 ms each at 10 Mbit/s, then one more 1 ms
	// later.
	var burst []frame
	var burstOut []out
	for i := range 52 {
		burst = append(burst, frame{0, 1250})
		if i < 51 {
			burstOut = append(burstOut, out{int64(i+1) * ms, pass})
		}
	}
	burst = append(burst, frame{ms, 1250})
	burstOut = append(burstOut, out{0, queueFull}, out{52 * ms, pass})
	for _, tc := range []struct {
		name   string
		opt    Options
		frames []frame
		want   []out
	}{{
		name:   "half the round trip each way",
		opt:    Options{Delay: 20 * time.Millisecond},
		frames: []frame{{0, 1514}, {0, 60}, {5 * ms, 1514}},
		want:   []out{{10 * ms, pass}, {10 * ms, pass}, {15 * ms, pass}},
	}, {
		// 1250 bytes take 1 ms at 10 Mbit/s: back-to-back frames leave
		// 1 ms apart, a frame after an idle gap goes at once.
		name:   "a bottleneck sends one frame after the other",
		opt:    Options{Delay: 2 * time.Millisecond, RateMbit: 10},
		frames: []frame{{0, 1250}, {0, 1250}, {0, 125}, {10 * ms, 1250}},
		want:   []out{{2 * ms, pass}, {3 * ms, pass}, {3*ms + ms/10, pass}, {12 * ms, pass}},
	}, {
		// The queue holds 50 ms: at 10 Mbit/s the 51st 1 ms frame of a
		// burst would wait 50 ms (taken), the 52nd 51 ms (dropped); once
		// the queue drains by a frame, the next is taken again.
		name:   "drop-tail after 50 ms of backlog",
		opt:    Options{RateMbit: 10},
		frames: burst,
		want:   burstOut,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newShaper(tc.opt, 0)
			var got []out
			for _, f := range tc.frames {
				due, v := s.admit(f.at, f.size)
				got = append(got, out{due, v})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// TestShaperLoss checks the loss draws: their rate, and that a seed
// repeats them.
func TestShaperLoss(t *testing.T) {
	const n = 200000
	draw := func(seed uint64) (dropped int, pattern []bool) {
		s := newShaper(Options{LossPct: 1, Seed: seed}, 0)
		for i := range n {
			_, v := s.admit(int64(i), 100)
			pattern = append(pattern, v == lost)
			if v == lost {
				dropped++
			}
		}
		return dropped, pattern
	}
	dropped, p1 := draw(7)
	// 1% of 200000 is 2000, with a standard deviation of 44.
	if dropped < 1800 || dropped > 2200 {
		t.Errorf("1%% loss lost %d of %d frames, want about 2000", dropped, n)
	}
	if _, p2 := draw(7); !cmp.Equal(p1, p2) {
		t.Errorf("the same seed lost other frames")
	}
	if _, p3 := draw(8); cmp.Equal(p1, p3) {
		t.Errorf("another seed lost the same frames")
	}
}

// TestShaperLossMinBytes: with LossMinBytes, frames shorter than it pass
// every draw, and the longer ones lose at LossPct.
func TestShaperLossMinBytes(t *testing.T) {
	s := newShaper(Options{LossPct: 50, LossMinBytes: 100, Seed: 3}, 0)
	short, long := 0, 0
	for i := range 20000 {
		size := 99
		if i%2 == 1 {
			size = 100
		}
		if _, v := s.admit(int64(i), size); v == lost {
			if size < 100 {
				short++
			} else {
				long++
			}
		}
	}
	if short != 0 {
		t.Errorf("%d frames of 99 bytes lost, want none (LossMinBytes 100)", short)
	}
	// 50% of 10000 is 5000, with a standard deviation of 50.
	if long < 4700 || long > 5300 {
		t.Errorf("%d of 10000 frames of 100 bytes lost, want about 5000", long)
	}
}
