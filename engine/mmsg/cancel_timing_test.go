//go:build timing && linux

package mmsg_test

import (
	"testing"
	"time"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/engine/enginetest"
	"github.com/blastnet/blast/engine/mmsg"
	"github.com/blastnet/blast/internal/timingcheck"
)

// TestTimingCancel: a flow blocked in a system call (the suite's cancel
// checks) returns promptly once its context is cancelled, woken by the
// socket's shutdown or the flow's eventfd, not at a timeout slice. The
// unit tests want it back with context.Canceled within their hang bound;
// how soon is judged here.
func TestTimingCancel(t *testing.T) {
	for _, c := range []struct {
		b    engine.Backend
		caps enginetest.Caps
	}{
		{mmsg.Backend{}, enginetest.Caps{UDPRecv: true}},
		{mmsg.Backend{}, enginetest.Caps{UDPRecv: true, Options: "gro"}},
	} {
		t.Run(c.b.Name()+"/"+c.caps.Options, func(t *testing.T) {
			timingcheck.Check(t, cancelProperty(c.b, c.caps, enginetest.Pairs{}))
		})
	}
}

// cancelProperty measures the slowest of the suite's cancels of b.
func cancelProperty(b engine.Backend, caps enginetest.Caps, p enginetest.Pairs) timingcheck.Property {
	name := b.Name()
	if caps.Options != "" {
		name += " (" + caps.Options + ")"
	}
	return timingcheck.Property{
		Name:  name + ": the slowest blocked flow returns after its cancel within",
		Unit:  "ms",
		Bound: "at most " + enginetest.Prompt.String(),
		Holds: func(m float64) bool { return m <= float64(enginetest.Prompt)/float64(time.Millisecond) },
		Measure: func(t *testing.T, run int) (float64, error) {
			var worst time.Duration
			for _, d := range enginetest.CancelLatency(t, b, caps, p) {
				worst = max(worst, d)
			}
			return float64(worst) / float64(time.Millisecond), nil
		},
	}
}
