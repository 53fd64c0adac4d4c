package engine

import (
	"math"
	"runtime/metrics"
	"time"
)

// pauseMetrics are the runtime's histograms of its stop-the-world pauses:
// the collector's and the others (Go 1.22 and later).
var pauseMetrics = []string{"/sched/pauses/total/gc:seconds", "/sched/pauses/total/other:seconds"}

// PauseHist is a snapshot of the runtime's stop-the-world pauses so far
// (ReadPauses); Since turns two into what happened between them.
type PauseHist struct {
	counts  []uint64
	buckets []float64 // seconds; len(counts)+1 boundaries
}

// ReadPauses snapshots the process's stop-the-world pauses: the
// collector's (/sched/pauses/total/gc:seconds) and the others
// (GOMAXPROCS changes, stack traces). Empty where the runtime does not
// keep them.
func ReadPauses() PauseHist {
	var out PauseHist
	for _, name := range pauseMetrics {
		s := []metrics.Sample{{Name: name}}
		metrics.Read(s)
		if s[0].Value.Kind() != metrics.KindFloat64Histogram {
			continue
		}
		h := s[0].Value.Float64Histogram()
		if out.buckets == nil {
			out.buckets = append([]float64(nil), h.Buckets...)
			out.counts = make([]uint64, len(h.Counts))
		}
		if len(h.Counts) != len(out.counts) {
			continue // other bucket boundaries: not added up
		}
		for i, c := range h.Counts {
			out.counts[i] += c
		}
	}
	return out
}

// Pauses are the stop-the-world pauses of a stretch of time: how many,
// their total and the longest, and the 99th percentile. The runtime
// keeps them in buckets: Total adds each pause at its bucket's middle,
// Max and P99 are bucket upper bounds (a pause was at most that long).
type Pauses struct {
	Count int64         `json:"count"`
	Total time.Duration `json:"total_ns"`
	Max   time.Duration `json:"max_ns"`
	P99   time.Duration `json:"p99_ns"`
}

// Since is what happened between earlier and h.
func (h PauseHist) Since(earlier PauseHist) Pauses {
	var p Pauses
	if len(h.counts) == 0 {
		return p
	}
	d := make([]uint64, len(h.counts))
	for i, c := range h.counts {
		d[i] = c
		if i < len(earlier.counts) && earlier.counts[i] <= c {
			d[i] -= earlier.counts[i]
		}
		p.Count += int64(d[i])
	}
	sec := func(s float64) time.Duration {
		if math.IsInf(s, 0) || math.IsNaN(s) || s < 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	var seen int64
	for i, c := range d {
		if c == 0 {
			continue
		}
		lo, hi := h.buckets[i], h.buckets[i+1]
		if math.IsInf(hi, 1) {
			hi = lo
		}
		if math.IsInf(lo, -1) {
			lo = 0
		}
		p.Total += time.Duration(c) * sec((lo+hi)/2)
		p.Max = sec(hi)
		seen += int64(c)
		if p.P99 == 0 && float64(seen) >= 0.99*float64(p.Count) {
			p.P99 = sec(hi)
		}
	}
	return p
}
