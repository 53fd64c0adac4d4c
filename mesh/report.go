package mesh

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/blastnet/blast/internal/safetext"
	"github.com/blastnet/blast/units"
)

// Unit is the unit a matrix reads best in: the one for its Median (or
// its largest cell), so a typical cell has one to three digits before
// the point.
func (m *Matrix) Unit() (div float64, name string) {
	ref := m.Median
	if ref == 0 {
		for _, p := range m.Pairs {
			ref = max(ref, p.Bps)
		}
	}
	return units.SIUnit(ref)
}

// MaxMatrix is the most nodes Report prints a matrix of; a larger mesh
// gets a line per node instead.
const MaxMatrix = 40

// Title is one line that says what ran: "blast mesh all: 4 nodes, tcp,
// -t 10, -P 4, 2026-03-01 12:00 UTC".
func Title(d *Document) string {
	mode := d.Meta.Mode
	if mode == "" {
		mode = "?"
	}
	nodes := fmt.Sprintf("%d nodes", len(d.Nodes))
	down := 0
	for _, n := range d.Nodes {
		if n.Err != "" {
			down++
		}
	}
	if down > 0 {
		nodes += fmt.Sprintf(" (%d unreachable)", down)
	}
	s := fmt.Sprintf("blast mesh %s: %s, %s", mode, nodes, settings(d.Meta.Test))
	if !d.Meta.Started.IsZero() {
		s += ", " + d.Meta.Started.Format("2006-01-02 15:04 MST")
	}
	return s
}

// settings are the test flags that matter: "tcp, -t 10, -P 4, -R".
func settings(t Settings) string {
	parts := []string{t.Proto}
	if t.Proto == "" {
		parts[0] = "?"
	}
	parts = append(parts, "-t "+trim(t.Seconds))
	if t.Streams > 0 {
		parts = append(parts, fmt.Sprintf("-P %d", t.Streams))
	}
	if t.Rate > 0 {
		parts = append(parts, "-b "+rate(float64(t.Rate)))
	}
	if t.Len > 0 {
		parts = append(parts, fmt.Sprintf("-l %d", t.Len))
	}
	if t.Reverse {
		parts = append(parts, "-R")
	}
	if t.Backend != "" {
		parts = append(parts, "--backend "+t.Backend)
	}
	return strings.Join(parts, ", ")
}

func trim(v float64) string { return fmt.Sprint(math.Round(v*1000) / 1000) }

// rate is a rate with up to three figures and its unit: "9.41 Gbit/s".
func rate(bps float64) string { return units.BitsShort(bps) }

// Report writes d for a reader: what ran, then per matrix the goodput of
// every pair (a line per node beyond MaxMatrix nodes), the loss of a UDP
// matrix that lost datagrams, the outlier cells and nodes, the failed
// tests; last the agents that could not be reached. Names and errors are
// escaped (safetext.Escape): they come from agents and files.
func Report(w io.Writer, d *Document) error {
	return ReportAnalysis(w, d, Analyze(d))
}

// ReportAnalysis is Report with the Analysis already made.
func ReportAnalysis(w io.Writer, d *Document, a Analysis) error {
	ew := &errWriter{w: safetext.Writer(w)}
	header(ew, d)
	if len(a.Matrices) == 0 {
		ew.printf("\nno tests in the document\n")
	}
	for _, m := range a.Matrices {
		ew.printf("\n")
		if len(m.Senders) > MaxMatrix || len(m.Receivers) > MaxMatrix {
			summary(ew, m)
		} else {
			grid(ew, m, "goodput", func(p *Pair) (string, bool) {
				if p.Failed() {
					return "ERR", false
				}
				return m.Format(p.Bps), p.Outlier
			})
			if m.Proto == "udp" && m.HasLoss() {
				ew.printf("\n")
				grid(ew, m, "loss", func(p *Pair) (string, bool) {
					if p.Failed() {
						return "ERR", false
					}
					return fmt.Sprintf("%.2f", 100*p.Loss()), false
				})
			}
		}
		outliers(ew, m)
		failures(ew, m, d.Meta.Rounds > 1)
	}
	if len(a.Unreachable) > 0 {
		ew.printf("\nunreachable agents (%d):\n", len(a.Unreachable))
		for _, n := range a.Unreachable {
			ew.printf("  %s (%s): %s\n", n.Name, n.Addr, oneLine(n.Err))
		}
	}
	return ew.err
}

// errWriter keeps the first error of its writes.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, a ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, a...)
	}
}

func header(w *errWriter, d *Document) {
	mt := d.Meta
	w.printf("%s\n", Title(d))
	var facts []string
	rounds := ""
	if mt.Rounds > 1 {
		rounds = fmt.Sprintf(" in %d rounds", mt.Rounds)
	}
	facts = append(facts, fmt.Sprintf("%d tests%s", mt.Tests, rounds))
	if mt.Peers != "" {
		facts = append(facts, "peers "+mt.Peers)
	}
	if mt.Zones != "" {
		facts = append(facts, mt.Zones+"-zone pairs")
	}
	if mt.Isolate {
		facts = append(facts, "isolated")
	}
	if mt.Test.Baseline {
		facts = append(facts, "with a baseline")
	}
	if mt.Version != "" {
		facts = append(facts, mt.Version)
	}
	w.printf("%s\n", strings.Join(facts, ", "))
	if !mt.Started.IsZero() {
		s := "started " + mt.Started.Format("2006-01-02 15:04:05 MST")
		if mt.Finished.After(mt.Started) {
			s += ", took " + mt.Finished.Sub(mt.Started).Round(time.Second).String()
		}
		w.printf("%s\n", s)
	}
}

// Format is a goodput in the matrix's unit (without it), with the
// decimals that give its median three figures: "9.41", "24.6", "981".
// A goodput too small to show is "<0.01".
func (m *Matrix) Format(bps float64) string {
	div, _ := m.Unit()
	ref := m.Median / div
	dec := 2
	if ref >= 100 {
		dec = 0
	} else if ref >= 10 {
		dec = 1
	}
	v := bps / div
	if least := 0.5 * math.Pow10(-dec); v > 0 && v < least {
		return "<" + strconv.FormatFloat(2*least, 'f', dec, 64)
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}

// grid prints the matrix: rows are numbered and named, columns numbered
// by the same numbers, with the row's and the column's median at the ends.
func grid(w *errWriter, m *Matrix, what string, cell func(*Pair) (string, bool)) {
	_, unit := m.Unit()
	if what == "goodput" {
		w.printf("%s: goodput in %s, from the row's node to the column's%s\n", m.Name(), unit, roundsNote(m))
	} else {
		w.printf("%s: datagrams lost, %% of sent\n", m.Name())
	}
	// One number per node, rows and columns alike.
	var all []string
	num := map[string]int{}
	for _, n := range append(slices.Clone(m.Senders), m.Receivers...) {
		if _, ok := num[n]; !ok {
			num[n] = len(all) + 1
			all = append(all, n)
		}
	}
	short, dropped := ShortNames(all)
	shortOf := map[string]string{}
	for i, n := range all {
		shortOf[n] = short[i]
	}
	texts := make([][]string, len(m.Senders))
	marks := make([][]bool, len(m.Senders))
	numW := len(fmt.Sprint(len(all)))
	width := numW
	for i := range m.Senders {
		texts[i] = make([]string, len(m.Receivers))
		marks[i] = make([]bool, len(m.Receivers))
		for j := range m.Receivers {
			t := "-"
			if p := m.At(i, j); p != nil && p.Sender != p.Receiver {
				t, marks[i][j] = cell(p)
			}
			texts[i][j] = t
			width = max(width, len(t))
		}
	}
	val := func(v []float64) string {
		if len(v) == 0 {
			return "-"
		}
		if what == "goodput" {
			return m.Format(median(v))
		}
		return fmt.Sprintf("%.2f", 100*median(v))
	}
	value := func(p *Pair) float64 {
		if what == "goodput" {
			return p.Bps
		}
		return p.Loss()
	}
	rowMed := make([]string, len(m.Senders))
	colMed := make([]string, len(m.Receivers))
	var everything []float64
	for i := range m.Senders {
		var v []float64
		for j := range m.Receivers {
			if p := m.At(i, j); p != nil && !p.Failed() && p.Sender != p.Receiver {
				v = append(v, value(p))
			}
		}
		everything = append(everything, v...)
		rowMed[i] = val(v)
	}
	for j := range m.Receivers {
		var v []float64
		for i := range m.Senders {
			if p := m.At(i, j); p != nil && !p.Failed() && p.Sender != p.Receiver {
				v = append(v, value(p))
			}
		}
		colMed[j] = val(v)
	}
	corner := val(everything)
	if what == "goodput" && m.Median > 0 {
		corner = m.Format(m.Median)
	}
	medW := max(len("median"), len(corner))
	for _, t := range rowMed {
		medW = max(medW, len(t))
	}
	for _, t := range colMed {
		width = max(width, len(t))
	}
	nameW := len("median")
	for _, n := range m.Senders {
		nameW = max(nameW, utf8.RuneCountInString(shortOf[n]))
	}
	pad := func(s string, n int) string { return s + strings.Repeat(" ", max(0, n-utf8.RuneCountInString(s))) }
	var b strings.Builder
	b.WriteString(strings.Repeat(" ", numW+1+nameW))
	for _, n := range m.Receivers {
		fmt.Fprintf(&b, " %*d ", width, num[n])
	}
	fmt.Fprintf(&b, " %*s\n", medW, "median")
	for i, n := range m.Senders {
		fmt.Fprintf(&b, "%*d %s", numW, num[n], pad(shortOf[n], nameW))
		for j := range m.Receivers {
			mark := " "
			if marks[i][j] {
				mark = "*"
			}
			fmt.Fprintf(&b, " %*s%s", width, texts[i][j], mark)
		}
		fmt.Fprintf(&b, " %*s\n", medW, rowMed[i])
	}
	fmt.Fprintf(&b, "%s %s", strings.Repeat(" ", numW), pad("median", nameW))
	for j := range m.Receivers {
		fmt.Fprintf(&b, " %*s ", width, colMed[j])
	}
	fmt.Fprintf(&b, " %*s\n", medW, corner)
	w.printf("%s", b.String())
	var notes []string
	for _, n := range m.Receivers {
		if !slices.Contains(m.Senders, n) {
			notes = append(notes, fmt.Sprintf("%d %s", num[n], n))
		}
	}
	if len(notes) > 0 {
		w.printf("columns: %s\n", strings.Join(notes, ", "))
	}
	if dropped != "" {
		w.printf("names without %q\n", dropped)
	}
	if what == "goodput" && len(m.Outliers) > 0 {
		w.printf("* outlier: below %s\n", thresholdText(m))
	}
}

// roundsNote says how a pair measured in several rounds is shown.
func roundsNote(m *Matrix) string {
	for _, p := range m.Pairs {
		if len(p.Tests) > 1 {
			return " (a pair's median over its rounds)"
		}
	}
	return ""
}

// thresholdText says what the threshold is and which bound made it.
func thresholdText(m *Matrix) string {
	_, unit := m.Unit()
	if m.Threshold <= FloorShare*m.Median {
		return fmt.Sprintf("%s %s, %.0f%% of the median %s %s (the cells scatter widely)", m.Format(m.Threshold), unit, 100*FloorShare, m.Format(m.Median), unit)
	}
	if LowShare*m.Median <= m.Median-Spreads*m.Spread {
		return fmt.Sprintf("%s %s, %.0f%% of the median %s %s", m.Format(m.Threshold), unit, 100*LowShare, m.Format(m.Median), unit)
	}
	return fmt.Sprintf("%s %s, %g spreads (scaled MADs) under the median %s %s", m.Format(m.Threshold), unit, Spreads, m.Format(m.Median), unit)
}

// summary prints a line per node: its sending and receiving medians and
// lowest cells, and its failed tests.
func summary(w *errWriter, m *Matrix) {
	_, unit := m.Unit()
	nodes := slices.Clone(m.Senders)
	for _, n := range m.Receivers {
		if !slices.Contains(nodes, n) {
			nodes = append(nodes, n)
		}
	}
	w.printf("%s: %d nodes, more than %d: a line per node instead of the matrix (the CSV and the plot have every cell)\n",
		m.Name(), len(nodes), MaxMatrix)
	w.printf("goodput in %s; * below %s\n", unit, thresholdText(m))
	type side struct {
		v      []float64
		lowest *Pair
		failed int
	}
	send, recv := map[string]*side{}, map[string]*side{}
	for _, n := range nodes {
		send[n], recv[n] = &side{}, &side{}
	}
	add := func(s *side, p *Pair) {
		if p.Failed() {
			s.failed++
			return
		}
		s.v = append(s.v, p.Bps)
		if s.lowest == nil || p.Bps < s.lowest.Bps {
			s.lowest = p
		}
	}
	for _, p := range m.Pairs {
		if p.Sender == p.Receiver {
			continue
		}
		add(send[p.Sender], p)
		add(recv[p.Receiver], p)
	}
	short, dropped := ShortNames(nodes)
	nameW := len("node")
	for _, s := range short {
		nameW = max(nameW, utf8.RuneCountInString(s))
	}
	col := func(s *side, other func(*Pair) string) (string, string) {
		if len(s.v) == 0 {
			return "-", "-"
		}
		med := median(s.v)
		mark := " "
		if med < m.Threshold {
			mark = "*"
		}
		low := s.lowest
		lm := " "
		if low.Outlier {
			lm = "*"
		}
		return m.Format(med) + mark, m.Format(low.Bps) + lm + " " + other(low)
	}
	shortOf := index(nodes)
	name := func(n string) string { return short[shortOf[n]] }
	lowW := len("lowest (to)")
	type line struct{ name, s, sl, r, rl, f string }
	var lines []line
	for i, n := range nodes {
		s, sl := col(send[n], func(p *Pair) string { return name(p.Receiver) })
		r, rl := col(recv[n], func(p *Pair) string { return name(p.Sender) })
		lowW = max(lowW, utf8.RuneCountInString(sl), utf8.RuneCountInString(rl))
		lines = append(lines, line{short[i], s, sl, r, rl, fmt.Sprint(send[n].failed + recv[n].failed)})
	}
	pad := func(s string, n int) string { return s + strings.Repeat(" ", max(0, n-utf8.RuneCountInString(s))) }
	w.printf("%s  %9s  %s  %9s  %s  %s\n", pad("node", nameW), "sending", pad("lowest (to)", lowW), "receiving", pad("lowest (from)", lowW), "failed")
	for _, l := range lines {
		w.printf("%s  %9s  %s  %9s  %s  %6s\n", pad(l.name, nameW), l.s, pad(l.sl, lowW), l.r, pad(l.rl, lowW), l.f)
	}
	if dropped != "" {
		w.printf("names without %q\n", dropped)
	}
}

// maxListed is the most outlier cells Report names one by one.
const maxListed = 20

func outliers(w *errWriter, m *Matrix) {
	_, unit := m.Unit()
	if m.Median == 0 {
		return
	}
	if len(m.Outliers) == 0 {
		w.printf("no outliers: no cell below %s\n", thresholdText(m))
		return
	}
	med := m.Format(m.Median)
	w.printf("outlier cells (%d of %d):\n", len(m.Outliers), countMeasured(m))
	cell := func(p *Pair) string {
		s := fmt.Sprintf("%s %s, %.0f%% of the median %s %s", m.Format(p.Bps), unit, 100*p.Bps/m.Median, med, unit)
		if l := p.Loss(); l > 0 {
			s += fmt.Sprintf(", %.3g%% lost", 100*l)
		}
		return s
	}
	if len(m.Outliers) <= maxListed {
		for _, p := range m.Outliers {
			w.printf("  %s -> %s: %s\n", p.Sender, p.Receiver, cell(p))
		}
	} else {
		// Too many to name: those of an outlier node's low direction
		// are summed up per node, the others named, the lowest first.
		var rest []*Pair
		for _, p := range m.Outliers {
			if nodeExplains(m, p) == nil {
				rest = append(rest, p)
			}
		}
		for _, v := range m.Nodes {
			for _, dir := range []string{"sending", "receiving"} {
				var ps []*Pair
				for _, p := range m.Outliers {
					if dir == "sending" && v.LowSending && p.Sender == v.Name || dir == "receiving" && v.LowReceiving && p.Receiver == v.Name {
						ps = append(ps, p)
					}
				}
				if len(ps) > 0 {
					lo, hi := ps[0].Bps, ps[len(ps)-1].Bps
					w.printf("  %s when %s: %d cells, %s to %s %s, %.0f%% to %.0f%% of the median %s %s\n", v.Name, dir, len(ps),
						m.Format(lo), m.Format(hi), unit, 100*lo/m.Median, 100*hi/m.Median, med, unit)
				}
			}
		}
		for i, p := range rest {
			if i == maxListed {
				w.printf("  and %d more (the CSV has them all)\n", len(rest)-maxListed)
				break
			}
			w.printf("  %s -> %s: %s\n", p.Sender, p.Receiver, cell(p))
		}
	}
	if len(m.Nodes) == 0 {
		return
	}
	w.printf("outlier nodes:\n")
	for _, v := range m.Nodes {
		switch {
		case v.LowSending && v.LowReceiving:
			w.printf("  %s: low sending and receiving (medians %s and %s of %s %s): suspect its NIC or link\n",
				v.Name, m.Format(v.SendBps), m.Format(v.RecvBps), med, unit)
		case v.LowSending:
			w.printf("  %s: low only when sending (median %s of %s %s)\n", v.Name, m.Format(v.SendBps), med, unit)
		default:
			w.printf("  %s: low only when receiving (median %s of %s %s)\n", v.Name, m.Format(v.RecvBps), med, unit)
		}
		for _, f := range v.Findings {
			iface := ""
			if f.Iface != "" {
				iface = " " + f.Iface
			}
			w.printf("    %s %s%s: %s (%d of %d tests)\n", f.Severity, f.Rule, iface, oneLine(f.Summary), f.Tests, f.Of)
			if f.Evidence != "" {
				w.printf("      evidence: %s\n", oneLine(f.Evidence))
			}
			if f.Fix != "" {
				w.printf("      fix: %s\n", oneLine(f.Fix))
			}
		}
	}
}

// nodeExplains is the outlier node whose low direction p is in, or nil.
func nodeExplains(m *Matrix, p *Pair) *NodeVerdict {
	for _, v := range m.Nodes {
		if v.LowSending && p.Sender == v.Name || v.LowReceiving && p.Receiver == v.Name {
			return v
		}
	}
	return nil
}

func countMeasured(m *Matrix) int {
	n := 0
	for _, p := range m.Pairs {
		if !p.Failed() && p.Sender != p.Receiver {
			n++
		}
	}
	return n
}

// maxNamed is the most tests a group of failures names.
const maxNamed = 8

// failures lists the failed tests, those with the same error together,
// the largest group first.
func failures(w *errWriter, m *Matrix, rounds bool) {
	if len(m.Failed) == 0 {
		return
	}
	w.printf("failed tests (%d):\n", len(m.Failed))
	type test struct {
		from, to string
		round    int
	}
	type group struct {
		err   string
		tests []test
	}
	var groups []*group
	byErr := map[string]*group{}
	for _, c := range m.Failed {
		e := oneLine(c.Err)
		g := byErr[e]
		if g == nil {
			g = &group{err: e}
			byErr[e] = g
			groups = append(groups, g)
		}
		t := test{c.Src, c.Dst, c.Round}
		if c.Dir == "down" {
			t.from, t.to = t.to, t.from
		}
		g.tests = append(g.tests, t)
	}
	sort.SliceStable(groups, func(i, j int) bool { return len(groups[i].tests) > len(groups[j].tests) })
	list := func(names []string) string {
		if len(names) > maxNamed {
			return strings.Join(names[:maxNamed], ", ") + fmt.Sprintf(" and %d more", len(names)-maxNamed)
		}
		return strings.Join(names, ", ")
	}
	for _, g := range groups {
		sameFrom, sameTo := true, true
		for _, t := range g.tests {
			sameFrom = sameFrom && t.from == g.tests[0].from
			sameTo = sameTo && t.to == g.tests[0].to
		}
		var names []string
		for _, t := range g.tests {
			var s string
			switch {
			case len(g.tests) > 1 && sameTo && !sameFrom:
				s = t.from
			case len(g.tests) > 1 && sameFrom && !sameTo:
				s = t.to
			default:
				s = t.from + " -> " + t.to
			}
			if rounds {
				s += fmt.Sprintf(" (round %d)", t.round)
			}
			names = append(names, s)
		}
		switch {
		case len(g.tests) == 1:
			w.printf("  %s: %s\n", names[0], g.err)
		case sameTo && !sameFrom:
			w.printf("  %d tests to %s: %s\n    from %s\n", len(g.tests), g.tests[0].to, g.err, list(names))
		case sameFrom && !sameTo:
			w.printf("  %d tests from %s: %s\n    to %s\n", len(g.tests), g.tests[0].from, g.err, list(names))
		default:
			w.printf("  %d tests: %s\n    %s\n", len(g.tests), g.err, list(names))
		}
	}
}

// oneLine is s on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
