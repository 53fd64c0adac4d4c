//go:build timing

package doctor_test

import (
	"strings"
	"testing"

	"github.com/blastnet/blast/internal/blasttest"
	"github.com/blastnet/blast/internal/timingcheck"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

// TestTimingTTCPCPUBound: a ttcp transmitter writing 1 KiB buffers as
// fast as it can keeps its core busy, and D22 (INFO) names the CPU. That
// the core was the sender's for the whole test is the host's to decide:
// the figure is 1 for a run that printed D22, 0 for one that did not,
// and most runs must print it. (The rule's logic, on figures, is
// pathdiag's unit test.)
func TestTimingTTCPCPUBound(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	want := "blast-t: path INFO D22 " + lab.A.Iface + ": the sender is CPU-bound: a core per stream was busy the whole test (the sender (local) used "
	timingcheck.Check(t, timingcheck.Property{
		Name:  "a ttcp sender of 1 KiB writes is CPU-bound (D22)",
		Runs:  3,
		Unit:  "(1: D22 printed)",
		Bound: "1",
		Holds: func(m float64) bool { return m == 1 },
		Measure: func(t *testing.T, run int) (float64, error) {
			r := blasttest.Listening(t, lab.B, "tcp", 5001, blasttest.Bin, "-r", "-s", "-l", "131072")
			tx := blasttest.Start(t, lab.A, nil, blasttest.Bin, "-t", "-s", "-l", "1024", "-n", "500000", lab.B.Addr4.String())
			tx.Wait(t)
			r.Wait(t)
			if out := tx.Stdout.String(); !strings.Contains(out, want) {
				t.Logf("run %d: no D22:\n%s", run+1, out)
				return 0, nil
			}
			return 1, nil
		},
	})
}
