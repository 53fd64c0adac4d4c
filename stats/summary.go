package stats

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// DefaultLevel is the confidence level of the interval Summarize reports
// when none is asked for (as with --repeat): 95%.
const DefaultLevel = 0.95

// Summary describes a sample: its size, mean, sample standard deviation
// (n-1), extremes, median and the two-sided Student's t confidence
// interval of the mean at Level.
//
// With fewer than two values there is no interval: Low = High = Mean and
// HalfWidthPct is 0 (see HasInterval). HalfWidthPct is the half-width of
// the interval in percent of |Mean|; it is 0 when the half-width is 0 and
// +Inf when the mean is 0 and the half-width is not (a sample with
// negative values; Run refuses those).
type Summary struct {
	N            int     `json:"n"`
	Mean         float64 `json:"mean"`
	StdDev       float64 `json:"std_dev"`
	Min          float64 `json:"min"`
	Median       float64 `json:"median"`
	Max          float64 `json:"max"`
	Level        float64 `json:"ci_level"`          // 0.95
	Low          float64 `json:"ci_low"`            // Mean - half-width
	High         float64 `json:"ci_high"`           // Mean + half-width
	HalfWidthPct float64 `json:"ci_half_width_pct"` // half-width in percent of the mean: 1.2 is ±1.2%
}

// Summarize describes xs with the interval of the mean at level, a
// fraction such as 0.95; a level outside (0, 1) is taken as DefaultLevel.
// xs is not modified. Values must be finite; a NaN or an infinity makes
// every figure that depends on it meaningless.
func Summarize(xs []float64, level float64) Summary {
	if !(level > 0 && level < 1) {
		level = DefaultLevel
	}
	s := Summary{N: len(xs), Level: level}
	if len(xs) == 0 {
		return s
	}
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	s.Min, s.Max = sorted[0], sorted[len(sorted)-1]
	s.Median = sortedMedian(sorted)
	if len(xs) == 1 {
		s.Mean, s.Low, s.High = xs[0], xs[0], xs[0]
		return s
	}
	s.Mean, s.StdDev = stat.MeanStdDev(xs, nil)
	half := tQuantile((1+level)/2, float64(len(xs)-1)) * s.StdDev / math.Sqrt(float64(len(xs)))
	s.Low, s.High = s.Mean-half, s.Mean+half
	switch {
	case half == 0:
		s.HalfWidthPct = 0
	case s.Mean == 0:
		s.HalfWidthPct = math.Inf(1)
	default:
		s.HalfWidthPct = half / math.Abs(s.Mean) * 100
	}
	return s
}

// tQuantile is the p quantile of Student's t distribution with df degrees
// of freedom.
func tQuantile(p, df float64) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(p)
}

// HasInterval reports whether s has a confidence interval: it needs two
// values or more.
func (s Summary) HasInterval() bool { return s.N >= 2 }

// Overlap says whether the confidence intervals of a and b overlap, so
// that the data cannot tell their means apart at their levels (compare
// marks such rows "not different"). It is false when either has no
// interval: one run says nothing either way, and callers should then mark
// nothing.
func Overlap(a, b Summary) bool {
	if !a.HasInterval() || !b.HasInterval() {
		return false
	}
	return a.Low <= b.High && b.Low <= a.High
}

// Line renders s on one line, every value through unit (which gives a
// number with its unit, such as units.SIRate; nil gives 4 significant
// digits):
//
//	mean 9.41 Gbit/s ±1.2% (95% CI 9.30–9.52), sd 0.18, min 9.12, median 9.43, max 9.61, 5 runs
//
// The unit is written after the mean only: a value whose unit (the text
// after the number's first space) is the mean's is written without it,
// and one in another unit (an adaptive formatter may give the sd in
// Mbit/s) keeps its own. One run renders as "9.41 Gbit/s, 1 run" and none
// as "no runs".
func (s Summary) Line(unit func(float64) string) string {
	if unit == nil {
		unit = func(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }
	}
	switch s.N {
	case 0:
		return "no runs"
	case 1:
		return unit(s.Mean) + ", 1 run"
	}
	mean := unit(s.Mean)
	_, meanUnit := splitUnit(mean)
	bare := func(x float64) string {
		v := unit(x)
		if num, u := splitUnit(v); u != "" && u == meanUnit {
			return num
		}
		return v
	}
	return fmt.Sprintf("mean %s ±%s (%s CI %s–%s), sd %s, min %s, median %s, max %s, %d runs",
		mean, Percent(s.HalfWidthPct), LevelPercent(s.Level), bare(s.Low), bare(s.High),
		bare(s.StdDev), bare(s.Min), bare(s.Median), bare(s.Max), s.N)
}

// splitUnit splits "9.41 Gbit/s" into "9.41" and "Gbit/s". A string that
// does not start with a number and a space has no unit to split off.
func splitUnit(v string) (num, unit string) {
	num, unit, ok := strings.Cut(v, " ")
	if !ok {
		return v, ""
	}
	if _, err := strconv.ParseFloat(strings.TrimSpace(num), 64); err != nil || strings.TrimSpace(num) == "" {
		return v, ""
	}
	return num, unit
}

// Percent renders a percentage for Line and Note: two decimals below 1,
// one below 100, none above: "0.25%", "1.2%", "150%".
func Percent(p float64) string {
	switch {
	case math.IsInf(p, 1):
		return "inf%"
	case p < 0.995:
		return strconv.FormatFloat(p, 'f', 2, 64) + "%"
	case p < 99.95:
		return strconv.FormatFloat(p, 'f', 1, 64) + "%"
	}
	return strconv.FormatFloat(p, 'f', 0, 64) + "%"
}

// LevelPercent renders a confidence level as a percent, as short as it
// is exact to a tenth: 0.95 as "95%", 0.999 as "99.9%".
func LevelPercent(level float64) string {
	return strconv.FormatFloat(math.Round(level*1000)/10, 'f', -1, 64) + "%"
}

// Median is the middle value of xs (the mean of the two middle values when
// there is an even number), or NaN when xs is empty. xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	return sortedMedian(sorted)
}

func sortedMedian(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}
