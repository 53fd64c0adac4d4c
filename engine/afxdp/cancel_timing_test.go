//go:build timing && linux

package afxdp_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/engine/afxdp"
	"github.com/blastnet/blast/engine/enginetest"
	"github.com/blastnet/blast/internal/testkit"
	"github.com/blastnet/blast/internal/timingcheck"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

// TestTimingCancel: TestCancel's unlimited send on two threads and
// receive that gets nothing return promptly once cancelled (TestCancel
// wants them back with context.Canceled within hang; how soon is judged
// here, against the suite's bound).
func TestTimingCancel(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	mac := net.HardwareAddr{0x02, 0xbb, 0, 0, 0, 1} // nobody's: B drops the frames
	for _, c := range []struct {
		name string
		send bool
		b    engine.Backend
		sock func() *engine.Socket
	}{
		{"send", true, afxdp.Backend{Threads: 2, DstMAC: mac}, func() *engine.Socket { return dial(t, lab.A, lab.B) }},
		{"recv", false, afxdp.Backend{}, func() *engine.Socket { return listen(t, lab.B) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			timingcheck.Check(t, timingcheck.Property{
				Name:  "afxdp " + c.name + ": a running flow returns after its cancel within",
				Unit:  "ms",
				Bound: "at most " + enginetest.Prompt.String(),
				Holds: func(m float64) bool { return m <= float64(enginetest.Prompt)/float64(time.Millisecond) },
				Measure: func(t *testing.T, run int) (float64, error) {
					sock := c.sock()
					defer sock.Close()
					f := newFlow(sock, &engine.Spec{Protocol: engine.UDP, BufLen: 64, SentinelMax: sentinel})
					ctx, cancel := context.WithCancel(t.Context())
					done := make(chan error, 1)
					go func() { done <- engine.Run(ctx, c.b, f, c.send) }()
					testkit.WaitFor(t, hang, "the flow to run", func() bool { return running(f, c.send) })
					start := time.Now()
					cancel()
					select {
					case err := <-done:
						took := time.Since(start)
						if !errors.Is(err, context.Canceled) {
							return 0, fmt.Errorf("after cancel: %v, want context.Canceled", err)
						}
						return float64(took) / float64(time.Millisecond), nil
					case <-time.After(hang):
						<-done
						return 0, fmt.Errorf("still running %v after the context was cancelled", hang)
					}
				},
			})
		})
	}
	noXDPLeft(t, lab)
}
