package mesh

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/internal/golden"
)

var t0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

// jitter is a fixed pseudo-random factor in [1-f, 1+f] for a pair, so
// the meshes look measured and stay the same from run to run.
func jitter(s string, f float64) float64 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return 1 - f + 2*f*float64(h.Sum32()%1000)/999
}

func names(prefix string, n int) []string {
	var out []string
	for i := range n {
		if n <= 26 {
			out = append(out, fmt.Sprintf("%s%c", prefix, 'a'+i))
		} else {
			out = append(out, fmt.Sprintf("%s%02d", prefix, i+1))
		}
	}
	return out
}

// build is a mesh of every ordered pair of nodes: bps says each pair's
// goodput (0: the test failed with the error fail says), more edits a cell.
func buildMesh(nodes []string, proto string, bps func(src, dst string) float64, more func(c *Cell)) *Document {
	d := &Document{Meta: Meta{Tool: "blast", Version: "blast 0.9.0", Peers: "dns:blast-agents.blast.svc.cluster.local", Mode: "all",
		Rounds: 1, Started: t0,
		Test: Settings{Proto: proto, Seconds: 10, Streams: 4, Timeout: 30, Retries: 3}}}
	for i, n := range nodes {
		d.Nodes = append(d.Nodes, Node{Name: n, Addr: fmt.Sprintf("198.18.0.%d", 10+i), Control: fmt.Sprintf("198.18.0.%d:5202", 10+i),
			Version: "blast 0.9.0"})
	}
	at := t0
	for _, s := range nodes {
		for _, r := range nodes {
			if s == r {
				continue
			}
			v := bps(s, r)
			c := Cell{Src: s, Dst: r, Proto: proto, Dir: "up", Round: 1, Start: at, Seconds: 10, Bps: v,
				Bytes: uint64(v * 10 / 8), CPU: CPU{Src: 21.5, Dst: 34.2}, NIC: "eth0 -> eth0", Attempts: 1}
			if proto == "tcp" {
				c.RTTus = 180 * jitter(s+r+"rtt", 0.2)
				c.Retrans = int64(40 * jitter(s+r+"re", 1))
			}
			if more != nil {
				more(&c)
			}
			if c.Err != "" {
				c.Bps, c.Bytes, c.Retrans, c.RTTus, c.CPU = 0, 0, 0, 0, CPU{}
			}
			d.Cells = append(d.Cells, c)
			at = at.Add(11 * time.Second)
		}
	}
	d.Meta.Tests = len(d.Cells)
	d.Meta.Finished = at
	return d
}

func healthy() *Document {
	return buildMesh(names("node-", 4), "tcp", func(s, r string) float64 { return 9.4e9 * jitter(s+r, 0.01) }, nil)
}

var (
	d3 = Finding{Rule: "D3", Severity: finding.Warn, Iface: "eth0", Summary: "the link runs at 1000 Mb/s, below the NIC's 10000 Mb/s",
		Evidence: "ethtool: Speed 1000Mb/s, supported 10000baseT/Full; link renegotiated 2 times", Fix: "check the cable and the switch port (ethtool -s eth0 autoneg on), or replace the transceiver"}
	d5 = Finding{Rule: "D5", Severity: finding.Warn, Iface: "eth0", Summary: "the NIC dropped received frames: its ring is full",
		Evidence: "rx_missed_errors +48210 over the test", Fix: "a larger ring (ethtool -G eth0 rx 4096) or more queues (ethtool -L eth0 combined 8)"}
	d22 = Finding{Rule: "D22", Severity: finding.Info, Iface: "eth0", Summary: "the sender is CPU-bound",
		Evidence: "a core per stream busy the whole test", Fix: "more streams (-P)"}
)

// slowLink is 5 nodes; node-c's link runs at 1 Gbit/s, so its row and
// column are low, and its diagnoses say why.
func slowLink() *Document {
	return buildMesh(names("node-", 5), "tcp", func(s, r string) float64 {
		if s == "node-c" || r == "node-c" {
			return 0.94e9 * jitter(s+r, 0.005)
		}
		return 9.4e9 * jitter(s+r, 0.01)
	}, func(c *Cell) {
		switch {
		case c.Src == "node-c":
			c.Findings = []Finding{{Rule: d3.Rule, Severity: d3.Severity, End: "src", Iface: d3.Iface, Summary: d3.Summary, Evidence: d3.Evidence, Fix: d3.Fix}}
		case c.Dst == "node-c":
			c.Findings = []Finding{{Rule: d3.Rule, Severity: d3.Severity, End: "dst", Iface: d3.Iface, Summary: d3.Summary, Evidence: d3.Evidence, Fix: d3.Fix},
				{Rule: d22.Rule, Severity: d22.Severity, End: "src", Iface: d22.Iface, Summary: d22.Summary}}
		}
	})
}

// oneWay is 4 nodes; node-d drops what it receives.
func oneWay() *Document {
	d := buildMesh(names("node-", 4), "tcp", func(s, r string) float64 {
		if r == "node-d" {
			return 1.2e9 * jitter(s+r, 0.2)
		}
		return 9.4e9 * jitter(s+r, 0.01)
	}, func(c *Cell) {
		if c.Dst == "node-d" {
			c.Retrans = 48000
			c.Findings = []Finding{{Rule: d5.Rule, Severity: d5.Severity, End: "dst", Iface: d5.Iface, Summary: d5.Summary, Evidence: d5.Evidence, Fix: d5.Fix}}
		}
	})
	d.Meta.Zones = "same"
	return d
}

// failures is 4 nodes in 2 rounds, and a fifth that never answered:
// node-d's agent refused every test of the second round, one test timed
// out, one failed once and then ran.
func failing() *Document {
	nodes := names("node-", 4)
	d := buildMesh(nodes, "tcp", func(s, r string) float64 { return 9.4e9 * jitter(s+r, 0.01) }, nil)
	r2 := buildMesh(nodes, "tcp", func(s, r string) float64 { return 9.38e9 * jitter(s+r+"2", 0.01) }, func(c *Cell) {
		switch {
		case c.Dst == "node-d":
			c.Err = "control 198.18.0.13:5202: dial tcp 198.18.0.13:5202: connect: connection refused"
		case c.Src == "node-a" && c.Dst == "node-b":
			c.Err = "test timed out after 30s: no result from node-a"
		}
	})
	for i := range d.Cells {
		if c := &d.Cells[i]; c.Src == "node-a" && c.Dst == "node-b" {
			c.Err = "test timed out after 30s: no result from node-a"
			c.Bps, c.Bytes, c.Retrans, c.RTTus, c.CPU = 0, 0, 0, 0, CPU{}
		}
	}
	for i := range d.Cells {
		if d.Cells[i].Src == "node-b" && d.Cells[i].Dst == "node-c" {
			d.Cells[i].Err = "stream 2: read: connection reset by peer"
			d.Cells[i].Bps, d.Cells[i].Bytes = 0, 0
		}
	}
	for _, c := range r2.Cells {
		c.Round = 2
		c.Start = c.Start.Add(10 * time.Minute)
		d.Cells = append(d.Cells, c)
	}
	d.Nodes = append(d.Nodes, Node{Name: "node-e", Addr: "198.18.0.14", Control: "198.18.0.14:5202",
		Err: "GET http://198.18.0.14:5202/info: dial tcp 198.18.0.14:5202: i/o timeout"})
	d.Meta.Rounds, d.Meta.Tests = 2, len(d.Cells)
	d.Meta.Finished = r2.Meta.Finished.Add(10 * time.Minute)
	return d
}

// udpLoss is 4 nodes sending UDP at 1 Gbit/s; the path into node-b
// loses some, one pair much.
func udpLoss() *Document {
	loss := func(s, r string) float64 {
		switch {
		case s == "node-c" && r == "node-b":
			return 0.42
		case r == "node-b":
			return 0.031 * jitter(s+r, 0.3)
		}
		return 0.0001 * jitter(s+r, 1)
	}
	d := buildMesh(names("node-", 4), "udp", func(s, r string) float64 { return 1e9 * (1 - loss(s, r)) }, func(c *Cell) {
		c.Loss = loss(c.Src, c.Dst)
		c.JitterMs = 0.012 * jitter(c.Src+c.Dst, 0.5)
	})
	d.Meta.Test.Rate, d.Meta.Test.Len, d.Meta.Test.Streams = 1e9, 1448, 1
	d.Meta.Mode = "pairs"
	return d
}

// big is 50 nodes with long names: one sends slowly, two pairs failed.
func big() *Document {
	nodes := names("blast-agent-", 50)
	for i := range nodes {
		nodes[i] += ".blast.svc.cluster.local"
	}
	d := buildMesh(nodes, "tcp", func(s, r string) float64 {
		if strings.HasPrefix(s, "blast-agent-17.") {
			return 3.1e9 * jitter(s+r, 0.1)
		}
		return 24.6e9 * jitter(s+r, 0.03)
	}, func(c *Cell) {
		if strings.HasPrefix(c.Dst, "blast-agent-33.") && (strings.HasPrefix(c.Src, "blast-agent-0") || strings.HasPrefix(c.Src, "blast-agent-4")) {
			c.Err = "node busy: 3 attempts"
			c.Attempts = 4
		}
	})
	d.Meta.Mode, d.Meta.Peers = "sample:5", "k8s:blast-agents"
	d.Meta.Test.Seconds, d.Meta.Test.Streams = 5, 8
	return d
}

// fanIn is 5 clients sending into one server, one at a time (baseline)
// and all at once.
func fanIn() *Document {
	nodes := names("rack1-host-", 6)
	d := &Document{Meta: Meta{Tool: "blast", Version: "blast 0.9.0", Peers: "peers.txt", Mode: "fan-in", Rounds: 1, Started: t0,
		Test: Settings{Proto: "tcp", Seconds: 5, Streams: 2, Baseline: true, Timeout: 30}}}
	for i, n := range nodes {
		d.Nodes = append(d.Nodes, Node{Name: n, Addr: fmt.Sprintf("198.18.1.%d", i+1)})
	}
	at := t0
	for _, phase := range []string{"baseline", ""} {
		for _, s := range nodes[1:] {
			v := 9.3e9 * jitter(s, 0.01)
			if phase == "" {
				v = 9.3e9 / 5 * jitter(s+"x", 0.05)
				if s == "rack1-host-e" {
					v = 0.2e9
				}
			}
			d.Cells = append(d.Cells, Cell{Src: s, Dst: nodes[0], Proto: "tcp", Dir: "up", Phase: phase, Round: 1, Start: at,
				Seconds: 5, Bps: v, Bytes: uint64(v * 5 / 8), Attempts: 1})
			if phase == "baseline" {
				at = at.Add(6 * time.Second)
			}
		}
		at = at.Add(6 * time.Second)
	}
	d.Meta.Tests, d.Meta.Finished = len(d.Cells), at
	return d
}

type docCase struct {
	name string
	doc  func() *Document
	json bool // keep the document in testdata as JSON too
}

var docCases = []docCase{
	{"healthy", healthy, true},
	{"slow-link", slowLink, true},
	{"one-way", oneWay, true},
	{"failures", failing, true},
	{"udp-loss", udpLoss, true},
	{"fan-in", fanIn, true},
	{"mesh-50", big, false},
}

// TestDocuments keeps the handmade documents as JSON in testdata (for
// blast mesh report and plot's tests) and reads them back.
func TestDocuments(t *testing.T) {
	for _, c := range docCases {
		if !c.json {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			d := c.doc()
			b, err := json.MarshalIndent(d, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", c.name+".json")
			golden.Check(t, path, append(b, '\n'))
			got, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(d, got); diff != "" {
				t.Errorf("%s read back differs (-want +got):\n%s", path, diff)
			}
		})
	}
}

func TestReport(t *testing.T) {
	for _, c := range docCases {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Report(&b, c.doc()); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "golden", c.name+".txt"), b.String())
		})
	}
}

func TestAnalyze(t *testing.T) {
	type node struct {
		Name       string
		Send, Recv bool
		Rules      []string
	}
	for _, c := range []struct {
		name     string
		doc      *Document
		outliers int
		nodes    []node
	}{
		{"healthy", healthy(), 0, nil},
		{"slow-link", slowLink(), 8, []node{{"node-c", true, true, []string{"D3"}}}},
		{"one-way", oneWay(), 3, []node{{"node-d", false, true, []string{"D5"}}}},
		{"failures", failing(), 0, nil},
		{"udp-loss", udpLoss(), 1, nil},
		{"mesh-50", big(), 49, []node{{"blast-agent-17.blast.svc.cluster.local", true, false, nil}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := Analyze(c.doc)
			m := a.Matrices[0]
			if len(m.Outliers) != c.outliers {
				t.Errorf("%d outlier cells, want %d (median %.4g, threshold %.4g)", len(m.Outliers), c.outliers, m.Median, m.Threshold)
			}
			var got []node
			for _, v := range m.Nodes {
				n := node{v.Name, v.LowSending, v.LowReceiving, nil}
				for _, f := range v.Findings {
					n.Rules = append(n.Rules, string(f.Rule))
				}
				got = append(got, n)
			}
			if diff := cmp.Diff(c.nodes, got); diff != "" {
				t.Errorf("outlier nodes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUniformlySlow: a mesh that is slow everywhere, or whose cells
// scatter widely, has no outliers.
func TestUniformlySlow(t *testing.T) {
	for name, d := range map[string]*Document{
		"slow": buildMesh(names("n", 6), "tcp", func(s, r string) float64 { return 0.3e9 * jitter(s+r, 0.1) }, nil),
		"wide": buildMesh(names("n", 6), "tcp", func(s, r string) float64 { return 6e9 * jitter(s+r, 0.7) }, nil),
	} {
		if m := Analyze(d).Matrices[0]; len(m.Outliers) != 0 || len(m.Nodes) != 0 {
			t.Errorf("%s: %d outliers, %d nodes, want none (median %.3g, threshold %.3g)", name, len(m.Outliers), len(m.Nodes), m.Median, m.Threshold)
		}
	}
}

// TestFarBelowAScatteredMesh: cells that scatter widely (CPU-bound
// cells of a virtual lab, 10 to 20 Gbit/s) do not hide a node whose
// every cell is at a small fraction of the others: it is below a quarter
// of the median, whatever the spread.
func TestFarBelowAScatteredMesh(t *testing.T) {
	d := buildMesh(names("n", 5), "tcp", func(s, r string) float64 {
		if s == "nd" || r == "nd" {
			return 0.95e9 * jitter(s+r, 0.01)
		}
		return 15e9 * jitter(s+r, 0.35)
	}, nil)
	m := Analyze(d).Matrices[0]
	if len(m.Outliers) != 8 || len(m.Nodes) != 1 || m.Nodes[0].Name != "nd" || !m.Nodes[0].LowSending || !m.Nodes[0].LowReceiving {
		t.Errorf("%d outliers, nodes %+v; want the 8 cells of nd and nd low both ways (median %.3g, spread %.3g, threshold %.3g)",
			len(m.Outliers), m.Nodes, m.Median, m.Spread, m.Threshold)
	}
	if m.Threshold != FloorShare*m.Median {
		t.Errorf("threshold %.3g, want the floor %.3g (a quarter of the median)", m.Threshold, FloorShare*m.Median)
	}
}

func TestShortNames(t *testing.T) {
	for _, c := range []struct {
		in, want []string
		dropped  string
	}{
		{[]string{"node-a", "node-b"}, []string{"node-a", "node-b"}, ""},
		{[]string{"10.0.0.1", "10.0.0.2"}, []string{"10.0.0.1", "10.0.0.2"}, ""},
		{[]string{"blast-agent-x7k2p.blast.svc", "blast-agent-9qq4z.blast.svc"}, []string{"x7k2p", "9qq4z"}, "blast-agent-….blast.svc"},
		{[]string{"ip-10-0-1-23.ec2.internal", "ip-10-0-2-7.ec2.internal"}, []string{"1-23", "2-7"}, "ip-10-0-….ec2.internal"},
		{[]string{"a-very-long-host-name-one", "b"}, []string{"a-very-…name-one", "b"}, ""},
		{[]string{"a-very-long-host-name-one", "a-very-long-other-name-one"}, []string{"host", "other"}, "a-very-long-…-name-one"},
		// Cut to the same name: kept whole.
		{[]string{"aaaaaaaaaaaaaaaaaaaa-1-zzzzzzzz", "aaaaaaaaaaaaaaaaaaaa-2-zzzzzzzz", "b"},
			[]string{"aaaaaaaaaaaaaaaaaaaa-1-zzzzzzzz", "aaaaaaaaaaaaaaaaaaaa-2-zzzzzzzz", "b"}, ""},
	} {
		got, dropped := ShortNames(c.in)
		if diff := cmp.Diff(c.want, got); diff != "" || dropped != c.dropped {
			t.Errorf("ShortNames(%q) = %q, %q; want %q, %q", c.in, got, dropped, c.want, c.dropped)
		}
	}
}

func TestReadDocument(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"empty", "", "the input is empty"},
		{"not json", "blast: 9.41 Gbit/s\n", "not JSON (line 1"},
		{"iperf3", `{"start": {"version": "iperf 3.16"}, "intervals": []}`, `no "meta.tool": "blast"`},
		{"other tool", `{"meta": {"tool": "iperf3"}}`, `no "meta.tool": "blast"`},
		{"wrong type", `{"meta": {"tool": "blast"}, "cells": [{"bps": "fast"}]}`, "cannot unmarshal"},
		{"two documents", `{"meta": {"tool": "blast"}} {}`, "invalid character"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadDocument(strings.NewReader(c.in))
			if !errors.Is(err, ErrNotDocument) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want ErrNotDocument saying %q", err, c.want)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "mesh.json")
	if err := os.WriteFile(path, []byte(`{"end": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(path)
	if want := path + `: not a blast mesh document (no "meta.tool": "blast"): make it with blast mesh`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "none.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// TestHostile: names and errors from agents cannot drive the terminal.
func TestHostile(t *testing.T) {
	d := buildMesh([]string{"node-a", "node-\x1b[31mb", "node-c"}, "tcp", func(s, r string) float64 { return 1e9 }, func(c *Cell) {
		if c.Dst == "node-c" {
			c.Err = "refused \x1b]0;pwned\x07 \u009b2J"
		}
	})
	var b bytes.Buffer
	if err := Report(&b, d); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(b.String(), "\x1b\x07\u009b") {
		t.Errorf("the report has control characters:\n%q", b.String())
	}
}

// FuzzReadDocument: whatever ReadDocument accepts, Analyze, Report and
// WriteCSV render without panicking.
func FuzzReadDocument(f *testing.F) {
	for _, c := range docCases {
		if c.json {
			b, err := json.Marshal(c.doc())
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add([]byte(`{"meta":{"tool":"blast"},"cells":[{"src":"a","dst":"a","bps":-1},{"src":"a","dst":"b","dir":"down","err":"x"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ReadDocument(bytes.NewReader(b))
		if err != nil {
			return
		}
		if len(d.Cells) > 2000 {
			return
		}
		var out bytes.Buffer
		if err := Report(&out, d); err != nil {
			t.Fatal(err)
		}
		if err := WriteCSV(&out, d); err != nil {
			t.Fatal(err)
		}
	})
}
