package control

import (
	"testing"
	"time"
)

// The ticker's schedule tiles a time-limited test: an interval every -i,
// the end sample at the test's end, and no interval that would close
// within a tenth of an interval of the end (the end closes it). Judged on
// the schedule itself: no clock runs.
func TestTickerSchedule(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	type step struct {
		tick float64 // the ticker closes an interval here (the last tick)
		next float64 // then wakes next at this time
		end  bool    // and that is the end sample
	}
	for _, tc := range []struct {
		name     string
		interval time.Duration
		endAt    float64 // 0: not time-limited
		udp      bool
		steps    []step
	}{
		{"3 s in 1 s intervals", time.Second, 3, false, []step{{0, 1, false}, {1, 2, false}, {2, 3, true}}},
		{"an end 50 ms after a tick: the tick is left to the end", time.Second, 2.05, false, []step{{0, 1, false}, {1, 2.05, true}}},
		{"an end 150 ms after a tick: both", time.Second, 2.15, false, []step{{1, 2, false}, {2, 2.15, true}}},
		{"a tick the host ran late, near the end", time.Second, 3, false, []step{{2.95, 3, true}}},
		{"no intervals: only the end", 0, 5, false, []step{{0, 5, true}}},
		{"not time-limited: intervals only", time.Second, 0, false, []step{{0, 1, false}, {7, 8, false}}},
		{"UDP: no end sample, no tick near the end", time.Second, 3, true, []step{{1, 2, false}, {2, 0, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &session{interval: tc.interval, udp: tc.udp, t0: t0, start: t0}
			if tc.endAt > 0 {
				s.endAt = at(tc.endAt)
			}
			for _, st := range tc.steps {
				s.lastTick = at(st.tick)
				next, end := s.nextTickLocked()
				want := time.Time{}
				if st.next > 0 {
					want = at(st.next)
				}
				if !next.Equal(want) || end != st.end {
					t.Errorf("after a tick at %.2f s: next %v (end %v), want %v (end %v)", st.tick, next.Sub(t0), end, want.Sub(t0), st.end)
				}
			}
		})
	}
	// A tick the host ran late inside the last tenth is not closed: the
	// end sample closes that interval.
	s := &session{interval: time.Second, t0: t0, start: t0, endAt: at(3)}
	for _, c := range []struct {
		now  float64
		near bool
	}{{2.89, false}, {2.91, true}, {3.2, true}} {
		if got := s.nearEndLocked(at(c.now)); got != c.near {
			t.Errorf("a tick at %.2f s near the end: %v, want %v", c.now, got, c.near)
		}
	}
	// Once the end sample is taken, the ticker is done.
	s.ended = true
	if next, _ := s.nextTickLocked(); !next.IsZero() {
		t.Errorf("after the end sample the ticker wakes at %v", next.Sub(t0))
	}
}
