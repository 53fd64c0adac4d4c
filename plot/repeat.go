package plot

import (
	"errors"
	"fmt"
	"image/color"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/stats"
	"github.com/blastnet/blast/units"
)

// Repeated is a repeated client run (--repeat, --confidence) as its
// summary was printed.
type Repeated struct {
	// Runs are the runs' results in the order they ran, one per value.
	Runs []*result.Result
	// Values are the figure the summary is of, one per run, in bit/s.
	Values []float64
	// Summary summarizes Values.
	Summary stats.Summary
	// Whose names whose figure Values are: "receivers'" or "sender's".
	Whose string
	// Line is the summary line as the command printed it, without its
	// "blast: " ("receivers' throughput: mean 9.41 Gbit/s ±1.2% (95% CI
	// ...), ..., 5 runs"); the caption carries it word for word.
	Line string
	// Note is the summary's note (stats.Result.Note), if any.
	Note string
}

// The most runs the over-time legend names one by one; more share one
// entry (their bars below still carry their numbers).
const maxRunLegend = 10

// ClientRuns draws every run of a repeated client run into path. On top,
// each run's throughput over time (this side's bytes on all its streams,
// summed per interval), a line per run in its own color named "run k" in
// the legend; below, a bar per run in the same color at the figure the
// summary is of. The summary's mean is a dashed line and its confidence
// interval a band on both panels. The caption starts with rep.Line, the
// summary exactly as it was printed.
func ClientRuns(path string, rep Repeated) error {
	if _, err := format(path); err != nil {
		return err
	}
	if len(rep.Runs) == 0 || len(rep.Runs) != len(rep.Values) {
		return errors.New("plot: no runs to draw (a result and a value per run)")
	}
	n := len(rep.Runs)
	last := rep.Runs[n-1]
	runColor := func(i int) color.Color { return palette[i%len(palette)] }
	var iv *Interval
	if rep.Summary.HasInterval() {
		iv = &Interval{Low: rep.Summary.Low, High: rep.Summary.High}
	}
	whose := rep.Whose
	if whose == "" {
		whose = "receivers'"
	}

	// Both panels share one rate axis, up to the highest of everything.
	top := runsTop(rep.Values, rep.Summary.Mean, iv)
	series := make([]plotter.XYs, n)
	end := 0.0
	for i, r := range rep.Runs {
		var e float64
		series[i], e = runSum(r)
		end = max(end, e)
		for _, p := range series[i] {
			top = max(top, p.Y)
		}
	}
	ciName := stats.LevelPercent(rep.Summary.Level) + " CI of the mean"
	bp, bl := runsPanel(rep.Values, rep.Summary.Mean, iv, whose, ciName, runColor, top, rateAxis)
	div, unit := rateUnit(top)

	var panels []*panel
	if end > 0 {
		tp := newPlot("time (s)", "throughput ("+unit+")")
		tl := newLegend()
		var band *bars
		if iv != nil {
			band = &bars{thumb: bandColor, rects: []rect{{x0: 0, x1: end, y0: iv.Low / div, y1: iv.High / div, fill: bandColor}}}
			tp.Add(band)
		}
		many := n > maxRunLegend
		for i, xy := range series {
			scaled := make(plotter.XYs, len(xy))
			for j, p := range xy {
				scaled[j] = plotter.XY{X: p.X, Y: p.Y / div}
			}
			width := 1.6
			if many {
				width = 1
			}
			l := line(scaled, runColor(i), width)
			// A dot per interval too: a run of one interval is a point.
			dots, err := plotter.NewScatter(scaled)
			if err != nil {
				return fmt.Errorf("plot %s: run %d: %w", path, i+1, err)
			}
			dots.GlyphStyle = draw.GlyphStyle{Color: runColor(i), Radius: vg.Points(1.8), Shape: draw.CircleGlyph{}}
			tp.Add(l, dots)
			if !many {
				tl.Add(fmt.Sprintf("run %d", i+1), l)
			}
		}
		if many {
			tl.Add(fmt.Sprintf("runs 1-%d", n), line(nil, runColor(0), 1))
		}
		tp.Add(hline{x0: 0, x1: end, y: rep.Summary.Mean / div, sty: meanStyle()})
		// The mean and the band named once, here, for both panels.
		tl.Add(fmt.Sprintf("%s mean %s", whose, units.SIRate(rep.Summary.Mean)), vlines{sty: meanStyle()})
		if band != nil {
			tl.Add(whose+" "+ciName, band)
		}
		tp.X.Min, tp.X.Max = 0, end
		tp.Y.Min, tp.Y.Max = bp.Y.Min, bp.Y.Max
		panels = append(panels, &panel{p: tp, legend: tl, weight: 3})
	}
	panels = append(panels, &panel{p: bp, legend: bl, weight: 2, noLegend: len(panels) > 0})

	f := &figure{title: runsTitle(clientTitle(last), n), panels: panels}
	var notes []string
	if end > 0 {
		notes = append(notes, fmt.Sprintf("lines: each run's throughput over time, %s bytes summed over its streams per interval", sideWhose(last)))
	}
	notes = append(notes, "bars: each run's "+whose+" throughput, the figure the summary is of")
	f.captionRuns(rep.Line, notes, iv != nil, rep.Summary.Level, rep.Note)
	return f.save(path)
}

// runsTitle is a figure of n runs' title.
func runsTitle(title string, n int) string {
	if n == 1 {
		return title + ", 1 run"
	}
	return fmt.Sprintf("%s, %d runs", title, n)
}

// captionRuns writes a figure of runs' caption: the summary's line, what
// its lines and bars are (notes), its mean's line (and band, with ci, at
// level), and the report's note.
func (f *figure) captionRuns(line string, notes []string, ci bool, level float64, note string) {
	f.caption = append(f.caption, sentence(line))
	if ci {
		notes = append(notes, fmt.Sprintf("dashed line and band: their mean and its %s confidence interval", stats.LevelPercent(level)))
	} else {
		notes = append(notes, "dashed line: their mean")
	}
	f.caption = append(f.caption, sentence(notes...))
	if note != "" {
		f.caption = append(f.caption, sentence(note))
	}
}

// runSum is a run's throughput over time: this side's bytes on all its
// streams (both directions), summed per interval, at each interval's
// middle, in bit/s; and the end of its last interval. Omitted intervals
// are left out.
func runSum(r *result.Result) (xy plotter.XYs, last float64) {
	if r == nil {
		return nil, 0
	}
	for _, iv := range r.Intervals {
		if iv == nil || iv.Omitted {
			continue
		}
		var bytes int64
		start, end, seen := 0.0, 0.0, false
		for _, si := range iv.Streams {
			if si.Omitted {
				continue
			}
			if !seen {
				start, end, seen = si.Start, si.End, true
			}
			start, end = min(start, si.Start), max(end, si.End)
			bytes += si.Bytes
		}
		if seen && end > start {
			xy = append(xy, plotter.XY{X: (start + end) / 2, Y: 8 * float64(bytes) / (end - start)})
			last = max(last, end)
		}
	}
	return xy, last
}

// sideWhose says whose bytes a result's intervals count: this side's,
// the sender's or the receiver's or both.
func sideWhose(r *result.Result) string {
	switch {
	case r.Bidir():
		return "this side's sent and received"
	case r.Reverse() == (r.Role == "server"):
		return "the sender's (this side's)"
	}
	return "the receiver's (this side's)"
}
