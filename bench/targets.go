package bench

import (
	"fmt"
	"math"
	"strings"
)

// Target is a performance figure one of blast's issues asks for.
type Target struct {
	Issues   []int
	Text     string
	Workload string
	// Peer is the key of the peer the ratio is taken against (PeerIperf3,
	// PeerIperf3Modern, "sockperf", ...); "" for a figure of blast's own
	// (Loss, RSSMB).
	Peer string
	// CPU judges the senders' CPU-seconds per GB instead of the metric.
	CPU bool
	// Latency judges the ratio of this round-trip percentile ("p50",
	// "p99") instead of the metric.
	Latency string
	// Loss judges blast's median loss (a fraction) instead of a ratio.
	Loss bool
	// RSS judges the largest peak RSS of blast's processes over every run,
	// in MB (2^20 bytes), instead of a ratio.
	RSS bool
	// Value judges blast's median value, in the workload's unit, instead
	// of a ratio.
	Value bool
	Less  bool // the figure must be at most Want (else at least)
	Want  float64
}

// Targets are the targets of issues 4, 5, 6, 10 and 11. Issue 10's are
// judged against a modern iperf3 (3.16 or later); the older ones against
// Debian's iperf3 3.12, as they were set.
var Targets = []Target{
	{Issues: []int{4}, Text: "TCP 1 stream, readwrite: throughput >= 1.0x iperf3", Workload: "tcp1", Peer: PeerIperf3, Want: 1.0},
	{Issues: []int{4}, Text: "TCP 1 stream, sendfile: throughput >= 1.0x iperf3 -Z", Workload: "tcp1-sendfile", Peer: PeerIperf3, Want: 1.0},
	{Issues: []int{4}, Text: "TCP 1 stream, sendfile: sender CPU-s/GB <= 0.85x iperf3 -Z", Workload: "tcp1-sendfile", Peer: PeerIperf3, CPU: true, Less: true, Want: 0.85},
	{Issues: []int{4}, Text: "TCP 1 stream, splice: throughput >= 1.0x iperf3 -Z", Workload: "tcp1-splice", Peer: PeerIperf3, Want: 1.0},
	{Issues: []int{4}, Text: "TCP 1 stream, splice: sender CPU-s/GB <= 0.85x iperf3 -Z", Workload: "tcp1-splice", Peer: PeerIperf3, CPU: true, Less: true, Want: 0.85},
	{Issues: []int{4}, Text: "UDP 64 B, mmsg, no GSO/GRO: delivered pps >= 2.5x iperf3 -u -b 0 -l 64", Workload: "udp64", Peer: PeerIperf3, Want: 2.5},
	{Issues: []int{4}, Text: "UDP 64 B, mmsg with GSO+GRO: delivered pps >= 10x iperf3 -u -b 0 -l 64", Workload: "udp64-gso", Peer: PeerIperf3, Want: 10},
	{Issues: []int{5}, Text: "blast client -P 1: throughput >= 1.0x iperf3", Workload: "client-P1", Peer: PeerIperf3, Want: 1.0},
	{Issues: []int{5}, Text: "blast client -P 2: throughput >= 1.0x iperf3 -P 2", Workload: "client-P2", Peer: PeerIperf3, Want: 1.0},
	{Issues: []int{5, 10}, Text: "blast server, 8 clients: aggregate >= 0.9x one client -P 8", Workload: "server-8clients", Peer: "blast", Want: 0.9},
	{Issues: []int{6, 10}, Text: "AF_XDP transmit, 64 B frames: pps >= 2x trafgen", Workload: "afxdp-tx", Peer: "trafgen", Want: 2.0},
	{Issues: []int{6}, Text: "AF_XDP receive: no loss at trafgen's full rate", Workload: "afxdp-rx", Loss: true, Less: true, Want: 0},

	{Issues: []int{10}, Text: "blast client -P 1: throughput >= 1.0x iperf3 -P 1", Workload: "client-P1", Peer: PeerIperf3Modern, Want: 1.0},
	{Issues: []int{10}, Text: "blast client -P 2: throughput >= 1.0x iperf3 -P 2", Workload: "client-P2", Peer: PeerIperf3Modern, Want: 1.0},
	{Issues: []int{10}, Text: "blast client -P 4: throughput >= 1.0x iperf3 -P 4", Workload: "client-P4", Peer: PeerIperf3Modern, Want: 1.0},
	{Issues: []int{10}, Text: "blast client -P 8: throughput >= 1.0x iperf3 -P 8", Workload: "client-P8", Peer: PeerIperf3Modern, Want: 1.0},
	{Issues: []int{10}, Text: "ttcp mode, TCP 1 stream: throughput >= 1.0x iperf3 -P 1", Workload: "tcp1", Peer: PeerIperf3Modern, Want: 1.0},
	{Issues: []int{10}, Text: "UDP 64 B, best backend (mmsg gso/gro): delivered pps >= 1.0x iperf3 --gsro", Workload: "udp64-gso", Peer: PeerIperf3Modern, Want: 1.0},
	{Issues: []int{10}, Text: "UDP 64 B, plain (mmsg, no GSO/GRO): delivered pps >= 1.2x iperf3 without --gsro", Workload: "udp64", Peer: PeerIperf3Modern, Want: 1.2},
	{Issues: []int{10}, Text: "sendfile: sender CPU-s/GB <= 0.85x iperf3 -Z", Workload: "tcp1-sendfile", Peer: PeerIperf3Modern, CPU: true, Less: true, Want: 0.85},
	{Issues: []int{10}, Text: "splice: sender CPU-s/GB <= 0.85x iperf3 -Z", Workload: "tcp1-splice", Peer: PeerIperf3Modern, CPU: true, Less: true, Want: 0.85},
	{Issues: []int{10}, Text: "peak RSS, ttcp mode, 1 TCP stream (blast -t and -r): <= 32 MB", Workload: "tcp1", RSS: true, Less: true, Want: 32},
	{Issues: []int{10}, Text: "peak RSS, client/server, 1 TCP stream (blast client and server): <= 32 MB", Workload: "client-P1", RSS: true, Less: true, Want: 32},

	{Issues: []int{11}, Text: "UDP 64 B, client/server, default backends: delivered pps >= 3x iperf3 without --gsro", Workload: "client-udp64", Peer: PeerIperf3Modern, Want: 3.0},
	{Issues: []int{11}, Text: "UDP 64 B, client/server, default backends: delivered pps >= 1.0x iperf3 --gsro", Workload: "client-udp64-gsro", Peer: PeerIperf3Modern, Want: 1.0},
	{Issues: []int{11}, Text: "UDP 1400 B at -b 1G: received rate >= 0.99 Gbit/s", Workload: "client-udp1400-1G", Value: true, Want: 0.99},
	{Issues: []int{11}, Text: "UDP 1400 B at -b 1G: received rate <= 1.01 Gbit/s", Workload: "client-udp1400-1G", Value: true, Less: true, Want: 1.01},
	{Issues: []int{11}, Text: "UDP 1400 B at -b 1G: no loss", Workload: "client-udp1400-1G", Loss: true, Less: true, Want: 0},
}

func init() {
	for _, proto := range []string{"TCP", "UDP"} {
		for _, pl := range placements {
			for _, pct := range []string{"p50", "p99"} {
				Targets = append(Targets, Target{Issues: []int{10},
					Text:     fmt.Sprintf("%s latency, %s: %s <= 1.0x sockperf", proto, pl.Text, pct),
					Workload: "lat-" + strings.ToLower(proto) + "-" + pl.ID, Peer: "sockperf", Latency: pct, Less: true, Want: 1.0})
			}
		}
	}
}

// Kinds of figure a target judges (TargetResult.Kind).
const (
	KindRatio = "ratio"
	KindLoss  = "loss"  // a fraction
	KindRSS   = "rss"   // MB
	KindValue = "value" // in the workload's unit
)

// TargetResult is a target with what this run measured for it.
type TargetResult struct {
	Issues   []int  `json:"issues"`
	Text     string `json:"target"`
	Workload string `json:"workload"`
	Peer     string `json:"peer,omitempty"`      // the peer's key
	PeerName string `json:"peer_name,omitempty"` // "iperf3 3.21", "sockperf"
	Kind     string `json:"kind"`                // KindRatio, KindLoss, KindRSS
	Measured Num    `json:"measured"`            // the median per-round ratio (RSS: the largest)
	Min      Num    `json:"min"`
	Max      Num    `json:"max"`
	Pairs    int    `json:"pairs"`   // runs judged
	Verdict  string `json:"verdict"` // met, missed, or why nothing was measured
}

// EvalTargets judges each target on the median of its per-round ratios
// (RSS: on the largest peak of any run).
func EvalTargets(r *Results) []TargetResult {
	var out []TargetResult
	for _, t := range Targets {
		tr := TargetResult{Issues: t.Issues, Text: t.Text, Workload: t.Workload, Peer: t.Peer, Kind: KindRatio,
			Measured: nan(), Min: nan(), Max: nan()}
		switch {
		case t.Loss:
			tr.Kind = KindLoss
		case t.RSS:
			tr.Kind = KindRSS
		case t.Value:
			tr.Kind = KindValue
		}
		tr.PeerName = peerName(r, t.Peer)
		var w *WorkloadResult
		for i := range r.Workloads {
			if r.Workloads[i].ID == t.Workload {
				w = &r.Workloads[i]
			}
		}
		var p *PeerResult
		if w != nil && t.Peer != "" {
			p = w.peer(t.Peer)
		}
		s := Summary{}
		judge := func(s Summary) float64 { return s.Median }
		switch {
		case w == nil:
		case t.RSS:
			s = rssMB(w)
			judge = func(s Summary) float64 { return s.Max }
		case t.Value:
			s = w.BlastValue
		case t.Loss && w.BlastLoss != nil:
			s = *w.BlastLoss
		case t.Loss:
		case p == nil:
		case t.CPU:
			s = p.SenderCPURatio
		case t.Latency != "":
			s = p.LatencyRatio[t.Latency]
		default:
			s = p.Ratio
		}
		switch {
		case w == nil:
			tr.Verdict = "not run"
		case w.Skipped != "":
			tr.Verdict = w.Skipped
		case w.Error != "":
			tr.Verdict = "failed: " + w.Error
		case t.Peer != "" && p == nil:
			tr.Verdict = "no peer " + t.Peer + " in this workload"
		case p != nil && p.Skipped != "":
			tr.Verdict = p.Skipped
		case s.N == 0:
			tr.Verdict = "no pair measured"
		default:
			m := judge(s)
			tr.Measured, tr.Min, tr.Max, tr.Pairs = Num(m), Num(s.Min), Num(s.Max), s.N
			tr.Verdict = verdict(m, t)
		}
		out = append(out, tr)
	}
	return out
}

// rssMB summarizes, per blast run of w that measured something, the
// larger peak RSS of its processes, in MB (2^20 bytes).
func rssMB(w *WorkloadResult) Summary {
	var v []float64
	for _, r := range w.Rounds {
		if r.Blast.Err != "" {
			continue
		}
		peak := int64(-1)
		for _, p := range r.Blast.Procs {
			peak = max(peak, p.MaxRSSKB)
		}
		if peak > 0 {
			v = append(v, float64(peak)/1024)
		}
	}
	return Summarize(v)
}

// peerName is how the targets table names a peer: with its version for
// iperf3.
func peerName(r *Results, key string) string {
	switch key {
	case "":
		return ""
	case PeerIperf3, PeerIperf3Modern:
		if ip := r.iperf3(key); ip != nil {
			return ip.Name()
		}
		if key == PeerIperf3Modern {
			return "iperf3 >= " + ModernIperf3.String()
		}
		return "iperf3 (Debian)"
	case "blast":
		return "blast"
	}
	return key
}

func verdict(m float64, t Target) string {
	ok := m >= t.Want
	if t.Less {
		ok = m <= t.Want
	}
	if math.IsNaN(m) {
		return "no value"
	}
	if ok {
		return "met"
	}
	return "missed"
}

// fmtRatio writes a ratio as "1.23x".
func fmtRatio(r float64) string {
	if math.IsNaN(r) {
		return "-"
	}
	return fmt.Sprintf("%.2fx", r)
}

// fmtValue writes a measurement with 3 significant digits, large counts
// with a k or M suffix.
func fmtValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v >= 1e6:
		return fmt.Sprintf("%.3gM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.3gk", v/1e3)
	}
	return fmt.Sprintf("%.3g", v)
}
