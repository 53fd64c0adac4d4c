package plot

import (
	"fmt"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/blastnet/blast/compare"
)

// Compare draws a comparison into path: one horizontal bar per row that
// ran, in the order given, with its throughput and, where intervals has
// one under the row's name (Row.Case), its confidence interval as a
// whisker; beside it a bar of the row's CPU seconds per gigabyte. Rows
// that were skipped or failed are named in the caption with their reason.
// intervals may be nil. title is the picture's title ("blast compare"
// if empty).
func Compare(path string, rows []compare.Row, intervals map[string]Interval, title string) error {
	if _, err := format(path); err != nil {
		return err
	}
	var ran []compare.Row
	var caption []string
	unknownCPU := false
	for _, r := range rows {
		switch {
		case r.Skipped != "":
			caption = append(caption, fmt.Sprintf("skipped: %s (%s)", r.Case, oneLine(r.Skipped)))
		case r.Error != "":
			caption = append(caption, fmt.Sprintf("failed: %s (%s)", r.Case, oneLine(r.Error)))
		default:
			ran = append(ran, r)
		}
	}
	if len(ran) == 0 {
		return fmt.Errorf("plot %s: no row of the comparison ran", path)
	}
	if title == "" {
		title = "blast compare"
	}

	n := len(ran)
	top := 0.0
	for _, r := range ran {
		top = max(top, r.BitsPerSec)
		if iv, ok := intervals[r.Case]; ok {
			top = max(top, iv.High)
		}
	}
	div, _ := rateUnit(top)
	var rates []float64
	for _, r := range ran {
		rates = append(rates, r.BitsPerSec)
		if iv, ok := intervals[r.Case]; ok {
			rates = append(rates, iv.Low, iv.High)
		}
	}
	// Linear in the unit of the largest, or logarithmic past a 30x span.
	sc, xlabel := rateScale(rates)
	names := make([]string, n)
	// Three figures for the largest value, as many decimals for all.
	prec := 2
	if top/div >= 10 {
		prec = 1
	}
	if top/div >= 100 {
		prec = 0
	}
	// The figures written beside the bars: in the unit of the axis, or on
	// a log axis each row's in its own unit, written once.
	figureOf := func(v float64, iv *Interval) string {
		d, u, p := div, "", prec
		if sc.log {
			d, u = rateUnit(v)
			u, p = " "+u, 3
			if v/d >= 10 {
				p = 1
			}
			if v/d >= 100 {
				p = 0
			}
		}
		if iv == nil {
			return fmt.Sprintf("%.*f%s", p, v/d, u)
		}
		return fmt.Sprintf("%.*f%s (%.*f to %.*f)", p, v/d, u, p, iv.Low/d, p, iv.High/d)
	}
	// Row i is drawn at y = n-1-i: the first row on top.
	y := func(i int) float64 { return float64(n - 1 - i) }
	const half = 0.32 // half a bar's thickness, in rows

	tp := gridPlot(xlabel, "", true, false)
	tb := &bars{thumb: palette[0]}
	eb := errBars{sty: draw.LineStyle{Color: black, Width: vg.Points(1.4)}, cap: vg.Points(9)}
	var tn notes
	label := textStyle(sans, noteSize, black)
	label.YAlign = draw.YCenter
	haveIntervals := false
	for i, r := range ran {
		names[n-1-i] = r.Case
		v := sc.at(r.BitsPerSec)
		tb.rects = append(tb.rects, rect{x0: sc.base(), x1: v, y0: y(i) - half, y1: y(i) + half, fill: palette[0]})
		end, text := v, figureOf(r.BitsPerSec, nil)
		if iv, ok := intervals[r.Case]; ok {
			haveIntervals = true
			eb.bars = append(eb.bars, errBar{y: y(i), lo: sc.at(iv.Low), hi: sc.at(iv.High)})
			end = max(end, sc.at(iv.High))
			text = figureOf(r.BitsPerSec, &iv)
		}
		if r.LostPercent > 0 {
			text += fmt.Sprintf(", %.2f%% lost", r.LostPercent)
		}
		tn = append(tn, note{x: end, y: y(i), dx: vg.Points(5), text: text, sty: label})
	}
	tp.Add(tb)
	if haveIntervals {
		tp.Add(eb)
	}
	tp.Add(tn)
	tp.NominalY(names...)
	tp.Y.Tick.Label.Font = textStyle(sans, tickSize, black).Font
	// Room for three rows at least, so one or two bars stay bars.
	pad := float64(max(0, 3-n)) / 2
	tp.Y.Min, tp.Y.Max = -0.6-pad, float64(n)-0.4+pad
	// Room for the value labels right of the longest bar (longer with an
	// interval in them).
	room := 1.3
	if haveIntervals {
		room = 1.55
	}
	sc.fit(&tp.X, top, room)
	if !sc.log {
		tp.X.Max = max(tp.X.Max, 1)
	}

	var cpus []float64
	for _, r := range ran {
		if !r.TxCPUUnknown && !r.RxCPUUnknown && r.CPUPerGB > 0 {
			cpus = append(cpus, r.CPUPerGB)
		}
	}
	csc := newScale(cpus, 1, 1)
	clabel := "CPU-s/GB (both ends)"
	if csc.log {
		clabel = "CPU-s/GB (both ends, log scale)"
	}
	cp := gridPlot(clabel, "", true, false)
	cb := &bars{thumb: palette[1]}
	var cn notes
	cpuTop := 0.0
	for i, r := range ran {
		if r.TxCPUUnknown || r.RxCPUUnknown || r.CPUPerGB <= 0 {
			unknownCPU = unknownCPU || r.TxCPUUnknown || r.RxCPUUnknown
			cn = append(cn, note{x: csc.base(), y: y(i), dx: vg.Points(5), text: "n/a", sty: label})
			continue
		}
		cpuTop = max(cpuTop, r.CPUPerGB)
		cb.rects = append(cb.rects, rect{x0: csc.base(), x1: csc.at(r.CPUPerGB), y0: y(i) - half, y1: y(i) + half, fill: palette[1]})
		cn = append(cn, note{x: csc.at(r.CPUPerGB), y: y(i), dx: vg.Points(5), text: fmt.Sprintf("%.3g", r.CPUPerGB), sty: label})
	}
	cp.Add(cb, cn)
	cp.Y.Min, cp.Y.Max = tp.Y.Min, tp.Y.Max
	// The same rows as the throughput panel, named there.
	cp.Y.Tick.Marker = gplot.ConstantTicks(nil)
	cp.Y.Tick.Length, cp.Y.Width = 0, 0
	csc.fit(&cp.X, max(cpuTop, 0.01), 1.35)

	notes := []string{"Bars are each row's throughput at the receiver"}
	if haveIntervals {
		notes[0] += "; whiskers, and the figures in parentheses, the confidence interval of the mean"
	}
	notes[0] += "; CPU-s/GB is the CPU seconds of both ends per gigabyte received."
	if sc.log || csc.log {
		notes = append(notes, fmt.Sprintf("An axis whose values span more than %dx is logarithmic.", maxLinearSpan))
	}
	if unknownCPU {
		notes = append(notes, "n/a: a backend moved data on threads of its own, so its CPU was not measured.")
	}
	if len(caption) > 0 {
		notes = append(notes, "Not drawn: "+strings.Join(caption, "; ")+".")
	}
	f := &figure{title: title, sideBySide: true, caption: notes, panels: []*panel{
		{p: tp, weight: 2.3, noLegend: true},
		{p: cp, weight: 1, noLegend: true},
	}}
	return f.save(path)
}

// oneLine is s on one line, without a trailing period.
func oneLine(s string) string {
	return strings.TrimRight(strings.Join(strings.Fields(s), " "), ".")
}
