package latency

import (
	"math"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// The histogram tracks 1 ns to one minute with three significant digits:
// a percentile is within 0.1% of the value it names.
const (
	histMin     = 1
	histMax     = int64(time.Minute)
	histSigFigs = 3
)

// Histogram records round-trip times. Percentiles come from an HDR
// histogram; count, min, max, mean and standard deviation are kept exactly
// beside it.
type Histogram struct {
	h          *hdrhistogram.Histogram
	n          int64
	min, max   int64
	mean, m2   float64 // Welford's running mean and sum of squared deviations
	overflowed int64   // values above one minute, recorded as one minute
}

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	return &Histogram{h: hdrhistogram.New(histMin, histMax, histSigFigs)}
}

// Record adds one round-trip time.
func (h *Histogram) Record(d time.Duration) {
	v := int64(d)
	if v < histMin {
		v = histMin
	}
	if v > histMax {
		h.overflowed++
		v = histMax
	}
	h.h.RecordValue(v) // cannot fail: v is in range
	h.n++
	if h.n == 1 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	delta := float64(v) - h.mean
	h.mean += delta / float64(h.n)
	h.m2 += delta * (float64(v) - h.mean)
}

// Reset empties the histogram.
func (h *Histogram) Reset() {
	h.h.Reset()
	*h = Histogram{h: h.h}
}

// Count is the number of values recorded.
func (h *Histogram) Count() int64 { return h.n }

// Percentile returns the value at or below which p percent (0 to 100) of
// the recorded values lie, to three significant digits, clamped to the
// exact min and max. It is 0 for an empty histogram.
func (h *Histogram) Percentile(p float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	v := h.h.ValueAtQuantile(p)
	return time.Duration(min(max(v, h.min), h.max))
}

// Stats summarizes the histogram.
func (h *Histogram) Stats() Stats {
	s := Stats{Count: h.n}
	if h.n == 0 {
		return s
	}
	s.Min, s.Max = time.Duration(h.min), time.Duration(h.max)
	s.Mean = time.Duration(math.Round(h.mean))
	if h.n > 1 {
		s.StdDev = time.Duration(math.Round(math.Sqrt(h.m2 / float64(h.n-1))))
	}
	s.P50, s.P90, s.P99 = h.Percentile(50), h.Percentile(90), h.Percentile(99)
	s.P999, s.P9999 = h.Percentile(99.9), h.Percentile(99.99)
	return s
}

// Buckets returns the histogram's non-empty buckets in increasing order:
// each counts the values from From to To, both included.
func (h *Histogram) Buckets() []Bucket {
	var out []Bucket
	for _, b := range h.h.Distribution() {
		if b.Count > 0 {
			out = append(out, Bucket{From: time.Duration(b.From), To: time.Duration(b.To), Count: b.Count})
		}
	}
	return out
}

// Stats are the round-trip figures of a run or an interval.
type Stats struct {
	Count  int64
	Min    time.Duration
	Mean   time.Duration
	StdDev time.Duration // sample standard deviation
	P50    time.Duration
	P90    time.Duration
	P99    time.Duration
	P999   time.Duration
	P9999  time.Duration
	Max    time.Duration
}

// Bucket is one histogram bucket: Count round trips took From to To.
type Bucket struct {
	From, To time.Duration
	Count    int64
}
