//go:build timing

package agent

import (
	"context"
	"fmt"
	"testing"

	"github.com/blastnet/blast/internal/timingcheck"
)

// TestTimingAgentUDPRate: a UDP test an agent runs over loopback at
// 20 Mbit/s sends at that rate (within 10%), loss counted in.
func TestTimingAgentUDPRate(t *testing.T) {
	a, c := start(t, nil)
	const rate = 20_000_000
	timingcheck.Check(t, timingcheck.Property{
		Name:  "an agent's UDP test at 20 Mbit/s over loopback sends its rate",
		Runs:  5,
		Unit:  "% of the rate",
		Bound: "at least 90",
		Holds: func(m float64) bool { return m >= 90 },
		Measure: func(t *testing.T, run int) (float64, error) {
			r, err := c.Test(context.Background(), TestRequest{Host: "127.0.0.1", Port: dataPort(a), UDP: true, Rate: rate, Seconds: 1, Streams: 1, Len: 1000})
			if err != nil {
				return 0, err
			}
			if r.Err != "" || r.Seconds <= 0 {
				return 0, fmt.Errorf("UDP test: %+v", r)
			}
			return 100 * udpSent(r) / (rate / 8.0 * r.Seconds), nil
		},
	})
}
