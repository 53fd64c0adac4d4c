package plot

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/blastnet/blast/mesh"
)

// MaxMeshNodes is the most senders or receivers Mesh draws a matrix of.
const MaxMeshNodes = 250

// maxMeshPanels is the most matrices Mesh draws side by side.
const maxMeshPanels = 2

// maxMeshValues is the most rows (and columns) whose cells carry their
// value.
const maxMeshValues = 16

// Mesh draws a mesh Document into path as a heatmap of goodput: senders
// on the y axis, receivers on the x axis, one colour scale for every
// panel (red slow, blue fast) with its unit. Pairs not measured and the
// diagonal are grey, failed tests an X, the outlier cells of
// mesh.Analyze outlined; up to 16 nodes each cell has its value. Each
// (proto, dir, phase) matrix is a panel, the first two side by side; the
// caption names any other, the outlier nodes and the failures.
func Mesh(path string, d *mesh.Document) error {
	if _, err := format(path); err != nil {
		return err
	}
	if d == nil {
		return errors.New("plot: no mesh document to draw")
	}
	a := mesh.Analyze(d)
	if len(a.Matrices) == 0 {
		return fmt.Errorf("plot %s: the mesh document has no tests to draw", path)
	}
	shown := a.Matrices
	if len(shown) > maxMeshPanels {
		shown = shown[:maxMeshPanels]
	}
	top, ref := 0.0, 0.0
	for _, m := range shown {
		if len(m.Senders) > MaxMeshNodes || len(m.Receivers) > MaxMeshNodes {
			return fmt.Errorf("plot %s: %s has %d senders and %d receivers, more than the %d a heatmap can show: use blast mesh report --csv",
				path, m.Name(), len(m.Senders), len(m.Receivers), MaxMeshNodes)
		}
		ref = max(ref, m.Median)
		for _, p := range m.Pairs {
			if !p.Failed() {
				top = max(top, p.Bps)
			}
		}
	}
	div, unit := rateUnit(max(ref, top/10))
	if top == 0 {
		top = div
	}
	scale := top / div
	dec := 2
	if ref/div >= 100 {
		dec = 0
	} else if ref/div >= 10 {
		dec = 1
	}

	// The same short names for every panel.
	var all []string
	seen := map[string]bool{}
	for _, m := range shown {
		for _, n := range append(append([]string(nil), m.Senders...), m.Receivers...) {
			if !seen[n] {
				seen[n] = true
				all = append(all, n)
			}
		}
	}
	short, dropped := mesh.ShortNames(all)
	shortOf := map[string]string{}
	for i, n := range all {
		shortOf[n] = short[i]
	}

	var panels []*panel
	for _, m := range shown {
		p := meshPanel(m, shortOf, div, scale, dec, len(shown))
		if len(shown) > 1 {
			p.Title.Text = m.Name()
			p.Title.TextStyle = textStyle(sansBold, labelSize, black)
			p.Title.TextStyle.XAlign, p.Title.TextStyle.YAlign = draw.XCenter, draw.YTop
			p.Title.Padding = vg.Points(4)
		}
		panels = append(panels, &panel{p: p, weight: 1, noLegend: true})
	}
	panels = append(panels, &panel{p: colorBar(scale, unit), weight: 0.16 * float64(len(shown)), noLegend: true})

	f := &figure{title: mesh.Title(d), sideBySide: true, panels: panels, caption: meshCaption(a, shown, shortOf, dropped)}
	return f.save(path)
}

// meshPanel is one matrix's heatmap.
func meshPanel(m *mesh.Matrix, shortOf map[string]string, div, scale float64, dec, panels int) *gplot.Plot {
	p := gridPlot("to (receiver)", "from (sender)", false, false)
	nr, nc := len(m.Senders), len(m.Receivers)
	h := &heat{values: nr <= maxMeshValues && nc <= maxMeshValues}
	for i := range nr {
		for j := range nc {
			c := heatCell{x: float64(j), y: float64(nr - 1 - i), fill: unmeasured}
			if pr := m.At(i, j); pr != nil && pr.Sender != pr.Receiver {
				switch {
				case pr.Failed():
					c.fill, c.failed = color.White, true
				default:
					c.fill = heatColor(pr.Bps / div / scale)
					c.outlier = pr.Outlier
					c.text = strconv.FormatFloat(pr.Bps/div, 'f', dec, 64)
				}
			}
			h.cells = append(h.cells, c)
		}
	}
	p.Add(h)
	rows := make([]string, nr)
	for i, n := range m.Senders {
		rows[nr-1-i] = shortOf[n]
	}
	cols := make([]string, nc)
	for j, n := range m.Receivers {
		cols[j] = shortOf[n]
	}
	p.NominalX(cols...)
	p.NominalY(rows...)
	p.X.Min, p.X.Max = -0.5, float64(nc)-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(nr)-0.5
	p.X.Tick.Length, p.Y.Tick.Length = vg.Points(2), vg.Points(2)

	// Names as large as the rows (columns) leave room for: the data
	// area is some 330 points high and 420 wide over the panels.
	ySize := min(tickSize, max(4, 0.8*330/float64(nr)))
	xSize := min(tickSize, max(4, 0.8*420/float64(panels)/float64(nc)))
	p.Y.Tick.Label = textStyle(sans, ySize, black)
	p.Y.Tick.Label.XAlign, p.Y.Tick.Label.YAlign = draw.XRight, draw.YCenter
	p.X.Tick.Label = textStyle(sans, xSize, black)
	widest := vg.Length(0)
	for _, c := range cols {
		widest = max(widest, p.X.Tick.Label.Width(c))
	}
	if float64(widest)*float64(nc) > 0.85*420/float64(panels) {
		p.X.Tick.Label.Rotation = math.Pi / 2
		p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	} else {
		p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XCenter, draw.YTop
	}
	return p
}

// heatStops is ColorBrewer's RdYlBu, from slow (dark red) to fast (dark
// blue): it reads in every kind of colour vision, and its pale middle is
// yellow, never the grey of a cell not measured.
var heatStops = []color.RGBA{
	{0xa5, 0x00, 0x26, 0xff}, {0xd7, 0x30, 0x27, 0xff}, {0xf4, 0x6d, 0x43, 0xff}, {0xfd, 0xae, 0x61, 0xff},
	{0xfe, 0xe0, 0x90, 0xff}, {0xff, 0xff, 0xbf, 0xff}, {0xe0, 0xf3, 0xf8, 0xff}, {0xab, 0xd9, 0xe9, 0xff},
	{0x74, 0xad, 0xd1, 0xff}, {0x45, 0x75, 0xb4, 0xff}, {0x31, 0x36, 0x95, 0xff},
}

// unmeasured is the fill of the diagonal and of pairs not measured.
var unmeasured = color.Gray{0xc4}

// heatColor is the colour of t in [0, 1].
func heatColor(t float64) color.RGBA {
	t = min(1, max(0, t))
	x := t * float64(len(heatStops)-1)
	i := min(int(x), len(heatStops)-2)
	f := x - float64(i)
	a, b := heatStops[i], heatStops[i+1]
	mix := func(u, v uint8) uint8 { return uint8(math.Round(float64(u) + f*(float64(v)-float64(u)))) }
	return color.RGBA{mix(a.R, b.R), mix(a.G, b.G), mix(a.B, b.B), 0xff}
}

// dark reports whether white text reads better than black on c.
func dark(c color.Color) bool {
	r, g, b, _ := c.RGBA()
	return 0.299*float64(r)+0.587*float64(g)+0.114*float64(b) < 0.55*0xffff
}

// heat is a matrix of cells, one unit square each around (x, y).
type heat struct {
	cells  []heatCell
	values bool // write each cell's text in it
}

type heatCell struct {
	x, y            float64
	fill            color.Color
	failed, outlier bool
	text            string
}

func (h *heat) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	if len(h.cells) == 0 {
		return
	}
	w := trX(1) - trX(0)
	ht := trY(1) - trY(0)
	gap := min(vg.Points(0.6), w/10, ht/10)
	// The cells' texts in one size that fits every cell.
	size := 0.0
	if h.values {
		widest := ""
		for _, k := range h.cells {
			if len(k.text) > len(widest) {
				widest = k.text
			}
		}
		size = noteSize + 1
		for size >= 5 {
			sty := textStyle(sans, size, black)
			if sty.Width(widest) <= 0.85*(w-2*gap) && sty.Height(widest) <= 0.7*(ht-2*gap) {
				break
			}
			size -= 0.5
		}
	}
	for _, k := range h.cells {
		x0, x1 := trX(k.x-0.5)+gap/2, trX(k.x+0.5)-gap/2
		y0, y1 := trY(k.y-0.5)+gap/2, trY(k.y+0.5)-gap/2
		r := vg.Rectangle{Min: vg.Point{X: x0, Y: y0}, Max: vg.Point{X: x1, Y: y1}}
		c.SetColor(k.fill)
		c.Fill(r.Path())
		if k.failed {
			sty := draw.LineStyle{Color: black, Width: max(vg.Points(0.6), min(vg.Points(1.5), w/15))}
			in := min(w, ht) * 0.18
			c.StrokeLine2(sty, x0+in, y0+in, x1-in, y1-in)
			c.StrokeLine2(sty, x0+in, y1-in, x1-in, y0+in)
			c.StrokeLines(draw.LineStyle{Color: gray, Width: vg.Points(0.5)},
				[]vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}, {X: x0, Y: y0}})
		}
		if k.outlier {
			lw := max(vg.Points(0.8), min(vg.Points(2.2), w/8))
			in := lw / 2
			o := []vg.Point{{X: x0 + in, Y: y0 + in}, {X: x1 - in, Y: y0 + in}, {X: x1 - in, Y: y1 - in}, {X: x0 + in, Y: y1 - in}, {X: x0 + in, Y: y0 + in}}
			c.StrokeLines(draw.LineStyle{Color: black, Width: lw}, o)
		}
		if size >= 5 && k.text != "" {
			col := color.Color(black)
			if dark(k.fill) {
				col = color.White
			}
			sty := textStyle(sans, size, col)
			if k.outlier {
				sty = textStyle(sansBold, size, col)
			}
			sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
			c.FillText(sty, vg.Point{X: (x0 + x1) / 2, Y: (y0 + y1) / 2}, k.text)
		}
	}
}

func (h *heat) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, k := range h.cells {
		xmin, xmax = min(xmin, k.x-0.5), max(xmax, k.x+0.5)
		ymin, ymax = min(ymin, k.y-0.5), max(ymax, k.y+0.5)
	}
	return
}

// colorBar is the colour scale from 0 to top, its values to the right of
// the bar and the unit beside them.
func colorBar(top float64, unit string) *gplot.Plot {
	p := gridPlot("", "", false, false)
	for _, a := range []*gplot.Axis{&p.X, &p.Y} {
		a.Tick.Marker = gplot.ConstantTicks(nil)
		a.Tick.Length, a.Width = 0, 0
		a.Padding = 0
	}
	p.X.Min, p.X.Max = 0, 1
	p.Y.Min, p.Y.Max = 0, top
	const barW = 0.3
	b := &bars{}
	const steps = 120
	for i := range steps {
		y0, y1 := top*float64(i)/steps, top*float64(i+1)/steps
		b.rects = append(b.rects, rect{x0: 0, x1: barW, y0: y0, y1: y1 + top/steps/2, fill: heatColor((float64(i) + 0.5) / steps)})
	}
	p.Add(b)
	label := textStyle(sans, tickSize, black)
	label.YAlign = draw.YCenter
	var n notes
	var ticks []hline
	for _, t := range (niceTicks{}).Ticks(0, top) {
		if t.Label == "" {
			continue
		}
		n = append(n, note{x: barW, y: t.Value, dx: vg.Points(4), text: t.Label, sty: label})
		ticks = append(ticks, hline{x0: barW * 0.75, x1: barW, y: t.Value, sty: draw.LineStyle{Color: black, Width: vg.Points(0.8)}})
	}
	for _, t := range ticks {
		p.Add(t)
	}
	unitSty := textStyle(sans, labelSize, black)
	unitSty.Rotation = math.Pi / 2
	unitSty.XAlign, unitSty.YAlign = draw.XCenter, draw.YBottom
	n = append(n, note{x: 1, y: top / 2, text: "goodput (" + unit + ")", sty: unitSty})
	p.Add(n)
	return p
}

// meshCaption explains the marks and names what the picture leaves out.
func meshCaption(a mesh.Analysis, shown []*mesh.Matrix, shortOf map[string]string, dropped string) []string {
	var lines []string
	first := "Colour: each test's goodput at the receiver; grey: not measured; X: failed"
	var rules []string
	for _, m := range shown {
		if m.Median > 0 {
			_, unit := m.Unit()
			r := fmt.Sprintf("%s %s (%.0f%% of the median %s %s)", m.Format(m.Threshold), unit, 100*m.Threshold/m.Median, m.Format(m.Median), unit)
			if len(shown) > 1 {
				r = m.Name() + ": " + r
			}
			rules = append(rules, r)
		}
	}
	if len(rules) > 0 {
		first += "; outlined: an outlier cell, below " + strings.Join(rules, "; ")
	}
	lines = append(lines, first+".")
	var found []string
	for _, m := range shown {
		for _, v := range m.Nodes {
			s := shortOf[v.Name]
			switch {
			case v.LowSending && v.LowReceiving:
				s += " low sending and receiving: suspect its NIC or link"
			case v.LowSending:
				s += " low only when sending"
			default:
				s += " low only when receiving"
			}
			if len(shown) > 1 {
				s += " (" + m.Name() + ")"
			}
			found = append(found, s)
		}
	}
	for _, m := range shown {
		if m.Proto != "udp" || !m.HasLoss() {
			continue
		}
		var worst *mesh.Pair
		for _, p := range m.Pairs {
			if !p.Failed() && (worst == nil || p.Loss() > worst.Loss()) {
				worst = p
			}
		}
		found = append(found, fmt.Sprintf("most datagrams lost: %s -> %s, %.3g%%", shortOf[worst.Sender], shortOf[worst.Receiver], 100*worst.Loss()))
	}
	var failed int
	for _, m := range shown {
		failed += len(m.Failed)
	}
	if failed > 0 {
		found = append(found, fmt.Sprintf("%d tests failed", failed))
	}
	if len(a.Unreachable) > 0 {
		var names []string
		for _, n := range a.Unreachable {
			names = append(names, n.Name)
		}
		found = append(found, "unreachable agents: "+strings.Join(names, ", "))
	}
	if len(found) > 0 {
		// Names as they are: no capital letter for the first.
		lines = append(lines, "Outliers and failures: "+strings.Join(found, "; ")+".")
	}
	var notes []string
	if len(a.Matrices) > len(shown) {
		var rest []string
		for _, m := range a.Matrices[len(shown):] {
			rest = append(rest, m.Name())
		}
		notes = append(notes, "also measured, not drawn: "+strings.Join(rest, ", "))
	}
	if dropped != "" {
		notes = append(notes, fmt.Sprintf("names without %q", dropped))
	}
	if len(notes) > 0 {
		lines = append(lines, sentence(notes...))
	}
	return lines
}

// Compile-time checks of the plotters' interfaces.
var (
	_ gplot.Plotter    = (*heat)(nil)
	_ gplot.DataRanger = (*heat)(nil)
)
