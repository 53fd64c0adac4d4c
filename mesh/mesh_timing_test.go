//go:build timing

package mesh_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/blastnet/blast/internal/timingcheck"
	"github.com/blastnet/blast/mesh"
)

// slowLinkCells runs TestMeshPairsFindsTheSlowLink's mesh and returns
// the median goodput of its cells through the shaped link and of the
// others, in Mbit/s.
func slowLinkCells(t *testing.T) (shaped, free float64) {
	f, out := slowLinkMesh(t)
	var s, u []float64
	for _, c := range decode(t, out).Cells {
		if f.shapedCell(c) {
			s = append(s, c.Bps/1e6)
		} else {
			u = append(u, c.Bps/1e6)
		}
	}
	return timingcheck.Median(s), timingcheck.Median(u)
}

// TestTimingMeshSlowLink: in TestMeshPairsFindsTheSlowLink's mesh, the
// cells through the 20 Mbit/s link reach their rate (the median of each
// run's shaped cells within 20% of it), and the cells between unshaped
// hosts run far above (over 500 Mbit/s).
func TestTimingMeshSlowLink(t *testing.T) {
	timingcheck.Check(t, timingcheck.Property{
		Name: "a mesh's cells through a 20 Mbit/s link reach their rate", Runs: 3, Unit: "Mbit/s",
		Bound: "16 to 21", Holds: func(m float64) bool { return m >= 0.8*slowMbit && m <= 1.05*slowMbit },
		Measure: func(t *testing.T, run int) (float64, error) {
			shaped, _ := slowLinkCells(t)
			return shaped, nil
		},
	})
	timingcheck.Check(t, timingcheck.Property{
		Name: "a mesh's cells between unshaped hosts run far above the shaped link", Runs: 3, Unit: "Mbit/s",
		Bound: "over 500", Holds: func(m float64) bool { return m > 500 },
		Measure: func(t *testing.T, run int) (float64, error) {
			_, free := slowLinkCells(t)
			return free, nil
		},
	})
}

// TestTimingMeshFanInStart: the tests of a fan-in run at once start
// within 100 ms of each other (the agents wait for one start time).
func TestTimingMeshFanInStart(t *testing.T) {
	f := newFleet(t, 4)
	timingcheck.Check(t, timingcheck.Property{
		Name:  "a fan-in's tests at once start together",
		Runs:  3,
		Unit:  "ms between the first and the last start",
		Bound: "at most 100",
		Holds: func(m float64) bool { return m <= 100 },
		Measure: func(t *testing.T, run int) (float64, error) {
			var together []mesh.Cell
			for _, c := range f.fanIn(t).Cells {
				if c.Phase == "" {
					together = append(together, c)
				}
			}
			if len(together) != 3 {
				return 0, fmt.Errorf("%d tests at once, want 3", len(together))
			}
			first, last := together[0].Start, together[0].Start
			for _, c := range together[1:] {
				if c.Start.Before(first) {
					first = c.Start
				}
				if c.Start.After(last) {
					last = c.Start
				}
			}
			return float64(last.Sub(first)) / float64(time.Millisecond), nil
		},
	})
}
