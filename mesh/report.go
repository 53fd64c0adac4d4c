package mesh

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/blastnet/blast/nicinfo"
	"github.com/blastnet/blast/stats"
	"github.com/blastnet/blast/units"
)

// ErrNotDocument is the error (wrapped) for input that is not a blast mesh
// Document.
var ErrNotDocument = errors.New("not a blast mesh document")

// MaxDocumentBytes bounds what ReadDocument reads: 1 GiB, a mesh of some
// 2,000 nodes measured both ways.
const MaxDocumentBytes = 1 << 30

// ReadFile reads the Document in the file at path; its errors start with
// the path (mesh.json: not a blast mesh document ...).
func ReadFile(path string) (*Document, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // *PathError names the file
	}
	defer f.Close()
	d, err := ReadDocument(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

// ReadDocument reads one Document as `blast mesh` writes it. Input that is
// not JSON, or JSON without "meta": {"tool": "blast"} (another tool's
// output, blast client -J), is refused with an error wrapping
// ErrNotDocument that says how to make one. At most MaxDocumentBytes are
// read.
func ReadDocument(r io.Reader) (*Document, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxDocumentBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if len(data) > MaxDocumentBytes {
		return nil, fmt.Errorf("%w: larger than %d MiB", ErrNotDocument, MaxDocumentBytes>>20)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%w: the input is empty: make it with blast mesh", ErrNotDocument)
	}
	var d Document
	if err := json.Unmarshal(data, &d); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			line := 1 + bytes.Count(data[:min(int(syn.Offset), len(data))], []byte("\n"))
			return nil, fmt.Errorf("%w: not JSON (line %d: %v): make it with blast mesh", ErrNotDocument, line, err)
		}
		return nil, fmt.Errorf("%w: %v", ErrNotDocument, err)
	}
	if d.Meta.Tool != "blast" {
		return nil, fmt.Errorf("%w (no \"meta.tool\": \"blast\"): make it with blast mesh", ErrNotDocument)
	}
	return &d, nil
}

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
	at := map[string]int{}
	tests := 0
	for _, p := range m.Pairs {
		if p.Sender == p.Receiver || !(v.LowSending && p.Sender == v.Name || v.LowReceiving && p.Receiver == v.Name) {
			continue
		}
		for _, c := range p.Tests {
			tests++
			seen := map[string]bool{}
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
		if a, b := severity(out[i].Severity), severity(out[j].Severity); a != b {
			return a > b
		}
		return out[i].Tests > out[j].Tests
	})
	return out
}

func severity(s string) int {
	switch strings.ToUpper(s) {
	case "ERROR":
		return 3
	case "WARN", "WARNING":
		return 2
	case "INFO":
		return 1
	}
	return 0
}

// median is the median of v, 0 if v is empty (a pair with no test that
// ran has no goodput).
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return stats.Median(v)
}

// MaxName is the longest name, in characters, ShortNames leaves.
const MaxName = 16

// ShortNames shortens node names for a matrix's labels, the same way for
// all: names up to MaxName characters (and IP addresses) stay as they
// are; else a prefix and a suffix all names share, cut at a '-', '.' or
// '_', are dropped (blast-agent-x7k2p.ec2.internal is x7k2p), and a name
// still too long keeps its start and end around a "…". If shortening
// would make two names the same, the names stay whole. dropped says what
// was cut off for a note ("blast-agent-…", "….ec2.internal").
func ShortNames(names []string) (short []string, dropped string) {
	long := false
	for _, n := range names {
		if _, err := netip.ParseAddr(n); err != nil && utf8.RuneCountInString(n) > MaxName {
			long = true
		}
	}
	if !long {
		return names, ""
	}
	pre, suf := commonCut(names, false), commonCut(names, true)
	short = make([]string, len(names))
	for i, n := range names {
		if len(pre)+len(suf) < len(n) {
			n = n[len(pre) : len(n)-len(suf)]
		}
		if r := []rune(n); len(r) > MaxName {
			n = string(r[:MaxName/2-1]) + "…" + string(r[len(r)-MaxName/2:])
		}
		short[i] = n
	}
	seen := map[string]bool{}
	for _, s := range short {
		if seen[s] || s == "" {
			return names, ""
		}
		seen[s] = true
	}
	switch {
	case pre != "" && suf != "":
		dropped = pre + "…" + suf
	case pre != "":
		dropped = pre + "…"
	case suf != "":
		dropped = "…" + suf
	}
	return short, dropped
}

// commonCut is the longest prefix (or suffix) of every name that ends
// (starts) with a separator and leaves something of each name.
func commonCut(names []string, suffix bool) string {
	if len(names) < 2 {
		return ""
	}
	common := names[0]
	for _, n := range names[1:] {
		k := 0
		for k < len(common) && k < len(n) {
			a, b := common[k], n[k]
			if suffix {
				a, b = common[len(common)-1-k], n[len(n)-1-k]
			}
			if a != b {
				break
			}
			k++
		}
		if suffix {
			common = common[len(common)-k:]
		} else {
			common = common[:k]
		}
	}
	sep := func(b byte) bool { return b == '-' || b == '.' || b == '_' }
	if suffix {
		for len(common) > 0 && !sep(common[0]) {
			common = common[1:]
		}
	} else {
		for len(common) > 0 && !sep(common[len(common)-1]) {
			common = common[:len(common)-1]
		}
	}
	for _, n := range names {
		if len(common) >= len(n) {
			return ""
		}
	}
	return common
}

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
// escaped (nicinfo.Escape): they come from agents and files.
func Report(w io.Writer, d *Document) error {
	return ReportAnalysis(w, d, Analyze(d))
}

// ReportAnalysis is Report with the Analysis already made.
func ReportAnalysis(w io.Writer, d *Document, a Analysis) error {
	ew := &errWriter{w: nicinfo.Escaping(w)}
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
			w.printf("    %s %s%s: %s (%d of %d tests)\n", strings.ToUpper(f.Severity), f.Rule, iface, oneLine(f.Summary), f.Tests, f.Of)
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
