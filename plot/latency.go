package plot

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/blastnet/blast/latency"
	"github.com/blastnet/blast/stats"
)

// Latency draws a latency run into path: the histogram of its round-trip
// times on a log time axis, and below it on the same axis their CDF, with
// p50, p99 and p99.9 marked across both. title is the picture's title; if
// empty it says what ran where ("blast lat -> HOST:PORT: TCP, ...").
func Latency(path string, r *latency.Result, title string) error {
	if _, err := format(path); err != nil {
		return err
	}
	if r == nil {
		return errors.New("plot: no result to draw")
	}
	var total int64
	for _, b := range r.Buckets {
		total += max(b.Count, 0)
	}
	if total == 0 {
		return fmt.Errorf("plot %s: the run has no round trips to draw", path)
	}
	// A --load run has an idle phase: both are drawn, idle first.
	series := []*latency.Result{r}
	if r.Idle != nil {
		series = []*latency.Result{r.Idle, r}
	}
	if title == "" {
		title = latencyTitle(r)
	}
	div, unit, xmin, xmax := rttAxis(series)

	// Both axes of times, and the count axis, are logarithmic: the
	// panels plot log10 of the values on linear axes that powTicks label
	// with the values. (gonum's LogScale misplaces the axis label's
	// glyph box, which squeezes the panel.)
	lg := math.Log10

	// About 48 bins across the axis, however wide its range.
	binsPerDecade := min(max(int(math.Ceil(48/math.Log10(xmax/xmin))), 12), 120)

	// Histogram: the buckets regrouped into log bins, as a share of the
	// round trips. HDR buckets are narrower than a bin, so each goes
	// whole into the bin of its middle.
	nb := int(math.Ceil(math.Log10(xmax/xmin)*float64(binsPerDecade))) + 1
	edge := func(i int) float64 { return xmin * math.Pow(10, float64(i)/float64(binsPerDecade)) }
	// Counts on a log axis, so that the tail's few round trips show.
	hp := newPlot("", "round trips per bin")
	const floor = 0.6 // the bars' base, under a bin of one
	var most int64
	hl := newLegend()
	cp := newPlot("round-trip time ("+unit+")", "CDF (% of round trips)")
	cLegend := newLegend()
	for k, s := range series {
		name, col := "", palette[0]
		if len(series) > 1 {
			name = "idle: "
			if s == r {
				name, col = "under load: ", palette[1]
			}
		}
		counts := make([]int64, nb)
		var n int64
		for _, b := range s.Buckets {
			if b.Count <= 0 {
				continue
			}
			n += b.Count
			mid := (float64(b.From) + float64(b.To)) / 2 / div
			i := int(math.Floor(math.Log10(mid/xmin) * float64(binsPerDecade)))
			counts[min(max(i, 0), nb-1)] += b.Count
		}
		// Two series share each bin: idle in its left half, loaded in
		// its right, so that neither hides the other.
		hb := &bars{thumb: col}
		for i, c := range counts {
			if c > 0 {
				lo, hi := lg(edge(i)), lg(edge(i+1))
				w := (hi - lo) * 0.06
				x0, x1 := lo+w, hi-w
				if len(series) > 1 {
					mid := (lo + hi) / 2
					if k == 0 {
						x1 = mid
					} else {
						x0 = mid
					}
				}
				hb.rects = append(hb.rects, rect{x0: x0, x1: x1, y0: lg(floor), y1: lg(float64(c)), fill: col})
				most = max(most, c)
			}
		}
		hp.Add(hb)
		hl.Add(fmt.Sprintf("%s%d round trips", name, n), hb)

		if n == 0 {
			continue
		}
		cl := line(cdfXY(s, div, xmin, xmax), col, 1.8)
		cp.Add(cl)
		cLegend.Add(name+"CDF", cl)
	}
	hp.Y.Tick.Marker = powTicks{}
	hp.Y.Min, hp.Y.Max = lg(floor), math.Ceil(lg(float64(max(most, 1))*1.5))
	cp.Y.Min, cp.Y.Max = 0, 100

	// The percentiles, marked on both panels and named on the CDF.
	marks := []struct {
		name string
		d    time.Duration
		y    float64 // where its label sits, in % on the CDF
	}{{"p50", r.RTT.P50, 22}, {"p99", r.RTT.P99, 52}, {"p99.9", r.RTT.P999, 82}}
	markStyle := draw.LineStyle{Color: rgb(0xd62728), Width: vg.Points(1.1), Dashes: []vg.Length{vg.Points(4), vg.Points(2.5)}}
	var xs []float64
	var labels notes
	for _, m := range marks {
		if m.d <= 0 {
			continue
		}
		x := lg(float64(m.d) / div)
		xs = append(xs, x)
		sty := textStyle(sans, noteSize, rgb(0xb01e1e))
		sty.YAlign = draw.YCenter
		dx := vg.Points(4)
		// Right of its mark, or left of it near the right edge.
		if (x-lg(xmin))/(lg(xmax)-lg(xmin)) > 0.72 {
			sty.XAlign, dx = draw.XRight, -dx
		}
		labels = append(labels, note{x: x, y: m.y, dx: dx, text: m.name + " " + fmtDur(m.d), sty: sty, box: true})
	}
	if len(xs) > 0 {
		v := vlines{xs: xs, sty: markStyle}
		hp.Add(v)
		cp.Add(v, labels)
		if r.Idle != nil {
			cLegend.Add("under load: percentiles", v)
		} else {
			cLegend.Add("percentiles", v)
		}
	}

	for _, p := range []*gplot.Plot{hp, cp} {
		p.X.Tick.Marker = powTicks{}
		p.X.Min, p.X.Max = lg(xmin), lg(xmax)
	}
	hp.X.Tick.Marker = unlabelled{powTicks{}}

	s := r.RTT
	caption := []string{fmt.Sprintf("Min %s, p50 %s, p90 %s, p99 %s, p99.9 %s, max %s; mean %s, standard deviation %s.",
		fmtDur(s.Min), fmtDur(s.P50), fmtDur(s.P90), fmtDur(s.P99), fmtDur(s.P999), fmtDur(s.Max), fmtDur(s.Mean), fmtDur(s.StdDev))}
	if r.Idle != nil && r.Idle.RoundTrips > 0 {
		i := r.Idle.RTT
		caption[0] = "Under load: " + strings.ToLower(caption[0][:1]) + caption[0][1:]
		caption = append(caption, fmt.Sprintf("Idle, before the bulk stream started: min %s, p50 %s, p90 %s, p99 %s, p99.9 %s, max %s.",
			fmtDur(i.Min), fmtDur(i.P50), fmtDur(i.P90), fmtDur(i.P99), fmtDur(i.P999), fmtDur(i.Max)))
	}
	var more []string
	if r.Lost > 0 {
		more = append(more, fmt.Sprintf("%d of %d requests lost (no reply within %s)", r.Lost, r.Requests, fmtDur(r.Timeout)))
	}
	if ps := r.PerSecond(); ps > 0 {
		more = append(more, fmt.Sprintf("%.0f round trips per second", ps))
	}
	if r.Interrupted {
		more = append(more, "the run was cut short")
	}
	more = append(more, fmt.Sprintf("bins are %d per decade", binsPerDecade))
	caption = append(caption, sentence(more...))

	f := &figure{title: title, caption: caption, panels: []*panel{
		{p: hp, legend: hl, weight: 1},
		{p: cp, legend: cLegend, weight: 1.3},
	}}
	return f.save(path)
}

// rttAxis is the round-trip axis of runs' buckets: its unit (ns per unit
// and the unit's name: µs unless every round trip took a millisecond or
// more) and its range in that unit, out to the next 1/24 of a decade and
// at least half a decade wide. Runs without round trips give a range
// around 1 µs.
func rttAxis(runs []*latency.Result) (div float64, unit string, xmin, xmax float64) {
	lo, hi := math.Inf(1), 0.0
	for _, s := range runs {
		for _, b := range s.Buckets {
			if b.Count > 0 {
				lo, hi = min(lo, float64(max(b.From, 1))), max(hi, float64(max(b.To, b.From, 1)))
			}
		}
	}
	if hi == 0 {
		lo, hi = 1e3, 1e3
	}
	div, unit = 1e3, "µs"
	if lo >= 1e6 {
		div, unit = 1e6, "ms"
	}
	xmin = math.Pow(10, math.Floor(math.Log10(lo/div)*24)/24)
	xmax = math.Pow(10, math.Ceil(math.Log10(hi/div)*24)/24)
	if xmax/xmin < 3 { // at least half a decade, centred
		g := math.Sqrt(3 / (xmax / xmin))
		xmin, xmax = xmin/g, xmax*g
	}
	return div, unit, xmin, xmax
}

// cdfXY is a run's CDF on a log time axis (x: log10 of the time in units
// of div ns, from xmin to xmax): the share of round trips, in %, that took
// at most each bucket's end.
func cdfXY(s *latency.Result, div, xmin, xmax float64) plotter.XYs {
	var n, seen int64
	for _, b := range s.Buckets {
		n += max(b.Count, 0)
	}
	lg := math.Log10
	cdf := plotter.XYs{{X: lg(xmin), Y: 0}}
	if n == 0 {
		return append(cdf, plotter.XY{X: lg(xmax), Y: 0})
	}
	for _, b := range s.Buckets {
		if b.Count <= 0 {
			continue
		}
		if len(cdf) == 1 {
			cdf = append(cdf, plotter.XY{X: lg(float64(b.From) / div), Y: 0})
		}
		seen += b.Count
		cdf = append(cdf, plotter.XY{X: lg(float64(max(b.To, b.From)) / div), Y: 100 * float64(seen) / float64(n)})
	}
	return append(cdf, plotter.XY{X: lg(xmax), Y: 100})
}

// LatencyRepeated is a repeated latency run (blast lat --repeat,
// --confidence) as its summary was printed.
type LatencyRepeated struct {
	// Runs are the runs' results in the order they ran.
	Runs []*latency.Result
	// Values are each run's median round trip in µs: the figure the
	// summary is of, one per run.
	Values []float64
	// Summary summarizes Values.
	Summary stats.Summary
	// Line is the summary line as the command printed it, without its
	// "blast lat: " ("median round trip (µs): mean 41.2 ±3.1% ..."); the
	// caption carries it word for word.
	Line string
	// Note is the summary's note (stats.Result.Note), if any.
	Note string
	// Title is the picture's title ("": what ran where, from the last run).
	Title string
}

// LatencyRuns draws every run of a repeated latency run into path. On
// top, each run's CDF of round-trip times on a log time axis, a line per
// run in its own color named "run k"; below, a bar per run in the same
// color at its median round trip, the figure the summary is of. The
// summary's mean is a dashed line and its confidence interval a band on
// both panels. The caption starts with rep.Line, the summary exactly as
// it was printed.
func LatencyRuns(path string, rep LatencyRepeated) error {
	if _, err := format(path); err != nil {
		return err
	}
	n := len(rep.Runs)
	if n == 0 || n != len(rep.Values) || slices.Contains(rep.Runs, nil) {
		return errors.New("plot: no runs to draw (a result and a value per run)")
	}
	last := rep.Runs[n-1]
	div, unit, xmin, xmax := rttAxis(rep.Runs)
	lg := math.Log10
	// A value in µs on the CDF's axis, kept inside it.
	at := func(us float64) float64 { return lg(min(max(us*1e3/div, xmin), xmax)) }
	runColor := func(i int) color.Color { return palette[i%len(palette)] }
	var iv *Interval
	if rep.Summary.HasInterval() {
		iv = &Interval{Low: rep.Summary.Low, High: rep.Summary.High}
	}
	ciName := stats.LevelPercent(rep.Summary.Level) + " CI of the mean"

	cp := newPlot("round-trip time ("+unit+")", "CDF (% of round trips)")
	cl := newLegend()
	var band *bars
	if iv != nil {
		band = &bars{thumb: bandColor, rects: []rect{{x0: at(iv.Low), x1: at(iv.High), y0: 0, y1: 100, fill: bandColor}}}
		cp.Add(band)
	}
	many := n > maxRunLegend
	for i, r := range rep.Runs {
		width := 1.6
		if many {
			width = 1
		}
		l := line(cdfXY(r, div, xmin, xmax), runColor(i), width)
		cp.Add(l)
		if !many {
			cl.Add(fmt.Sprintf("run %d", i+1), l)
		}
	}
	if many {
		cl.Add(fmt.Sprintf("runs 1-%d", n), line(nil, runColor(0), 1))
	}
	mean := vlines{xs: []float64{at(rep.Summary.Mean)}, sty: meanStyle()}
	cp.Add(mean)
	// The mean and the band named once, here, for both panels.
	cl.Add("medians' mean "+rttRunsAxis.show(rep.Summary.Mean), vlines{sty: meanStyle()})
	if band != nil {
		cl.Add("medians' "+ciName, band)
	}
	cp.X.Tick.Marker = powTicks{}
	cp.X.Min, cp.X.Max = lg(xmin), lg(xmax)
	cp.Y.Min, cp.Y.Max = 0, 100

	bp, bl := runsPanel(rep.Values, rep.Summary.Mean, iv, "", ciName, runColor, 0, rttRunsAxis)

	title := rep.Title
	if title == "" {
		// Without the last run's length: the title is of every run.
		t := *last
		t.Elapsed = 0
		title = latencyTitle(&t)
	}
	f := &figure{title: runsTitle(title, n), panels: []*panel{
		{p: cp, legend: cl, weight: 3},
		{p: bp, legend: bl, weight: 2, noLegend: true},
	}}
	f.captionRuns(rep.Line, []string{"lines: each run's CDF of round-trip times", "bars: each run's median round trip, the figure the summary is of"},
		iv != nil, rep.Summary.Level, rep.Note)
	return f.save(path)
}

// rttRunsAxis: values in µs, shown in µs or in ms from a millisecond up.
var rttRunsAxis = runsAxis{
	name: "median round trip",
	scale: func(top float64) (float64, string) {
		if top >= 1000 {
			return 1000, "ms"
		}
		return 1, "µs"
	},
	// As blast lat prints the summary: four figures, in µs.
	show: func(us float64) string { return strconv.FormatFloat(us, 'g', 4, 64) + " µs" },
}

func latencyTitle(r *latency.Result) string {
	proto := strings.ToUpper(r.Protocol)
	if proto == "" {
		proto = "TCP"
	}
	t := fmt.Sprintf("blast lat -> %s: %s, %d-byte requests", r.Remote, proto, r.Size)
	if r.Elapsed > 0 {
		t += ", " + fmtDur(r.Elapsed)
	}
	return t
}

// fmtDur prints a round-trip time in µs or ms with three figures.
func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.3g s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.3g ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.3g µs", float64(d)/1e3)
}
