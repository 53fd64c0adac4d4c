package control

import (
	"testing"
	"time"

	"github.com/blastnet/blast/internal/clock"
)

// The longest stall runs from the last check that saw the count grow to
// the next one that did, with a check between that saw it stand still; a
// count that stood still before its first growth, or after its last, has
// no stall; a watch that ran late (no check between) sees none.
func TestStallTrack(t *testing.T) {
	start := clock.Epoch
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	for _, tc := range []struct {
		name   string
		checks []int  // ms of each check
		grew   []bool // what each check saw
		want   Stall
	}{
		{"still before the first growth and after the last", []int{100, 200, 300, 400, 500}, []bool{false, false, true, false, false}, Stall{}},
		{"one stall", []int{100, 200, 300, 400, 500, 600}, []bool{true, true, false, false, true, true}, Stall{Start: 0.2, Seconds: 0.3}},
		{"the longer of two", []int{100, 200, 300, 400, 500, 600, 700, 800}, []bool{true, false, true, false, false, false, true, true}, Stall{Start: 0.3, Seconds: 0.4}},
		{"a late watch", []int{100, 1500, 1600}, []bool{true, true, true}, Stall{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s stallTrack
			for i, ms := range tc.checks {
				s.see(tc.grew[i], at(ms), start)
			}
			if got := s.longest; got.Start < tc.want.Start-1e-9 || got.Start > tc.want.Start+1e-9 || got.Seconds < tc.want.Seconds-1e-9 || got.Seconds > tc.want.Seconds+1e-9 {
				t.Errorf("longest stall %+v, want %+v", got, tc.want)
			}
		})
	}
}
