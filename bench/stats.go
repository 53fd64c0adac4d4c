package bench

import (
	"math"
	"slices"

	"github.com/blastnet/blast/stats"
)

// Summary is the median, minimum and maximum of a set of measurements.
type Summary struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// Summarize returns the summary of v, ignoring NaNs; all zero for no values.
func Summarize(v []float64) Summary {
	s := make([]float64, 0, len(v))
	for _, x := range v {
		if !math.IsNaN(x) {
			s = append(s, x)
		}
	}
	if len(s) == 0 {
		return Summary{}
	}
	return Summary{Median: stats.Median(s), Min: slices.Min(s), Max: slices.Max(s), N: len(s)}
}

// Ratio is a/b, or NaN when b is zero or either is NaN: a pair where the
// peer moved nothing has no ratio.
func Ratio(a, b float64) float64 {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return a / b
}

// PairRatios returns a[i]/b[i] for each pair.
func PairRatios(a, b []float64) []float64 {
	n := min(len(a), len(b))
	r := make([]float64, n)
	for i := range n {
		r[i] = Ratio(a[i], b[i])
	}
	return r
}

// CPUPerGB is CPU-seconds per 10^9 bytes moved, NaN when nothing moved.
func CPUPerGB(cpuSeconds float64, bytes int64) float64 {
	if bytes <= 0 {
		return math.NaN()
	}
	return cpuSeconds / (float64(bytes) / 1e9)
}
