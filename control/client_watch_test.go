package control

import (
	"testing"
	"time"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/internal/clock"
)

// The longest stall runs from the last check that saw the count grow to
// the next one that did, with a check between that saw it stand still; a
// count that stood still before its first growth, or after its last, has
// no stall, unless a time-limited test's time ran out while it stood
// still (timeUp); a watch that ran late (no check between) sees none.
func TestStallTrack(t *testing.T) {
	start := clock.Epoch
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	for _, tc := range []struct {
		name   string
		checks []int  // ms of each check
		grew   []bool // what each check saw
		want   result.Stall
		timeUp bool // the test's time ran out at the last check
	}{
		{"still before the first growth and after the last", []int{100, 200, 300, 400, 500}, []bool{false, false, true, false, false}, result.Stall{}, false},
		{"one stall", []int{100, 200, 300, 400, 500, 600}, []bool{true, true, false, false, true, true}, result.Stall{Start: 0.2, Seconds: 0.3}, false},
		{"the longer of two", []int{100, 200, 300, 400, 500, 600, 700, 800}, []bool{true, false, true, false, false, false, true, true}, result.Stall{Start: 0.3, Seconds: 0.4}, false},
		{"a late watch", []int{100, 1500, 1600}, []bool{true, true, true}, result.Stall{}, false},
		// A time-limited test's time ran out at 1500 ms (the last
		// check): its count stood still from 300 ms to the end.
		{"still to the end of the time", []int{100, 200, 300, 400, 500, 1500}, []bool{true, true, true, false, false, false}, result.Stall{Start: 0.3, Seconds: 1.2}, true},
		{"the time ran out just after a growth", []int{100, 200, 1500}, []bool{true, true, true}, result.Stall{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s stallTrack
			for i, ms := range tc.checks {
				s.see(tc.grew[i], at(ms), start)
			}
			if tc.timeUp {
				s.timeUp(at(tc.checks[len(tc.checks)-1]), start)
			}
			if got := s.longest; got.Start < tc.want.Start-1e-9 || got.Start > tc.want.Start+1e-9 || got.Seconds < tc.want.Seconds-1e-9 || got.Seconds > tc.want.Seconds+1e-9 {
				t.Errorf("longest stall %+v, want %+v", got, tc.want)
			}
		})
	}
}
