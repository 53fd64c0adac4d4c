package plot

import (
	"errors"
	"fmt"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/blastnet/blast/doctor"
	"github.com/blastnet/blast/units"
)

// Doctor draws a doctor run into path: one bar per test that measured a
// rate (tcp upload, tcp download, udp upload) labelled with its goodput,
// its retransmits or lost datagrams, and for UDP the rate it aimed at.
// The title carries the verdict, shortened to fit; the caption has it
// whole, with the round-trip times and the tests that failed.
func Doctor(path string, rep *doctor.Report) error {
	if _, err := format(path); err != nil {
		return err
	}
	if rep == nil {
		return errors.New("plot: no report to draw")
	}
	var tests []doctor.Test
	var failed, rtt []string
	top := 0.0
	for _, t := range rep.Tests {
		switch {
		case t.Err != "":
			failed = append(failed, fmt.Sprintf("%s (%s)", t.Name, oneLine(t.Err)))
		case t.RTT != nil:
			rtt = append(rtt, fmt.Sprintf("round trip p50 %s, p99 %s", fmtDur(t.RTT.P50), fmtDur(t.RTT.P99)))
		case t.Bps > 0:
			tests = append(tests, t)
			top = max(top, t.Bps, t.RateBps)
		}
	}
	if len(tests) == 0 {
		return fmt.Errorf("plot %s: the doctor run measured no rate to draw", path)
	}
	var rates []float64
	for _, t := range tests {
		rates = append(rates, t.Bps, t.RateBps)
	}
	sc, ylabel := rateScale(rates)

	p := gridPlot("", ylabel, false, true)
	names := make([]string, len(tests))
	b := &bars{thumb: palette[0]}
	var labels notes
	var targets []rect
	value := textStyle(sansBold, noteSize+1, black)
	value.XAlign, value.YAlign = draw.XCenter, draw.YBottom
	detail := textStyle(sans, noteSize, gray)
	detail.XAlign, detail.YAlign = draw.XCenter, draw.YBottom
	const half = 0.3
	for i, t := range tests {
		names[i] = t.Name
		x, v := float64(i), sc.at(t.Bps)
		c := palette[0]
		if strings.HasPrefix(t.Name, "udp") {
			c = palette[1]
		}
		b.rects = append(b.rects, rect{x0: x - half, x1: x + half, y0: sc.base(), y1: v, fill: c})
		above := v // where the labels start
		if t.RateBps > 0 {
			// The UDP test's target, a dark line across the bar.
			r := sc.at(t.RateBps)
			targets = append(targets, rect{x0: x - half*1.15, x1: x + half*1.15, y0: r, y1: r, fill: black})
			above = max(above, r)
		}
		// Above the bar, bottom up: the details, then the goodput.
		var lines []string
		switch {
		case t.Sent > 0:
			lines = append(lines, fmt.Sprintf("%.2f%% of %d datagrams lost", 100*float64(t.Lost)/float64(t.Sent), t.Sent))
			if t.RateBps > 0 {
				lines = append(lines, "target "+fmtRate(t.RateBps))
			}
		case strings.HasPrefix(t.Name, "tcp"):
			lines = append(lines, fmt.Sprintf("%d retransmits", t.Retransmits))
		}
		dy := vg.Points(4)
		for _, l := range lines {
			labels = append(labels, note{x: x, y: above, dy: dy, text: l, sty: detail})
			dy += detail.Height(l) + vg.Points(1)
		}
		labels = append(labels, note{x: x, y: above, dy: dy + vg.Points(1), text: fmtRate(t.Bps), sty: value})
	}
	p.Add(b)
	for _, r := range targets {
		p.Add(hline{x0: r.x0, x1: r.x1, y: r.y0, sty: draw.LineStyle{Color: black, Width: vg.Points(2), Dashes: []vg.Length{vg.Points(4), vg.Points(2)}}})
	}
	p.Add(labels)
	p.NominalX(names...)
	p.X.Tick.Label.Font = textStyle(sans, labelSize, black).Font
	p.X.Min, p.X.Max = -0.6, float64(len(tests))-0.4
	// Room above the tallest bar for its label lines.
	sc.fit(&p.Y, top, 1.25)

	host := rep.Host
	if rep.Port != 0 && rep.Port != 5201 {
		host = fmt.Sprintf("%s port %d", host, rep.Port)
	}
	verdict := rep.Verdict
	if verdict == "" {
		verdict = "no verdict"
	}
	caption := []string{"Verdict: " + verdict}
	var more []string
	more = append(more, rtt...)
	if len(failed) > 0 {
		more = append(more, "failed: "+strings.Join(failed, "; "))
	}
	if len(targets) > 0 {
		more = append(more, "dashed line: the UDP test's target rate")
	}
	if sc.log {
		more = append(more, fmt.Sprintf("the rate axis is logarithmic: the rates span more than %dx", maxLinearSpan))
	}
	if len(more) > 0 {
		caption = append(caption, sentence(more...))
	}
	f := &figure{title: fmt.Sprintf("blast doctor %s: %s", host, verdict), titleLines: 1, caption: caption,
		panels: []*panel{{p: p, weight: 1, noLegend: true}}}
	return f.save(path)
}

// fmtRate is a rate with three figures at most: "9.41 Gbit/s", "95 Mbit/s".
func fmtRate(bps float64) string { return units.BitsShort(bps) }

// hline is a horizontal line segment in data coordinates.
type hline struct {
	x0, x1, y float64
	sty       draw.LineStyle
}

func (h hline) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	c.StrokeLine2(h.sty, trX(h.x0), trY(h.y), trX(h.x1), trY(h.y))
}
