package plot

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/blastnet/blast/control/result"
)

// The most streams the throughput legend names one by one, and the cwnd
// legend below it (its colors are the same); more share one entry, so that
// a legend is never taller than its panel.
const (
	maxStreamLegend = 8
	maxCwndLegend   = 4
)

// ClientRun draws a client (or server) run into path: its throughput per
// stream over time with the sum of each direction on top; for TCP the
// congestion window of each stream this side sent on, and the
// retransmissions per interval, below; for UDP the datagrams this side
// found lost per interval, if it received. Omitted intervals are left
// out. The throughput is this side's: bytes sent on a sending stream,
// received on a receiving one.
func ClientRun(path string, r *result.Result) error {
	if _, err := format(path); err != nil {
		return err
	}
	if r == nil {
		return errors.New("plot: no result to draw")
	}
	run := collect(r)
	if len(run.streams) == 0 {
		return fmt.Errorf("plot %s: the run has no measured intervals to draw", path)
	}
	f := &figure{title: clientTitle(r)}

	div, unit := rateUnit(run.maxBps)
	tp := newPlot("", "throughput ("+unit+")")
	tp.Y.Min, tp.Y.Max = 0, max(run.maxBps/div*1.06, 1)
	tl := newLegend()
	many := len(run.streams) > maxStreamLegend
	for i, s := range run.streams {
		xy := make(plotter.XYs, len(s.rate))
		for j, p := range s.rate {
			xy[j] = plotter.XY{X: p.X, Y: p.Y / div}
		}
		width := 1.2
		if many {
			width = 0.8
		}
		if run.count[s.up] == 1 {
			width = 2.2
		}
		l := line(xy, palette[i%len(palette)], width)
		if run.bidir && !s.up {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		tp.Add(l)
		if !many {
			tl.Add(s.name, l)
		}
	}
	if many {
		tl.Add(fmt.Sprintf("streams 1-%d", len(run.streams)), line(nil, palette[0], 1.2))
	}
	for _, up := range []bool{true, false} {
		sum := run.sum[up]
		if len(sum) == 0 || run.count[up] < 2 {
			// One stream is its own sum.
			continue
		}
		xy := make(plotter.XYs, len(sum))
		for j, p := range sum {
			xy[j] = plotter.XY{X: p.X, Y: p.Y / div}
		}
		l := line(xy, black, 2.6)
		name := "SUM"
		if run.bidir {
			name = "SUM upload"
			if !up {
				name, l.Dashes = "SUM download", []vg.Length{vg.Points(6), vg.Points(3)}
			}
		}
		tp.Add(l)
		tl.Add(name, l)
	}
	f.panels = append(f.panels, &panel{p: tp, legend: tl, weight: 3})

	if run.haveCwnd {
		cdiv, cunit := 1024.0, "KiB"
		if run.maxCwnd >= 1<<20 {
			cdiv, cunit = 1<<20, "MiB"
		}
		cp := newPlot("", "cwnd ("+cunit+")")
		cp.Y.Min, cp.Y.Max = 0, max(run.maxCwnd/cdiv*1.06, 1)
		cl := newLegend()
		for i, s := range run.streams {
			if len(s.cwnd) == 0 {
				continue
			}
			xy := make(plotter.XYs, len(s.cwnd))
			for j, p := range s.cwnd {
				xy[j] = plotter.XY{X: p.X, Y: p.Y / cdiv}
			}
			l := line(xy, palette[i%len(palette)], 1.2)
			if run.bidir && !s.up {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
			}
			cp.Add(l)
			if len(run.streams) <= maxCwndLegend {
				cl.Add(s.name+" cwnd", l)
			}
		}
		if len(run.streams) > maxCwndLegend {
			cl.Add("cwnd per stream", line(nil, palette[0], 1.2))
		}
		f.panels = append(f.panels, &panel{p: cp, legend: cl, weight: 2})
	}
	if run.haveRetrans {
		rp, rl := intervalBars(run.retrans, "retransmits", rgb(0xd62728), "retransmits per interval")
		f.panels = append(f.panels, &panel{p: rp, legend: rl, weight: 1.5, shortY: "retr."})
	}
	if run.haveLost {
		lp, ll := intervalBars(run.lost, "lost datagrams", rgb(0xd62728), "lost datagrams per interval")
		f.panels = append(f.panels, &panel{p: lp, legend: ll, weight: 1.6, shortY: "lost"})
	}
	shareTime(f.panels, run.end)
	f.caption = clientCaption(r, run)
	return f.save(path)
}

// intervalBars is a panel of one count per interval, as bars over each
// interval's time span.
func intervalBars(counts []span, ylabel string, c color.Color, legend string) (*gplot.Plot, gplot.Legend) {
	p := newPlot("", ylabel)
	b := &bars{thumb: c}
	top := 0.0
	for _, s := range counts {
		top = max(top, s.v)
		if s.v > 0 {
			// A hair of a gap between neighbours.
			w := (s.end - s.start) * 0.08
			b.rects = append(b.rects, rect{x0: s.start + w, x1: s.end - w, y0: 0, y1: s.v, fill: c})
		}
	}
	p.Add(b)
	p.Y.Min, p.Y.Max = 0, max(top*1.1, 1)
	if top < 5 {
		p.Y.Tick.Marker = intTicks{}
	}
	l := newLegend()
	l.Add(legend, b)
	return p, l
}

// intTicks labels a count axis at whole numbers.
type intTicks struct{}

func (intTicks) Ticks(lo, hi float64) []gplot.Tick {
	step := max(niceStep((hi-lo)/4), 1)
	var ticks []gplot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi; v += step {
		ticks = append(ticks, gplot.Tick{Value: v, Label: formatNum(v)})
	}
	return oneNotation(ticks)
}

// unlabelled keeps an axis's tick marks and drops their labels.
type unlabelled struct{ gplot.Ticker }

func (u unlabelled) Ticks(lo, hi float64) []gplot.Tick {
	t := u.Ticker.Ticks(lo, hi)
	for i := range t {
		t[i].Label = ""
	}
	return t
}

// shareTime gives stacked panels one time axis from 0 to end, labelled
// under the bottom one only.
func shareTime(ps []*panel, end float64) {
	for i, p := range ps {
		p.p.X.Min, p.p.X.Max = 0, end
		if i < len(ps)-1 {
			p.p.X.Tick.Marker = unlabelled{niceTicks{}}
			p.p.X.Label.Text = ""
		} else {
			p.p.X.Label.Text = "time (s)"
		}
	}
}

// span is a count over one interval.
type span struct{ start, end, v float64 }

// stream is one stream's series: throughput at the middle of each
// interval, congestion window at its end.
type stream struct {
	id   int
	name string
	up   bool // data goes from the client to the server
	rate plotter.XYs
	cwnd plotter.XYs
}

// runData is what ClientRun draws, gathered from the intervals.
type runData struct {
	streams               []*stream
	sum                   map[bool]plotter.XYs // by direction (up)
	count                 map[bool]int         // streams by direction
	bytes                 map[bool]int64
	retrans, lost         []span
	start, end            float64
	maxBps                float64
	maxCwnd               float64
	bidir                 bool
	haveCwnd, haveRetrans bool
	haveLost              bool
	sends                 bool // this side sends on some stream
	totalRetrans          int64
	totalLost, totalDgram int64
}

func collect(r *result.Result) *runData {
	d := &runData{sum: map[bool]plotter.XYs{}, count: map[bool]int{}, bytes: map[bool]int64{}, bidir: r.Bidir(), start: math.Inf(1)}
	byID := map[int]*stream{}
	for _, iv := range r.Intervals {
		if iv == nil || iv.Omitted || len(iv.Streams) == 0 {
			continue
		}
		var start, end float64
		sums := map[bool]float64{}
		var retr, lost int64
		retrKnown, lostKnown := false, false
		for _, si := range iv.Streams {
			if si.Omitted {
				continue
			}
			start, end = si.Start, si.End
			secs := si.Seconds()
			if secs <= 0 {
				continue
			}
			up := si.Sender == (r.Role != "server")
			s := byID[si.ID]
			if s == nil {
				s = &stream{id: si.ID, up: up}
				byID[si.ID] = s
				d.count[up]++
				d.streams = append(d.streams, s)
			}
			d.sends = d.sends || si.Sender
			bps := 8 * float64(si.Bytes) / secs
			mid := (si.Start + si.End) / 2
			s.rate = append(s.rate, plotter.XY{X: mid, Y: bps})
			sums[up] += bps
			d.bytes[up] += si.Bytes
			d.maxBps = max(d.maxBps, bps)
			if si.TCP != nil && si.Sender && !r.UDP() {
				s.cwnd = append(s.cwnd, plotter.XY{X: si.End, Y: float64(si.TCP.SndCwnd)})
				d.maxCwnd = max(d.maxCwnd, float64(si.TCP.SndCwnd))
				d.haveCwnd = true
			}
			if si.Sender && si.Retransmits >= 0 && !r.UDP() {
				retr += si.Retransmits
				retrKnown = true
			}
			if si.UDP != nil && !si.Sender {
				lost += si.UDP.Lost
				d.totalDgram += si.UDP.Packets
				lostKnown = true
			}
		}
		if end <= start {
			continue
		}
		d.start, d.end = min(d.start, start), max(d.end, end)
		for up, v := range sums {
			d.sum[up] = append(d.sum[up], plotter.XY{X: (start + end) / 2, Y: v})
			d.maxBps = max(d.maxBps, v)
		}
		if retrKnown {
			d.retrans = append(d.retrans, span{start, end, float64(retr)})
			d.totalRetrans += retr
			d.haveRetrans = true
		}
		if lostKnown {
			d.lost = append(d.lost, span{start, end, float64(lost)})
			d.totalLost += lost
			d.haveLost = true
		}
	}
	for i, s := range d.streams {
		s.name = fmt.Sprintf("stream %d", i+1)
		if d.bidir {
			if s.up {
				s.name += " (up)"
			} else {
				s.name += " (down)"
			}
		}
	}
	return d
}

// clientTitle says what ran where: "blast client -> 198.18.0.2: TCP, 4
// streams, upload (readwrite)".
func clientTitle(r *result.Result) string {
	where := r.Host
	if where == "" && r.Peer.IsValid() {
		where = r.Peer.Addr().String()
	}
	t := "blast client -> " + where
	if r.Role == "server" {
		t = "blast server <- " + where
	}
	proto := "TCP"
	if r.UDP() {
		proto = "UDP"
	}
	n := r.NumStreams()
	streams := fmt.Sprintf("%d streams", n)
	if n == 1 {
		streams = "1 stream"
	}
	dir := "upload"
	switch {
	case r.Bidir():
		dir, streams = "bidirectional", streams+" each way"
	case r.Reverse():
		dir = "download"
	}
	t += fmt.Sprintf(": %s, %s, %s", proto, streams, dir)
	switch {
	case r.Backend != "" && r.RemoteBackend != "" && r.RemoteBackend != r.Backend:
		t += fmt.Sprintf(" (%s here, %s there)", r.Backend, r.RemoteBackend)
	case r.Backend != "":
		t += " (" + r.Backend + ")"
	}
	return t
}

func clientCaption(r *result.Result, d *runData) []string {
	secs := d.end - d.start
	var parts []string
	for _, up := range []bool{true, false} {
		if len(d.sum[up]) == 0 || secs <= 0 {
			continue
		}
		// Whose bytes: this side sends the upload, or receives it.
		whose := "receiver's"
		if up == (r.Role != "server") {
			whose = "sender's"
		}
		s := fmt.Sprintf("%s mean %s over %.1f s", whose, fmtRate(8*float64(d.bytes[up])/secs), secs)
		switch {
		case d.bidir && up:
			s = "upload: " + s
		case d.bidir:
			s = "download: " + s
		}
		parts = append(parts, s)
	}
	if d.haveRetrans {
		parts = append(parts, fmt.Sprintf("%d retransmits", d.totalRetrans))
	}
	// The whole run's loss as both ends counted it, else what this side's
	// intervals saw.
	var sent, lost int64
	for _, sr := range r.Streams {
		if sr != nil {
			s, l := r.UDPLoss(sr)
			sent, lost = sent+s, lost+l
		}
	}
	if sent == 0 && d.haveLost {
		sent, lost = d.totalDgram, d.totalLost
	}
	if r.UDP() && sent > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d datagrams lost (%.2f%%)", lost, sent, 100*float64(lost)/float64(sent)))
	}
	out := []string{sentence(parts...)}

	notes := []string{"throughput is this side's bytes per stream, averaged over each interval"}
	switch {
	case r.UDP():
	case d.haveCwnd:
		notes = append(notes, "cwnd is the sender's TCP_INFO snd_cwnd at the end of each interval")
	case d.sends:
		notes = append(notes, "TCP_INFO could not be read here, so there is no cwnd")
	default:
		notes = append(notes, "cwnd and retransmits are known only where the data is sent (the peer)")
	}
	out = append(out, sentence(notes...))
	if r.Err != nil {
		out = append(out, "The test failed: "+oneLine(r.Err.Error())+".")
	}
	return out
}

// sentence joins parts with semicolons, capitalized, with a period.
func sentence(parts ...string) string {
	s := strings.Join(parts, "; ")
	if s == "" {
		return ""
	}
	return strings.ToUpper(s[:1]) + s[1:] + "."
}
