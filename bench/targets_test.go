package bench

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// blastRound is a round whose blast run had processes with these peak
// RSS figures (KiB).
func blastRound(rssKB ...int64) Round {
	var procs []ProcStats
	for i, kb := range rssKB {
		role := "sender"
		if i > 0 {
			role = "receiver"
		}
		procs = append(procs, ProcStats{Role: role, MaxRSSKB: kb})
	}
	return Round{Blast: Sample{Value: 1, Procs: procs}}
}

func TestEvalTargets(t *testing.T) {
	five := func(med float64) Summary { return Summary{Median: med, Min: med - 0.1, Max: med + 0.1, N: 5} }
	r := &Results{
		Iperf3: []Iperf3{
			{Key: PeerIperf3, Version: Iperf3Version{Major: 3, Minor: 12}},
			{Key: PeerIperf3Modern, Version: Iperf3Version{Major: 3, Minor: 21, GSRO: true}},
		},
		Workloads: []WorkloadResult{
			{ID: "tcp1", Peers: []PeerResult{
				{Key: PeerIperf3, Ratio: five(1.2)},
				{Key: PeerIperf3Modern, Ratio: five(0.9)},
			}, Rounds: []Round{blastRound(20*1024, 26*1024), blastRound(21*1024, 33*1024), blastRound(20*1024, 25*1024)}},
			{ID: "tcp1-sendfile", Peers: []PeerResult{
				{Key: PeerIperf3, Ratio: five(0.95), SenderCPURatio: five(0.8)},
				{Key: PeerIperf3Modern, Ratio: five(1.1), SenderCPURatio: five(0.9)},
			}},
			{ID: "udp64-gso", Skipped: "not available: no options"},
			{ID: "udp64", Peers: []PeerResult{
				{Key: PeerIperf3, Ratio: five(1.1)},
				{Key: PeerIperf3Modern, Skipped: "no iperf3 3.16 or later here (blastbench --iperf3 PATH)"},
			}},
			{ID: "client-P1", Error: "calibration failed"},
			{ID: "client-P2", Peers: []PeerResult{{Key: PeerIperf3}, {Key: PeerIperf3Modern}}},
			{ID: "server-8clients", Peers: []PeerResult{{Key: "blast", Ratio: five(0.95)}}},
			{ID: "afxdp-rx", BlastLoss: &Summary{Median: 0.01, Min: 0, Max: 0.02, N: 5}},
			{ID: "lat-tcp-1cpu", Peers: []PeerResult{{Key: "sockperf", LatencyRatio: map[string]Summary{"p50": five(0.5), "p99": five(1.3)}}}},
		},
	}
	type key struct{ text, peer string }
	got := map[key]TargetResult{}
	for _, tr := range EvalTargets(r) {
		got[key{tr.Text, tr.Peer}] = tr
	}
	for _, tc := range []struct {
		text, peer string
		verdict    string
		measured   float64 // NaN: none
	}{
		{"TCP 1 stream, readwrite: throughput >= 1.0x iperf3", PeerIperf3, "met", 1.2},
		{"ttcp mode, TCP 1 stream: throughput >= 1.0x iperf3 -P 1", PeerIperf3Modern, "missed", 0.9},
		{"TCP 1 stream, sendfile: throughput >= 1.0x iperf3 -Z", PeerIperf3, "missed", 0.95},
		{"TCP 1 stream, sendfile: sender CPU-s/GB <= 0.85x iperf3 -Z", PeerIperf3, "met", 0.8}, // lower is better
		{"sendfile: sender CPU-s/GB <= 0.85x iperf3 -Z", PeerIperf3Modern, "missed", 0.9},
		{"UDP 64 B, mmsg with GSO+GRO: delivered pps >= 10x iperf3 -u -b 0 -l 64", PeerIperf3, "not available: no options", math.NaN()},
		{"UDP 64 B, plain (mmsg, no GSO/GRO): delivered pps >= 1.2x iperf3 without --gsro", PeerIperf3Modern,
			"no iperf3 3.16 or later here (blastbench --iperf3 PATH)", math.NaN()},
		{"blast client -P 1: throughput >= 1.0x iperf3", PeerIperf3, "failed: calibration failed", math.NaN()},
		{"blast client -P 2: throughput >= 1.0x iperf3 -P 2", PeerIperf3Modern, "no pair measured", math.NaN()},
		{"blast server, 8 clients: aggregate >= 0.9x one client -P 8", "blast", "met", 0.95},
		{"AF_XDP transmit, 64 B frames: pps >= 2x trafgen", "trafgen", "not run", math.NaN()},
		{"AF_XDP receive: no loss at trafgen's full rate", "", "missed", 0.01},
		// The largest peak of any run decides: 33 MiB in the second round.
		{"peak RSS, ttcp mode, 1 TCP stream (blast -t and -r): <= 32 MB", "", "missed", 33},
		{"TCP latency, both ends on cpu0: p50 <= 1.0x sockperf", "sockperf", "met", 0.5},
		{"TCP latency, both ends on cpu0: p99 <= 1.0x sockperf", "sockperf", "missed", 1.3},
		{"UDP latency, client on cpu0, server on cpu1: p99 <= 1.0x sockperf", "sockperf", "not run", math.NaN()},
	} {
		tr, ok := got[key{tc.text, tc.peer}]
		if !ok {
			t.Errorf("no target %q against %q", tc.text, tc.peer)
			continue
		}
		if tr.Verdict != tc.verdict {
			t.Errorf("target %q against %q: verdict %q, want %q", tc.text, tc.peer, tr.Verdict, tc.verdict)
		}
		if m := float64(tr.Measured); !(math.IsNaN(m) && math.IsNaN(tc.measured)) && m != tc.measured {
			t.Errorf("target %q against %q: measured %v, want %v", tc.text, tc.peer, m, tc.measured)
		}
	}
	rss := got[key{"peak RSS, ttcp mode, 1 TCP stream (blast -t and -r): <= 32 MB", ""}]
	if diff := cmp.Diff(TargetResult{Issues: []int{10}, Text: rss.Text, Workload: "tcp1", Kind: KindRSS,
		Measured: 33, Min: 25, Max: 33, Pairs: 3, Verdict: "missed"}, rss); diff != "" {
		t.Errorf("RSS target (-want +got):\n%s", diff)
	}
	if n := got[key{"ttcp mode, TCP 1 stream: throughput >= 1.0x iperf3 -P 1", PeerIperf3Modern}].PeerName; n != "iperf3 3.21" {
		t.Errorf("modern peer named %q, want iperf3 3.21", n)
	}
}

// Every target names a workload of the suite and, for a ratio, a peer
// that workload has.
func TestTargetsNameWorkloads(t *testing.T) {
	ws := map[string]Workload{}
	for _, w := range Workloads() {
		if _, dup := ws[w.ID]; dup {
			t.Errorf("workload ID %s twice", w.ID)
		}
		ws[w.ID] = w
	}
	for _, tg := range Targets {
		w, ok := ws[tg.Workload]
		if !ok {
			t.Errorf("target %q: no workload %s", tg.Text, tg.Workload)
			continue
		}
		if tg.Peer == "" {
			continue
		}
		found := false
		for _, p := range w.Peers {
			found = found || p.Key == tg.Peer
		}
		if !found {
			t.Errorf("target %q: workload %s has no peer %s", tg.Text, tg.Workload, tg.Peer)
		}
	}
}
