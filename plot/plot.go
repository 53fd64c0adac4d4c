// Package plot draws blast's results as pictures with gonum.org/v1/plot: a
// client run's throughput per stream over time with its congestion windows
// and retransmissions (ClientRun), a comparison's bar per backend with its
// interval and CPU cost (Compare), a latency run's histogram and CDF with
// its percentiles (Latency), and a doctor run's tests (Doctor).
//
// Each function writes one file, SVG or PNG as its name ends (anything else
// is ErrFormat), WidthInches by HeightInches: a PNG is PixelWidth by
// PixelHeight. Every axis names its unit, the title says what ran where,
// and legends sit beside the data, never on it. The functions only read
// their result; they write nothing but the file.
package plot

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	xfont "golang.org/x/image/font"
	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/blastnet/blast/units"
)

// The size of every picture: 8 by 6 inches, a PNG at 150 dots per inch.
const (
	WidthInches  = 8
	HeightInches = 6
	DPI          = 150
	PixelWidth   = WidthInches * DPI  // 1200
	PixelHeight  = HeightInches * DPI // 900
)

// ErrFormat is the error for a file name that ends neither in .svg nor in
// .png; the functions return it wrapped, before they draw anything.
var ErrFormat = errors.New("the plot file name must end in .svg or .png")

// Interval is a confidence interval of a throughput, in bit/s.
type Interval struct{ Low, High float64 }

// CheckPath reports whether path names a format this package writes
// (.svg or .png, in any case): nil, or an error wrapping ErrFormat. A
// command can check its --plot flag with it before it runs a test.
func CheckPath(path string) error {
	_, err := format(path)
	return err
}

func format(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".svg", ".png":
		return ext[1:], nil
	case "":
		return "", fmt.Errorf("plot: %q has no extension: %w", path, ErrFormat)
	default:
		return "", fmt.Errorf("plot: %q: unknown format %s: %w", path, ext, ErrFormat)
	}
}

// Text sizes, in points, at the 8x6 inch page size.
const (
	titleSize   = 13
	labelSize   = 11
	tickSize    = 10
	legendSize  = 10
	captionSize = 9
	noteSize    = 9
)

var (
	sans     = font.Font{Typeface: "Liberation", Variant: "Sans"}
	sansBold = font.Font{Typeface: "Liberation", Variant: "Sans", Weight: xfont.WeightBold}

	black     = color.Gray{0}
	gray      = color.Gray{90}
	lightGray = color.Gray{0xdd}
	gridColor = color.Gray{0xe6}

	// palette is matplotlib's tab10: distinct hues that read on white.
	palette = []color.Color{
		rgb(0x1f77b4), rgb(0xff7f0e), rgb(0x2ca02c), rgb(0xd62728), rgb(0x9467bd),
		rgb(0x8c564b), rgb(0xe377c2), rgb(0x7f7f7f), rgb(0xbcbd22), rgb(0x17becf),
	}
)

func rgb(v uint32) color.Color {
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}

// textStyle is a style in the package's font.
func textStyle(f font.Font, size float64, c color.Color) text.Style {
	f.Size = vg.Points(size)
	return text.Style{Color: c, Font: f, Handler: gplot.DefaultTextHandler}
}

// newPlot is a plot in the package's fonts with a light grid and the given
// axis labels.
func newPlot(xlabel, ylabel string) *gplot.Plot { return gridPlot(xlabel, ylabel, true, true) }

// gridPlot is newPlot with grid lines across the x axis (vertical), the y
// axis (horizontal), both or neither.
func gridPlot(xlabel, ylabel string, vertical, horizontal bool) *gplot.Plot {
	p := gplot.New()
	for _, a := range []*gplot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = textStyle(sans, labelSize, black).Font
		a.Tick.Label.Font = textStyle(sans, tickSize, black).Font
		a.Tick.Marker = niceTicks{}
		a.Label.Padding = vg.Points(3)
	}
	p.X.Label.Text, p.Y.Label.Text = xlabel, ylabel
	g := &plotter.Grid{}
	if vertical {
		g.Vertical = draw.LineStyle{Color: gridColor, Width: vg.Points(0.6)}
	}
	if horizontal {
		g.Horizontal = draw.LineStyle{Color: gridColor, Width: vg.Points(0.6)}
	}
	p.Add(g)
	return p
}

// newLegend is a legend in the package's fonts, entries from the top.
func newLegend() gplot.Legend {
	l := gplot.NewLegend()
	l.TextStyle = textStyle(sans, legendSize, black)
	l.Top, l.Left = true, true
	l.ThumbnailWidth = vg.Points(18)
	l.Padding = vg.Points(2)
	return l
}

// panel is one plot of a figure with its legend, drawn beside its data.
type panel struct {
	p      *gplot.Plot
	legend gplot.Legend
	weight float64 // share of the figure's height (or width, side by side)
	// noLegend: the legend column stays empty for this panel.
	noLegend bool
	// shortY replaces the y axis label when the data area is too low
	// for it.
	shortY string
}

// figure is the whole picture: a title, panels stacked (or side by side)
// with their data areas aligned, and caption lines at the bottom.
type figure struct {
	title      string
	titleLines int // the most lines the title may take (0: 2)
	panels     []*panel
	sideBySide bool
	caption    []string
}

// save draws f into path, in the format its extension names. The file is
// written whole or not at all.
func (f *figure) save(path string) error {
	ext, err := format(path)
	if err != nil {
		return err
	}
	w, h := vg.Length(WidthInches)*vg.Inch, vg.Length(HeightInches)*vg.Inch
	var buf bytes.Buffer
	switch ext {
	case "png":
		c := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(DPI))
		f.draw(draw.New(c))
		if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&buf); err != nil {
			return fmt.Errorf("plot: encode %s: %w", path, err)
		}
	case "svg":
		// The text as glyph outlines, the same in every viewer (see
		// outlineCanvas).
		c := &outlineCanvas{Canvas: vgsvg.New(w, h)}
		f.draw(draw.New(c))
		if _, err := c.WriteTo(&buf); err != nil {
			return fmt.Errorf("plot: encode %s: %w", path, err)
		}
		out, err := c.finish(buf.Bytes())
		if err != nil {
			return fmt.Errorf("plot: encode %s: %w", path, err)
		}
		buf.Reset()
		buf.Write(out)
	}
	out := buf.Bytes()
	if ext == "svg" {
		// The invisible copies of the texts in whatever sans-serif font
		// the viewer has: textLength holds them to the outlines' widths.
		out = bytes.ReplaceAll(out, []byte("font-family:Liberation Sans;"),
			[]byte("font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"))
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}

// Spacing, in points.
const (
	margin    = 10 // around the figure
	titleGap  = 8  // under the title
	panelGap  = 12 // between panels
	legendGap = 8  // between a data area and its legend
)

func (f *figure) draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	c = draw.Crop(c, margin, -margin, margin, -margin)
	width := c.Max.X - c.Min.X

	if f.title != "" {
		// The title on one line, a point or two smaller if that makes
		// it fit; else wrapped.
		var sty text.Style
		for size := titleSize; size >= titleSize-2; size-- {
			sty = textStyle(sansBold, float64(size), black)
			if sty.Width(f.title) <= width {
				break
			}
		}
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
		n := f.titleLines
		if n == 0 {
			n = 2
		}
		lines := wrap(f.title, sty, width, n)
		for _, l := range lines {
			c.FillText(sty, vg.Point{X: c.Center().X, Y: c.Max.Y}, l)
			c.Max.Y -= sty.Height(l)
		}
		c.Max.Y -= titleGap
	}
	if len(f.caption) > 0 {
		sty := textStyle(sans, captionSize, gray)
		sty.YAlign = draw.YBottom
		var lines []string
		for _, p := range f.caption {
			lines = append(lines, wrap(p, sty, width, 3)...)
		}
		// Top down, so that the file holds the lines in reading order.
		var h vg.Length
		for _, l := range lines {
			h += sty.Height(l) * 1.1
		}
		y := c.Min.Y + h
		for _, l := range lines {
			y -= sty.Height(l) * 1.1
			c.FillText(sty, vg.Point{X: c.Min.X, Y: y}, l)
		}
		c.Min.Y += h + vg.Points(4)
	}

	// One legend column on the right, as wide as the widest legend.
	var legendW vg.Length
	for _, p := range f.panels {
		if !p.noLegend {
			r := p.legend.Rectangle(c)
			legendW = max(legendW, r.Max.X-r.Min.X)
		}
	}
	if legendW > 0 {
		legendW += legendGap
		c.Max.X -= legendW
	}

	tiles := f.tiles(c)
	for i, p := range f.panels {
		d := p.p.DataCanvas(tiles[i])
		if l := &p.p.Y.Label; p.shortY != "" && l.TextStyle.Width(l.Text) > d.Max.Y-d.Min.Y {
			l.Text = p.shortY
		}
	}
	// Align the data areas: the same left and right edges for stacked
	// panels, the same top and bottom for panels side by side.
	var lo, hi vg.Length
	data := make([]draw.Canvas, len(tiles))
	for i, t := range tiles {
		d := f.panels[i].p.DataCanvas(t)
		if f.sideBySide {
			lo, hi = max(lo, d.Min.Y-t.Min.Y), max(hi, t.Max.Y-d.Max.Y)
		} else {
			lo, hi = max(lo, d.Min.X-t.Min.X), max(hi, t.Max.X-d.Max.X)
		}
		data[i] = d
	}
	for i, t := range tiles {
		d := data[i]
		if f.sideBySide {
			tiles[i] = draw.Crop(t, 0, 0, lo-(d.Min.Y-t.Min.Y), -(hi - (t.Max.Y - d.Max.Y)))
		} else {
			tiles[i] = draw.Crop(t, lo-(d.Min.X-t.Min.X), -(hi - (t.Max.X - d.Max.X)), 0, 0)
		}
	}
	for i, t := range tiles {
		p := f.panels[i]
		p.p.Draw(t)
		if p.noLegend {
			continue
		}
		d := p.p.DataCanvas(t)
		lc := draw.Crop(d, 0, 0, 0, 0)
		lc.Min.X, lc.Max.X = d.Max.X+legendGap, d.Max.X+legendW
		if f.sideBySide {
			lc.Min.X, lc.Max.X = c.Max.X+legendGap, c.Max.X+legendW
		}
		p.legend.Draw(lc)
	}
}

// tiles splits c among the panels so that their data areas (not their
// axes) share the height, or the width side by side, by their weights.
func (f *figure) tiles(c draw.Canvas) []draw.Canvas {
	n := len(f.panels)
	var sum float64
	// What each panel spends on axes, measured on an even split.
	over := make([]vg.Length, n)
	var overSum vg.Length
	for i, p := range f.panels {
		sum += p.weight
		t := c
		if f.sideBySide {
			t.Max.X = c.Min.X + (c.Max.X-c.Min.X)/vg.Length(n)
			d := p.p.DataCanvas(t)
			over[i] = (t.Max.X - t.Min.X) - (d.Max.X - d.Min.X)
		} else {
			t.Min.Y = c.Max.Y - (c.Max.Y-c.Min.Y)/vg.Length(n)
			d := p.p.DataCanvas(t)
			over[i] = (t.Max.Y - t.Min.Y) - (d.Max.Y - d.Min.Y)
		}
		overSum += over[i]
	}
	out := make([]draw.Canvas, n)
	if f.sideBySide {
		avail := c.Max.X - c.Min.X - vg.Length(n-1)*panelGap - overSum
		x := c.Min.X
		for i, p := range f.panels {
			w := avail*vg.Length(p.weight/sum) + over[i]
			out[i] = draw.Crop(c, x-c.Min.X, -(c.Max.X - (x + w)), 0, 0)
			x += w + panelGap
		}
		return out
	}
	avail := c.Max.Y - c.Min.Y - vg.Length(n-1)*panelGap - overSum
	y := c.Max.Y
	for i, p := range f.panels {
		h := avail*vg.Length(p.weight/sum) + over[i]
		out[i] = draw.Crop(c, 0, 0, y-h-c.Min.Y, -(c.Max.Y - y))
		y -= h + panelGap
	}
	return out
}

// wrap breaks s into lines no wider than width, at most maxLines of
// them; the last line ends in "…" if s did not fit.
func wrap(s string, sty text.Style, width vg.Length, maxLines int) []string {
	var lines []string
	line := ""
	words := strings.Fields(s)
	for i, w := range words {
		try := w
		if line != "" {
			try = line + " " + w
		}
		if sty.Width(try) <= width || line == "" {
			line = try
			continue
		}
		if len(lines) == maxLines-1 {
			return append(lines, fit(strings.Join(append([]string{line}, words[i:]...), " "), sty, width))
		}
		lines = append(lines, line)
		line = w
	}
	if line != "" {
		lines = append(lines, fit(line, sty, width))
	}
	return lines
}

// fit shortens s with "…" until it is no wider than width.
func fit(s string, sty text.Style, width vg.Length) string {
	if sty.Width(s) <= width {
		return s
	}
	r := []rune(s)
	for len(r) > 1 {
		r = r[:len(r)-1]
		if t := strings.TrimRight(string(r), " ,;:") + "…"; sty.Width(t) <= width {
			return t
		}
	}
	return "…"
}

// niceTicks labels a linear axis at about five round values (1, 2, 2.5
// or 5 times a power of ten), with unlabelled minor ticks between.
type niceTicks struct{}

func (niceTicks) Ticks(lo, hi float64) []gplot.Tick {
	if !(hi > lo) {
		return oneNotation([]gplot.Tick{{Value: lo, Label: formatNum(lo)}})
	}
	step := niceStep((hi - lo) / 5)
	var ticks []gplot.Tick
	first := math.Ceil(lo/step-1e-9) * step
	for v := first; v <= hi+step*1e-9; v += step {
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		ticks = append(ticks, gplot.Tick{Value: v, Label: formatNum(v)})
	}
	minor := step / 5
	if m := step / math.Pow10(int(math.Floor(math.Log10(step)))); math.Abs(m-2) < 1e-9 {
		minor = step / 4
	}
	for v := math.Floor(lo/minor) * minor; v <= hi; v += minor {
		if v >= lo && math.Abs(math.Remainder(v, step)) > minor/2 {
			ticks = append(ticks, gplot.Tick{Value: v})
		}
	}
	return oneNotation(ticks)
}

// niceStep rounds x up to 1, 2, 2.5 or 5 times a power of ten.
func niceStep(x float64) float64 {
	if x <= 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return 1
	}
	p := math.Pow10(int(math.Floor(math.Log10(x))))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= x*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// logTicks labels a log axis at 1, 2 and 5 times each power of ten, with
// minor ticks at the other integers; wide ranges label powers of ten only.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []gplot.Tick {
	if lo <= 0 {
		lo = hi / 1e3
	}
	decades := math.Log10(hi / lo)
	var ticks []gplot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow10(int(e)) <= hi; e++ {
		p := math.Pow10(int(e))
		for m := 1.0; m < 10; m++ {
			v := m * p
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := gplot.Tick{Value: v}
			if m == 1 || (decades < 3 && (m == 2 || m == 5)) || (decades < 0.7) {
				t.Label = formatNum(v)
			}
			ticks = append(ticks, t)
		}
	}
	return oneNotation(ticks)
}

// powTicks labels a linear axis of log10 values with the values, as
// logTicks would on a log axis.
type powTicks struct{}

func (powTicks) Ticks(lo, hi float64) []gplot.Tick {
	t := logTicks{}.Ticks(math.Pow(10, lo), math.Pow(10, hi))
	for i := range t {
		t[i].Value = math.Log10(t[i].Value)
	}
	return t
}

// formatNum prints a tick value with as few digits as it needs, plain
// (oneNotation then picks one notation for the whole axis).
func formatNum(v float64) string { return plainNum(v) }

// plainNum is v in plain decimals, as few as it needs: "0.25", "100000".
// Ten figures at most, so that a sum's rounding (0.30000000000000004)
// does not show.
func plainNum(v float64) string {
	if v == 0 {
		return "0"
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 10, 64), 64)
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// siPrefixes are the SI prefixes siNum writes, by power of a thousand
// from 10^-9.
var siPrefixes = []string{"n", "µ", "m", "", "k", "M", "G", "T", "P"}

// siNum is v with an SI prefix, its figures plain: "500", "100k", "1.5M",
// "20m".
func siNum(v float64) string {
	if v == 0 {
		return "0"
	}
	e := int(math.Floor(math.Log10(math.Abs(v))/3+1e-9)) * 3
	e = min(max(e, -9), 15)
	m := v / math.Pow10(e)
	if math.Abs(m) >= 1000*(1-1e-9) && e < 15 { // rounding: 999.9999999k is 1M
		e += 3
		m = v / math.Pow10(e)
	}
	return plainNum(m) + siPrefixes[e/3+3]
}

// oneNotation labels an axis's labelled ticks in one notation, chosen for
// the axis, not for each tick: plain decimals when every labelled value
// reads so in at most eight characters and lies from 0.001 to below a
// million ("0.25", "50", "100000"), else SI prefixes on all of them ("1",
// "10k", "100k", "1M"). An axis never mixes "1e+06" with "100000".
// Unlabelled (minor) ticks stay unlabelled.
func oneNotation(ticks []gplot.Tick) []gplot.Tick {
	plain := true
	for _, t := range ticks {
		if t.Label == "" || t.Value == 0 {
			continue
		}
		a := math.Abs(t.Value)
		if a >= 1e6 || a < 1e-3 || len(plainNum(t.Value)) > 8 {
			plain = false
		}
	}
	for i, t := range ticks {
		switch {
		case t.Label == "":
		case plain:
			ticks[i].Label = plainNum(t.Value)
		default:
			ticks[i].Label = siNum(t.Value)
		}
	}
	return ticks
}

// rateUnit is the unit a throughput axis up to maxBps reads best in.
func rateUnit(maxBps float64) (div float64, name string) { return units.SIUnit(maxBps) }

// bars are rectangles in data coordinates, each with its own color.
type bars struct {
	rects []rect
	thumb color.Color // the legend's swatch
}

type rect struct {
	x0, x1, y0, y1 float64
	fill           color.Color
}

func (b *bars) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, r := range b.rects {
		pts := []vg.Point{
			{X: trX(r.x0), Y: trY(r.y0)}, {X: trX(r.x1), Y: trY(r.y0)},
			{X: trX(r.x1), Y: trY(r.y1)}, {X: trX(r.x0), Y: trY(r.y1)},
		}
		c.FillPolygon(r.fill, c.ClipPolygonXY(pts))
	}
}

func (b *bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, r := range b.rects {
		xmin, xmax = min(xmin, r.x0, r.x1), max(xmax, r.x0, r.x1)
		ymin, ymax = min(ymin, r.y0, r.y1), max(ymax, r.y0, r.y1)
	}
	return
}

func (b *bars) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	h := r.Max.Y - r.Min.Y
	pts := []vg.Point{
		{X: r.Min.X, Y: r.Min.Y + h*0.15}, {X: r.Max.X, Y: r.Min.Y + h*0.15},
		{X: r.Max.X, Y: r.Max.Y - h*0.15}, {X: r.Min.X, Y: r.Max.Y - h*0.15},
	}
	c.FillPolygon(b.thumb, pts)
}

// notes are texts placed at data coordinates, moved by an offset in
// points; they do not widen the axes.
type notes []note

type note struct {
	x, y   float64
	dx, dy vg.Length
	text   string
	sty    text.Style
	// box fills a white box behind the text, so it reads over lines.
	box bool
}

func (n notes) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, t := range n {
		pt := vg.Point{X: trX(t.x) + t.dx, Y: trY(t.y) + t.dy}
		if t.box {
			r := t.sty.Rectangle(t.text).Add(pt)
			pad := vg.Points(1.5)
			r.Min.X, r.Min.Y, r.Max.X, r.Max.Y = r.Min.X-pad, r.Min.Y-pad, r.Max.X+pad, r.Max.Y+pad
			c.SetColor(color.White)
			c.Fill(r.Path())
		}
		c.FillText(t.sty, pt, t.text)
	}
}

// vlines are vertical lines across the data area at x values.
type vlines struct {
	xs  []float64
	sty draw.LineStyle
}

func (v vlines) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, _ := p.Transforms(&c)
	for _, x := range v.xs {
		if px := trX(x); c.ContainsX(px) {
			c.StrokeLine2(v.sty, px, c.Min.Y, px, c.Max.Y)
		}
	}
}

func (v vlines) Thumbnail(c *draw.Canvas) {
	y := (c.Min.Y + c.Max.Y) / 2
	c.StrokeLine2(v.sty, c.Min.X, y, c.Max.X, y)
}

// errBars are horizontal error bars: from lo to hi at y, with caps.
type errBars struct {
	bars []errBar
	sty  draw.LineStyle
	cap  vg.Length
}

type errBar struct{ y, lo, hi float64 }

func (e errBars) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, b := range e.bars {
		y, x0, x1 := trY(b.y), trX(b.lo), trX(b.hi)
		c.StrokeLine2(e.sty, x0, y, x1, y)
		c.StrokeLine2(e.sty, x0, y-e.cap/2, x0, y+e.cap/2)
		c.StrokeLine2(e.sty, x1, y-e.cap/2, x1, y+e.cap/2)
	}
}

func (e errBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, b := range e.bars {
		xmin, xmax = min(xmin, b.lo), max(xmax, b.hi)
		ymin, ymax = min(ymin, b.y), max(ymax, b.y)
	}
	return
}

func (e errBars) Thumbnail(c *draw.Canvas) {
	y := (c.Min.Y + c.Max.Y) / 2
	x0, x1 := c.Min.X+vg.Points(2), c.Max.X-vg.Points(2)
	c.StrokeLine2(e.sty, x0, y, x1, y)
	c.StrokeLine2(e.sty, x0, y-e.cap/2, x0, y+e.cap/2)
	c.StrokeLine2(e.sty, x1, y-e.cap/2, x1, y+e.cap/2)
}

// line is a polyline of (x, y) points in a color and width.
func line(xy plotter.XYs, c color.Color, width float64) *plotter.Line {
	l := &plotter.Line{XYs: xy}
	l.LineStyle = draw.LineStyle{Color: c, Width: vg.Points(width)}
	return l
}

// Compile-time checks of the plotters' interfaces.
var (
	_ gplot.Plotter     = (*bars)(nil)
	_ gplot.DataRanger  = (*bars)(nil)
	_ gplot.Thumbnailer = (*bars)(nil)
	_ gplot.Plotter     = notes(nil)
	_ gplot.Plotter     = vlines{}
	_ gplot.Thumbnailer = vlines{}
	_ gplot.Plotter     = errBars{}
	_ gplot.DataRanger  = errBars{}
	_ gplot.Plotter     = hline{}
)

// maxLinearSpan is how many times the largest positive value of a bar
// chart's axis may be the smallest on a linear axis; past it the axis is
// logarithmic, so that a 95 Mbit/s bar stays a bar beside 12.9 Gbit/s.
const maxLinearSpan = 30

// axisScale places a bar chart's values on its value axis: linear from
// 0, in units of div, or log10 of the values (in units of div, the axis
// labelled with the values by powTicks), the bars standing on a floor at
// least half a decade below the smallest.
type axisScale struct {
	log   bool
	div   float64
	floor float64 // log: the bars' base, a log10
}

// newScale is the scale for vals: logarithmic when their positive values
// span more than maxLinearSpan times. A linear axis is in units of div,
// a logarithmic one in units of logDiv.
func newScale(vals []float64, div, logDiv float64) axisScale {
	lo, hi := math.Inf(1), 0.0
	for _, v := range vals {
		if v > 0 {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if hi > 0 && hi/lo > maxLinearSpan {
		return axisScale{log: true, div: logDiv, floor: math.Floor(math.Log10(lo/logDiv) - 0.5)}
	}
	return axisScale{div: div}
}

// at is where v sits on the axis.
func (s axisScale) at(v float64) float64 {
	if !s.log {
		return v / s.div
	}
	if v <= 0 {
		return s.floor
	}
	return max(math.Log10(v/s.div), s.floor)
}

// base is where the bars start: 0, or the log axis's floor.
func (s axisScale) base() float64 {
	if s.log {
		return s.floor
	}
	return 0
}

// fit gives a the range from the base to top with room (top at 1/room of
// the axis's length, the rest for labels) and, on a log scale, its ticks.
func (s axisScale) fit(a *gplot.Axis, top, room float64) {
	a.Min = s.base()
	a.Max = s.base() + max(s.at(top)-s.base(), 1e-9)*room
	if s.log {
		a.Tick.Marker = powTicks{}
	}
}

// rateScale is the scale of a throughput axis for rates (bit/s) and its
// label: linear in the unit the largest reads best in, or logarithmic in
// bit/s with SI ticks (100M, 1G, 10G).
func rateScale(rates []float64) (axisScale, string) {
	top := 0.0
	for _, v := range rates {
		top = max(top, v)
	}
	div, unit := rateUnit(top)
	s := newScale(rates, div, 1)
	if s.log {
		return s, "throughput (bit/s, log scale)"
	}
	return s, "throughput (" + unit + ")"
}
