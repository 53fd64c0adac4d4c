package mesh

import (
	"math"
	"slices"
	"sort"

	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/stats"
)

// The outlier rule. Per matrix (one proto, direction and phase):
//
//  1. Each node's median is the median goodput of every cell it is in,
//     sending or receiving. The matrix's Median is the median of these
//     node medians: one bad node, whose cells may be nearly half of a
//     small mesh's, moves it little (from 4 nodes up).
//  2. The spread is the median absolute deviation from Median of the
//     cells of nodes whose own median is at least LowShare of Median
//     (all cells if there are none), times 1.4826 (the MAD of normal
//     data estimates its standard deviation so).
//  3. Threshold = min(LowShare × Median, Median − Spreads × spread): a
//     cell is an outlier only if it is both far below the median and
//     far outside the usual spread. A uniformly slow mesh has nothing
//     below 70% of its median; a mesh whose cells scatter widely
//     (zones, mixed NICs) flags only what is far outside its scatter.
//     But the threshold is at least FloorShare × Median: no scatter
//     explains a cell at a small fraction of its peers (on a virtual lab
//     the CPU-bound cells scatter from 10 to 20 Gbit/s, and a link
//     shaped to 1 Gbit/s must still stand out).
//  4. A node is low as a sender when the median of its row is below
//     Threshold, low as a receiver when the median of its column is.
//
// Failed cells are never outliers; they are listed apart.
const (
	LowShare   = 0.7
	FloorShare = 0.25
	Spreads    = 3.0
	madScale   = 1.4826
)

// Analysis is what a Document shows: one Matrix per (proto, dir, phase)
// and the nodes that could not be reached. The text report and the
// heatmap both draw it.
type Analysis struct {
	Matrices    []*Matrix
	Unreachable []Node
}

// Matrix is the goodput of every pair of one kind of test. Rows are
// senders and columns receivers: for Dir "down" (-R) the sender is the
// cell's Dst.
type Matrix struct {
	Proto, Dir, Phase string
	// Senders and Receivers are the node names of the rows and the
	// columns: the nodes that sent (received) in this matrix, in the
	// Document's order of nodes.
	Senders, Receivers []string
	// Pairs are the measured pairs, row by row.
	Pairs []*Pair
	// Median is the reference goodput in bit/s (see the rule above);
	// Spread the scaled MAD; Threshold the goodput below which a cell
	// is an outlier. All 0 if no cell succeeded.
	Median, Spread, Threshold float64
	// Outliers are the pairs below Threshold, lowest first.
	Outliers []*Pair
	// Nodes are the nodes low as senders or receivers, in the
	// Document's order.
	Nodes []*NodeVerdict
	// Failed are the tests that failed, in the Document's order.
	Failed []*Cell

	at map[[2]int]*Pair
}

// Pair is one (sender, receiver) of a Matrix and its tests (several with
// rounds).
type Pair struct {
	Sender, Receiver string
	Row, Col         int
	Tests            []*Cell
	// OK counts the tests that succeeded; Bps is the median of their
	// goodputs (0 if none did).
	OK      int
	Bps     float64
	Outlier bool
}

// Failed reports whether every test of the pair failed.
func (p *Pair) Failed() bool { return p.OK == 0 }

// Loss is the pair's median datagram loss (0..1) over its tests that
// succeeded.
func (p *Pair) Loss() float64 {
	var v []float64
	for _, c := range p.Tests {
		if c.Err == "" {
			v = append(v, c.Loss)
		}
	}
	return median(v)
}

// At is the pair of row i and column j, nil if it was not measured.
func (m *Matrix) At(i, j int) *Pair { return m.at[[2]int{i, j}] }

// Name is the matrix's name: "tcp up", "tcp up baseline".
func (m *Matrix) Name() string {
	s := m.Proto + " " + m.Dir
	if m.Phase != "" {
		s += " " + m.Phase
	}
	return s
}

// HasLoss reports whether a test of the matrix lost datagrams.
func (m *Matrix) HasLoss() bool {
	for _, p := range m.Pairs {
		for _, c := range p.Tests {
			if c.Err == "" && c.Loss > 0 {
				return true
			}
		}
	}
	return false
}

// NodeVerdict is a node whose sending or receiving is low.
type NodeVerdict struct {
	Name                     string
	LowSending, LowReceiving bool
	// SendBps and RecvBps are the medians of its row and its column
	// (NaN if it has none).
	SendBps, RecvBps float64
	// Findings are the diagnoses of this node's side of its tests in
	// the low direction(s), one per rule, the most severe first.
	Findings []NodeFinding
}

// NodeFinding is one rule's finding at a node, and in how many of the
// node's tests it was found.
type NodeFinding struct {
	Finding
	Tests, Of int
}

// Analyze builds the matrices of d and applies the outlier rule.
func Analyze(d *Document) Analysis {
	var a Analysis
	order := map[string]int{}
	for _, n := range d.Nodes {
		if _, ok := order[n.Name]; !ok {
			order[n.Name] = len(order)
		}
		if n.Err != "" {
			a.Unreachable = append(a.Unreachable, n)
		}
	}
	for _, c := range d.Cells {
		for _, name := range []string{c.Src, c.Dst} {
			if _, ok := order[name]; !ok {
				order[name] = len(order)
			}
		}
	}
	type key struct{ proto, dir, phase string }
	groups := map[key][]*Cell{}
	var keys []key
	for i := range d.Cells {
		c := &d.Cells[i]
		k := key{c.Proto, c.Dir, c.Phase}
		if k.dir != "down" {
			k.dir = "up"
		}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], c)
	}
	rank := func(k key) [3]string {
		r := [3]string{k.proto, "1", k.phase}
		if k.dir == "up" {
			r[1] = "0"
		}
		return r
	}
	sort.SliceStable(keys, func(i, j int) bool {
		a, b := rank(keys[i]), rank(keys[j])
		return slices.Compare(a[:], b[:]) < 0
	})
	for _, k := range keys {
		m := build(groups[k], order)
		m.Proto, m.Dir, m.Phase = k.proto, k.dir, k.phase
		m.judge()
		a.Matrices = append(a.Matrices, m)
	}
	return a
}

// build arranges a matrix's tests into pairs.
func build(cells []*Cell, order map[string]int) *Matrix {
	m := &Matrix{at: map[[2]int]*Pair{}}
	send, recv := map[string]bool{}, map[string]bool{}
	ends := func(c *Cell) (string, string) {
		if c.Dir == "down" {
			return c.Dst, c.Src
		}
		return c.Src, c.Dst
	}
	for _, c := range cells {
		s, r := ends(c)
		send[s], recv[r] = true, true
	}
	byOrder := func(set map[string]bool) []string {
		var names []string
		for n := range set {
			names = append(names, n)
		}
		sort.Slice(names, func(i, j int) bool { return order[names[i]] < order[names[j]] })
		return names
	}
	m.Senders, m.Receivers = byOrder(send), byOrder(recv)
	row, col := index(m.Senders), index(m.Receivers)
	for _, c := range cells {
		s, r := ends(c)
		k := [2]int{row[s], col[r]}
		p := m.at[k]
		if p == nil {
			p = &Pair{Sender: s, Receiver: r, Row: k[0], Col: k[1]}
			m.at[k] = p
			m.Pairs = append(m.Pairs, p)
		}
		p.Tests = append(p.Tests, c)
		if c.Err != "" {
			m.Failed = append(m.Failed, c)
		}
	}
	sort.Slice(m.Pairs, func(i, j int) bool {
		a, b := m.Pairs[i], m.Pairs[j]
		return a.Row < b.Row || a.Row == b.Row && a.Col < b.Col
	})
	for _, p := range m.Pairs {
		var v []float64
		for _, c := range p.Tests {
			if c.Err == "" {
				v = append(v, c.Bps)
			}
		}
		p.OK, p.Bps = len(v), median(v)
	}
	return m
}

func index(names []string) map[string]int {
	m := make(map[string]int, len(names))
	for i, n := range names {
		m[n] = i
	}
	return m
}

// judge applies the outlier rule to m.
func (m *Matrix) judge() {
	// Every node's cells, sending and receiving.
	cells := map[string][]float64{}
	var names []string
	for _, p := range m.Pairs {
		if p.Failed() || p.Sender == p.Receiver {
			continue
		}
		for _, n := range []string{p.Sender, p.Receiver} {
			if _, ok := cells[n]; !ok {
				names = append(names, n)
			}
			cells[n] = append(cells[n], p.Bps)
		}
	}
	if len(names) == 0 {
		return
	}
	nodeMed := map[string]float64{}
	var meds []float64
	for _, n := range names {
		nodeMed[n] = median(cells[n])
		meds = append(meds, nodeMed[n])
	}
	m.Median = median(meds)
	var dev []float64
	for pass := 0; pass < 2 && len(dev) == 0; pass++ {
		for _, p := range m.Pairs {
			if p.Failed() || p.Sender == p.Receiver {
				continue
			}
			if pass == 0 && (nodeMed[p.Sender] < LowShare*m.Median || nodeMed[p.Receiver] < LowShare*m.Median) {
				continue
			}
			dev = append(dev, math.Abs(p.Bps-m.Median))
		}
	}
	m.Spread = madScale * median(dev)
	m.Threshold = max(FloorShare*m.Median, min(LowShare*m.Median, m.Median-Spreads*m.Spread))

	rows := make([][]float64, len(m.Senders))
	cols := make([][]float64, len(m.Receivers))
	for _, p := range m.Pairs {
		if p.Failed() || p.Sender == p.Receiver {
			continue
		}
		rows[p.Row] = append(rows[p.Row], p.Bps)
		cols[p.Col] = append(cols[p.Col], p.Bps)
		if p.Bps < m.Threshold {
			p.Outlier = true
			m.Outliers = append(m.Outliers, p)
		}
	}
	sort.SliceStable(m.Outliers, func(i, j int) bool { return m.Outliers[i].Bps < m.Outliers[j].Bps })

	rowOf, colOf := index(m.Senders), index(m.Receivers)
	for _, n := range names {
		v := &NodeVerdict{Name: n, SendBps: math.NaN(), RecvBps: math.NaN()}
		if i, ok := rowOf[n]; ok && len(rows[i]) > 0 {
			v.SendBps = median(rows[i])
			v.LowSending = v.SendBps < m.Threshold
		}
		if j, ok := colOf[n]; ok && len(cols[j]) > 0 {
			v.RecvBps = median(cols[j])
			v.LowReceiving = v.RecvBps < m.Threshold
		}
		if v.LowSending || v.LowReceiving {
			v.Findings = m.findings(v)
			m.Nodes = append(m.Nodes, v)
		}
	}
}

// findings gathers the findings of v's side of its tests in the low
// direction(s), one per rule.
func (m *Matrix) findings(v *NodeVerdict) []NodeFinding {
	var out []NodeFinding
	at := map[finding.ID]int{}
	tests := 0
	for _, p := range m.Pairs {
		if p.Sender == p.Receiver || !(v.LowSending && p.Sender == v.Name || v.LowReceiving && p.Receiver == v.Name) {
			continue
		}
		for _, c := range p.Tests {
			tests++
			seen := map[finding.ID]bool{}
			for _, f := range c.Findings {
				if !(f.End == "src" && c.Src == v.Name || f.End == "dst" && c.Dst == v.Name) || seen[f.Rule] {
					continue
				}
				seen[f.Rule] = true
				i, ok := at[f.Rule]
				if !ok {
					i = len(out)
					at[f.Rule] = i
					out = append(out, NodeFinding{Finding: f})
				}
				out[i].Tests++
			}
		}
	}
	for i := range out {
		out[i].Of = tests
	}
	sort.SliceStable(out, func(i, j int) bool {
		if a, b := out[i].Severity, out[j].Severity; a != b {
			return a > b
		}
		return out[i].Tests > out[j].Tests
	})
	return out
}

// median is the median of v, 0 if v is empty (a pair with no test that
// ran has no goodput).
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return stats.Median(v)
}
