package enginetest

import (
	"testing"
	"time"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/timingcheck"
)

// CancelProperty is the timing property of b's cancels: the slowest of the
// suite's cancelled flows (CancelLatency) returns within Prompt. A
// backend's TestTimingCancel (make check-timing) checks it.
func CancelProperty(b engine.Backend, caps Caps, p Pairs) timingcheck.Property {
	name := b.Name()
	if caps.Options != "" {
		name += " (" + caps.Options + ")"
	}
	return timingcheck.Property{
		Name:  name + ": the slowest blocked flow returns after its cancel within",
		Unit:  "ms",
		Bound: "at most " + Prompt.String(),
		Holds: func(m float64) bool { return m <= float64(Prompt)/float64(time.Millisecond) },
		Measure: func(t *testing.T, run int) (float64, error) {
			var worst time.Duration
			for _, d := range CancelLatency(t, b, caps, p) {
				worst = max(worst, d)
			}
			return float64(worst) / float64(time.Millisecond), nil
		},
	}
}
