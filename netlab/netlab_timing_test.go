//go:build timing && linux

package netlab_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/blastnet/blast/internal/timingcheck"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

// TestTimingDelayedRoundTrip: the round trip across a 20 ms delay line
// (blast lat over TCP) has its p50 within 10% of 20 ms.
func TestTimingDelayedRoundTrip(t *testing.T) {
	const delay = 20 * time.Millisecond
	lab := labtest.New(t, netlab.Delayed, netlab.Options{Delay: delay})
	timingcheck.Check(t, timingcheck.Property{
		Name:  "the p50 round trip across a 20 ms delay line is within 10% of 20 ms",
		Runs:  5,
		Unit:  "% off 20 ms",
		Bound: "at most 10",
		Holds: func(m float64) bool { return m <= 10 },
		Measure: func(t *testing.T, run int) (float64, error) {
			doc := lat(t, lab, lab.B.Addr4.String(), "-n", "50", "--warmup", "3")
			if doc.RoundTrips != 50 {
				return 0, fmt.Errorf("%d round trips of 50", doc.RoundTrips)
			}
			d := time.Duration(doc.RTT.P50) - delay
			return 100 * d.Abs().Seconds() / delay.Seconds(), nil
		},
	})
}

// TestTimingDelayedRate: TCP through the delay line's 50 Mbit/s and
// 20 ms fills it: at least 40 Mbit/s of goodput (at most 47.8 fit).
func TestTimingDelayedRate(t *testing.T) {
	lab := labtest.New(t, netlab.Delayed, netlab.Options{Delay: 20 * time.Millisecond, RateMbit: 50})
	timingcheck.Check(t, timingcheck.Property{
		Name:  "TCP through a 50 Mbit/s, 20 ms delay line gets close to its rate",
		Runs:  3,
		Unit:  "Mbit/s",
		Bound: "at least 40",
		Holds: func(m float64) bool { return m >= 40 },
		Measure: func(t *testing.T, run int) (float64, error) {
			got, _ := delayedRate(t, lab, "3")
			return got, nil
		},
	})
}

// TestTimingBridgedShape: with one host of three limited to 100 Mbit/s,
// a transfer between the other two runs far faster (over 300 Mbit/s), and
// so does one to the host once the limit is removed.
func TestTimingBridgedShape(t *testing.T) {
	lab := labtest.NewBridged(t, 3, netlab.BridgeOptions{})
	a, b, c := lab.Hosts[0], lab.Hosts[1], lab.Hosts[2]
	for i, limit := range []int{100, 0} {
		if err := lab.Shape(2, limit); err != nil {
			t.Fatal(err)
		}
		dst := b
		if limit == 0 {
			dst = c
		}
		timingcheck.Check(t, timingcheck.Property{
			Name:  "an unlimited transfer on a bridge with a host limited to 100 Mbit/s (step " + strconv.Itoa(i+1) + ": to " + dst.Name + ")",
			Runs:  3,
			Unit:  "Mbit/s",
			Bound: "over 300",
			Holds: func(m float64) bool { return m > 300 },
			Measure: func(t *testing.T, run int) (float64, error) {
				return rate(t, a, dst, dst.Addr4, time.Second), nil
			},
		})
	}
}
