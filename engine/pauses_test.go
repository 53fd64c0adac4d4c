package engine

import (
	"runtime"
	"testing"
	"time"
)

// Since counts the pauses between two snapshots; a forced collection
// stops the world at least twice (sweep termination, mark termination).
func TestPausesSince(t *testing.T) {
	before := ReadPauses()
	for range 5 {
		runtime.GC()
	}
	p := ReadPauses().Since(before)
	if p.Count < 10 {
		t.Errorf("5 collections: %d pauses, want at least 10", p.Count)
	}
	if p.Total <= 0 || p.Max <= 0 || p.P99 <= 0 || p.P99 > p.Max || p.Total < p.Max/2 {
		t.Errorf("implausible pauses: %+v", p)
	}
	if none := before.Since(before); none != (Pauses{}) {
		t.Errorf("no time between the snapshots: %+v, want none", none)
	}
}

// The bucket arithmetic, on a histogram of known pauses.
func TestPausesBuckets(t *testing.T) {
	ms := func(f float64) float64 { return f / 1e3 }
	h := PauseHist{buckets: []float64{0, ms(1), ms(2), ms(4)}, counts: []uint64{98, 1, 1}}
	p := h.Since(PauseHist{})
	want := Pauses{Count: 100, Total: 98*500*time.Microsecond + 1500*time.Microsecond + 3*time.Millisecond, Max: 4 * time.Millisecond, P99: 2 * time.Millisecond}
	if p != want {
		t.Errorf("got %+v, want %+v", p, want)
	}
}
