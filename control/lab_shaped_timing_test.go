//go:build timing

package control

import (
	"context"
	"testing"
	"time"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/internal/timingcheck"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

// TestTimingShapedIntervals: on a link shaped to 100 Mbit/s both ways, no
// 1 s interval a blast client or server reports goes more than 2% above
// what the link carries, when the host gives the receiver's stack its
// time (TestLabShapedRates holds the summaries to 2% on any host).
func TestTimingShapedIntervals(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	shapeBoth(t, lab)
	port, rl := labServer(t, lab, ServerConfig{Interval: time.Second})
	n := 0
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"P4", Config{Parallel: 4}},
		{"reverse P2", Config{Reverse: true, Parallel: 2}},
		{"bidir", Config{Bidir: true}},
	} {
		checkTiming(t, tc.name, timingcheck.Property{
			Name:  "-t 3 " + tc.name + " through 100 Mbit/s: the highest 1 s interval, client or server, of the link's goodput",
			Runs:  3,
			Unit:  "%",
			Bound: "at most 102",
			Holds: func(m float64) bool { return m <= 102 },
			Measure: func(t *testing.T, run int) (float64, error) {
				cfg := tc.cfg
				cfg.Host, cfg.Port, cfg.Duration, cfg.Interval, cfg.NoNIC = lab.B.Addr4.String(), port, 3*time.Second, time.Second, true
				var r *result.Result
				if err := lab.A.Do(func() (err error) {
					r, err = Run(context.Background(), cfg)
					return err
				}); err != nil {
					return 0, err
				}
				n++
				s := rl.wait(t, n)[n-1]
				return 100 * max(maxIntervalRate(r), maxIntervalRate(s)) / shapedCeiling, nil
			},
		})
	}
}
