//go:build timing && linux

package control

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/internal/timingcheck"
)

// TestTimingRcvTimeoutReported: a receiving client that gets nothing for
// --rcv-timeout 500 ms (iperf3 -s sending one block, then nothing at
// 8 bit/s) gives up within 2 s of its test's start (TestClientRcvTimeout
// checks that it does, with iperf3's error).
func TestTimingRcvTimeoutReported(t *testing.T) {
	timingcheck.Check(t, timingcheck.Property{
		Name:  "--rcv-timeout 500 ms against iperf3 -s sending nothing: the client gives up after its start",
		Unit:  "s",
		Bound: "at most 2",
		Holds: func(m float64) bool { return m <= 2 },
		Measure: func(t *testing.T, run int) (float64, error) {
			port, _ := iperf3ServerArgs(t, "127.0.0.1")
			var start time.Time
			_, err := runClientErr(t, Config{Port: port, Reverse: true, Rate: 8, RateSet: true, BlockLen: 1024,
				Duration: 20 * time.Second, RcvTimeout: 500 * time.Millisecond, OnStart: func(*result.Result) { start = time.Now() }})
			end := time.Now()
			if !errors.Is(err, ErrNoData) || start.IsZero() {
				return 0, fmt.Errorf("err %v, want iperf3's idle timeout", err)
			}
			return end.Sub(start).Seconds(), nil
		},
	})
}

// TestTimingIntervalsEndWithTheTest (issue 11 item 5): the last interval
// of a timed test ends when the test stopped, not after the exchange of
// results: at most 0.5 s after its -t (TestClientIntervalsEndWithTheSummary
// checks that it ends with the summary, and not before -t).
func TestTimingIntervalsEndWithTheTest(t *testing.T) {
	_, bport, _ := blastServer(t, ServerConfig{})
	for _, tc := range intervalCases {
		if tc.cfg.Duration == 0 {
			continue
		}
		checkTiming(t, tc.name, timingcheck.Property{
			Name:  fmt.Sprintf("intervals %s: the last interval ends after -t %v", tc.name, tc.cfg.Duration),
			Unit:  "s",
			Bound: "at most 0.5",
			Holds: func(m float64) bool { return m <= 0.5 },
			Measure: func(t *testing.T, run int) (float64, error) {
				r, cfg := runIntervalCase(t, tc, bport)
				late := 0.0
				for _, si := range r.Intervals[len(r.Intervals)-1].Streams {
					late = max(late, si.End-cfg.Duration.Seconds())
				}
				return late, nil
			},
		})
	}
}
