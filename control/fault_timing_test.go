//go:build timing

package control

import (
	"fmt"
	"testing"
	"time"

	"github.com/blastnet/blast/internal/timingcheck"
)

// TestTimingFaultReported: how soon a client reports that the lab's link
// went down (TestFaultLinkDown checks what it reports). A client whose
// --snd-timeout or --rcv-timeout (1 s) watches for the fault reports it
// within 2 s of the link going down; one that nothing watches (it runs
// to its -t of 4 s) within 5 s of its test time's end: up to 1 s for its
// data to be acknowledged, 3 × StateTimeout (1 s) for the server's
// answer to TEST_END, and 1 s to spare.
func TestTimingFaultReported(t *testing.T) {
	for _, tc := range faultCases {
		bound, from := 2.0, "the link went down"
		if tc.timed {
			bound, from = 5.0, "its test time ended"
		}
		checkTiming(t, tc.name, timingcheck.Property{
			Name:  fmt.Sprintf("link down, %s: the client reports it after %s", tc.name, from),
			Unit:  "s",
			Bound: fmt.Sprintf("at most %g", bound),
			Holds: func(m float64) bool { return m <= bound },
			Measure: func(t *testing.T, run int) (float64, error) {
				r := runFault(t, tc, 4*time.Second)
				if tc.timed {
					return r.end.Sub(r.start.Add(r.testTime)).Seconds(), nil
				}
				return r.end.Sub(r.down).Seconds(), nil
			},
		})
	}
}
