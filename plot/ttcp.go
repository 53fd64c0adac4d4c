package plot

import (
	"errors"
	"fmt"
	"image/color"
	"strconv"

	gplot "gonum.org/v1/plot"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/blastnet/blast/units"
)

// Runs draws repeated throughput measurements into path (ttcp mode's
// --repeat and --confidence): one vertical bar per run in the order they
// ran, each labelled with its rate, a line across them at the mean and,
// with iv (nil: none, as after one run), the confidence interval of the
// mean as a shaded band. rates are in bit/s; title says what ran where;
// caption lines go under the picture.
func Runs(path string, rates []float64, mean float64, iv *Interval, title string, caption ...string) error {
	if _, err := format(path); err != nil {
		return err
	}
	if len(rates) == 0 {
		return errors.New("plot: no run to draw")
	}
	p, lg := runsPanel(rates, mean, iv, "", "confidence interval of the mean", nil, 0, rateAxis)
	f := &figure{title: title, caption: caption, panels: []*panel{{p: p, legend: lg, weight: 1}}}
	return f.save(path)
}

// Colors of the runs panel's band and mean.
var (
	bandColor = rgb(0xc6dbef)
	meanColor = rgb(0xd62728)
)

// meanStyle is the dashed line at a summary's mean.
func meanStyle() draw.LineStyle {
	return draw.LineStyle{Color: meanColor, Width: vg.Points(1.6), Dashes: []vg.Length{vg.Points(5), vg.Points(3)}}
}

// runsPanel is the panel of Runs: a bar per run (in colors(i), or all in
// the first color with colors nil), the mean as a dashed line and iv as a
// band, named in the legend as whose ("receivers' mean 9.41 Gbit/s", the
// rate as the printed summary writes it) and ciName. The axis reaches top (0: the
// highest of the rates, the mean and the interval) and above.
func runsPanel(rates []float64, mean float64, iv *Interval, whose, ciName string, colors func(i int) color.Color, top float64, ax runsAxis) (*gplot.Plot, gplot.Legend) {
	top = max(top, runsTop(rates, mean, iv))
	div, unit := ax.scale(top)
	prec := 2
	if top/div >= 10 {
		prec = 1
	}
	if top/div >= 100 {
		prec = 0
	}
	if whose != "" {
		// As the summary line writes its rates.
		prec, whose = 2, whose+" "
	}

	n := len(rates)
	p := gridPlot("run", ax.name+" ("+unit+")", false, true)
	lg := newLegend()
	lg.Left = false // the legend column is right of the data anyway
	const half = 0.34
	// The band first, so that the bars and the mean are drawn over it.
	if iv != nil {
		band := &bars{thumb: bandColor, rects: []rect{{x0: 0.4, x1: float64(n) + 0.6, y0: iv.Low / div, y1: iv.High / div, fill: bandColor}}}
		p.Add(band)
		lg.Add(whose+ciName, band)
	}
	b := &bars{thumb: palette[0]}
	var labels notes
	sty := textStyle(sans, noteSize, black)
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YBottom
	for i, v := range rates {
		x := float64(i + 1)
		c := palette[0]
		if colors != nil {
			c = colors(i)
		}
		b.rects = append(b.rects, rect{x0: x - half, x1: x + half, y0: 0, y1: v / div, fill: c})
		if n <= 20 { // more labels than that would overlap
			labels = append(labels, note{x: x, y: v / div, dy: vg.Points(2), text: fmt.Sprintf("%.*f", prec, v/div), sty: sty, box: true})
		}
	}
	p.Add(b, labels)
	if colors == nil {
		lg.Add("each run", b)
	}
	m := hline{x0: 0.4, x1: float64(n) + 0.6, y: mean / div, sty: meanStyle()}
	p.Add(m)
	lg.Add(fmt.Sprintf("%smean %s", whose, ax.show(mean)), vlines{sty: m.sty})
	p.X.Min, p.X.Max = 0.4, float64(n)+0.6
	p.X.Tick.Marker = runTicks{n: n}
	p.Y.Min, p.Y.Max = 0, top/div*1.15
	return p, lg
}

// runsAxis is what a runs panel's values are: the axis's name, its unit
// for a top value (the divisor and the unit's name), and a value as the
// printed summary writes it.
type runsAxis struct {
	name  string
	scale func(top float64) (div float64, unit string)
	show  func(v float64) string
}

// rateAxis: values in bit/s.
var rateAxis = runsAxis{name: "throughput", scale: rateUnit, show: units.SIRate}

// runsTop is the highest of rates, the mean and the interval.
func runsTop(rates []float64, mean float64, iv *Interval) float64 {
	top := mean
	for _, v := range rates {
		top = max(top, v)
	}
	if iv != nil {
		top = max(top, iv.High)
	}
	return top
}

// runTicks labels every run 1..n on the x axis, so that no bar is left
// without its number; past 20 runs the labels would overlap, and whole
// numbers at a nice step are used instead.
type runTicks struct{ n int }

func (r runTicks) Ticks(lo, hi float64) []gplot.Tick {
	if r.n > 20 {
		return intTicks{}.Ticks(lo, hi)
	}
	ticks := make([]gplot.Tick, 0, r.n)
	for k := 1; k <= r.n; k++ {
		ticks = append(ticks, gplot.Tick{Value: float64(k), Label: strconv.Itoa(k)})
	}
	return ticks
}
