package bench

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/internal/golden"
)

// sampleResults is a small run: two iperf3 columns, a peer that failed,
// a workload skipped, a latency workload and an RSS target.
func sampleResults() *Results {
	sum := func(med, lo, hi float64, n int) Summary { return Summary{Median: med, Min: lo, Max: hi, N: n} }
	procs := func(cpuTx, cpuRx, rssTx, rssRx float64) map[string]ProcSummary {
		return map[string]ProcSummary{
			"sender":   {CPUPerGB: sum(cpuTx, cpuTx, cpuTx, 3), MaxRSSKB: sum(rssTx, rssTx, rssTx, 3)},
			"receiver": {CPUPerGB: sum(cpuRx, cpuRx, cpuRx, 3), MaxRSSKB: sum(rssRx, rssRx, rssRx, 3)},
		}
	}
	rssOnly := func(rssTx, rssRx float64) map[string]ProcSummary { // latency runs move no GB
		return map[string]ProcSummary{"sender": {MaxRSSKB: sum(rssTx, rssTx, rssTx, 3)}, "receiver": {MaxRSSKB: sum(rssRx, rssRx, rssRx, 3)}}
	}
	lat := func(p50, p99 float64, src string) *LatencyStats {
		return &LatencyStats{Min: 10, Mean: Num(p50), P50: Num(p50), P90: Num(p50 + 1), P99: Num(p99), P999: Num(p99 + 10),
			Max: 100, PerSec: Num(1e6 / p50), Source: src}
	}
	r := &Results{
		Date: "2026-12-01T12:00:00Z", Mode: "quick", Pairs: 3, Secs: 1, Elapsed: 121,
		Machine: Machine{Hostname: "vm", Kernel: "6.18.44", CPUModel: "AMD EPYC", Cores: 2, GoVersion: "go1.26.8", BlastCommit: "211f765849f7",
			Peers: map[string]string{PeerIperf3: "iperf 3.12 (cJSON 1.7.15) (/usr/bin/iperf3)", PeerIperf3Modern: "iperf 3.21 (cJSON 1.7.15) (/work/bin/iperf3-3.21)", "sockperf": "sockperf, version 3.7-no.git"}},
		Iperf3: []Iperf3{
			{Key: PeerIperf3, Path: "/usr/bin/iperf3", Version: Iperf3Version{Major: 3, Minor: 12}, VersionLine: "iperf 3.12 (cJSON 1.7.15)"},
			{Key: PeerIperf3Modern, Path: "/work/bin/iperf3-3.21", Version: Iperf3Version{Major: 3, Minor: 21, GSRO: true}, VersionLine: "iperf 3.21 (cJSON 1.7.15)"},
		},
		Workloads: []WorkloadResult{
			{ID: "tcp1", Title: "TCP, 1 stream, ttcp mode vs iperf3 -P 1, 128 KiB writes", Metric: "throughput", Unit: "Gbit/s",
				Blast: "blast -t/-r (readwrite)", BlastValue: sum(30, 29, 41, 3), BlastProcs: procs(0.2, 0.19, 20000, 21000),
				Rounds: []Round{blastRound(20000, 21000), blastRound(20500, 21500), blastRound(20100, 21100)},
				Peers: []PeerResult{
					{Key: PeerIperf3, Label: "iperf3 -P 1 -l 128K", Version: "3.12", Value: sum(19, 18, 23, 3), Ratio: sum(1.75, 1.55, 1.87, 3), Procs: procs(0.4, 0.18, 8000, 7000)},
					{Key: PeerIperf3Modern, Label: "iperf3 -P 1 -l 128K", Version: "3.21", Value: sum(17.3, 16.9, 17.7, 3), Ratio: sum(2.11, 1.66, 2.36, 3), Procs: procs(0.5, 0.17, 8200, 8100)},
				}},
			{ID: "udp64-gso", Title: "UDP, 64-byte datagrams, mmsg with GSO/GRO vs iperf3 --gsro", Metric: "delivered datagrams/s", Unit: "pps",
				Blast: "blast -u --backend mmsg (gso / gro)", BlastValue: sum(12.5e6, 12.1e6, 13e6, 3), BlastLoss: &Summary{Median: 0.05, Min: 0.04, Max: 0.06, N: 3},
				BlastProcs: procs(1.19, 0.64, 20000, 30000),
				Rounds: []Round{{Blast: Sample{Value: 12.5e6}, Peers: []PeerRun{{Key: PeerIperf3Modern, Ratio: Num(math.NaN()),
					Sample: Sample{Value: Num(math.NaN()), Err: "iperf3 JSON: the receiver got no datagrams\nsecond line"}}}}},
				Peers: []PeerResult{
					{Key: PeerIperf3, Label: "iperf3 -u -b 0 -l 64", Version: "3.12", Value: sum(290e3, 288e3, 295e3, 3), Loss: &Summary{Median: 0.007, N: 3},
						Ratio: sum(43.5, 41.6, 44, 3), Procs: procs(52.8, 33.9, 12000, 12000)},
					{Key: PeerIperf3Modern, Label: "iperf3 --gsro -u -b 0 -l 64", Version: "3.21", Skipped: "failed in each of its first 2 rounds, not run again: iperf3 JSON: the receiver got no datagrams"},
				}},
			{ID: "client-P8", Title: "TCP, client/server mode, 8 stream(s)", Metric: "throughput", Unit: "Gbit/s",
				Blast: "blast client -P 8 -> blast server", BlastValue: sum(21, 20, 22, 3), BlastProcs: procs(0.14, 0.12, 28000, 29000),
				BlastSpread: &Summary{Median: 0.04, Min: 0.02, Max: 0.09, N: 3},
				Rounds:      []Round{blastRound(28000, 29000), blastRound(28000, 29000), blastRound(28000, 29000)},
				Peers: []PeerResult{
					{Key: PeerIperf3, Label: "iperf3 -c -P 8 -> iperf3 -s", Version: "3.12", Value: sum(15, 14, 16, 3), Ratio: sum(1.4, 1.3, 1.5, 3), Procs: procs(0.16, 0.15, 11000, 11000),
						Spread: &Summary{Median: 0.61, Min: 0.35, Max: 1.2, N: 3}},
					{Key: PeerIperf3Modern, Label: "iperf3 -c -P 8 -> iperf3 -s", Version: "3.21", Value: sum(20, 19, 21, 3), Ratio: sum(1.05, 1, 1.1, 3), Procs: procs(0.13, 0.11, 11000, 11000)},
				}},
			{ID: "client-P4", Title: "TCP, client/server mode, 4 stream(s)", Unit: "Gbit/s", Blast: "blast client -P 4 -> blast server",
				Skipped: "not in the quick suite (make bench runs it)",
				Peers:   []PeerResult{{Key: PeerIperf3, Label: "iperf3 -c -P 4 -> iperf3 -s"}, {Key: PeerIperf3Modern, Label: "iperf3 -c -P 4 -> iperf3 -s"}}},
			{ID: "lat-tcp-2cpu", Title: "TCP round-trip latency, 64 B, client on cpu0, server on cpu1, vs sockperf ping-pong --full-rtt", Unit: "us",
				Blast: "blast lat -l 64", BlastValue: sum(48, 47, 60, 3), BlastProcs: rssOnly(17000, 15000),
				Rounds: []Round{{Blast: Sample{Value: 48, Latency: lat(48, 66, "blast lat -J rtt_ns (round trip)")},
					Peers: []PeerRun{{Key: "sockperf", Ratio: 0.96, Sample: Sample{Value: 50, Latency: lat(50, 72, "sockperf ping-pong --full-rtt (round trip)")}}}}},
				Peers: []PeerResult{{Key: "sockperf", Label: "sockperf ping-pong --full-rtt -m 64 --tcp", Version: "sockperf, version 3.7-no.git",
					Value: sum(50, 50, 63, 3), Ratio: sum(0.96, 0.79, 1.19, 3), Procs: rssOnly(23000, 12000),
					LatencyRatio: map[string]Summary{"p50": sum(0.96, 0.79, 1.19, 3), "p99": sum(0.92, 0.8, 1.1, 3)}}}},
		},
	}
	r.Targets = EvalTargets(r)
	return r
}

func TestWriteTablesGolden(t *testing.T) {
	var b strings.Builder
	WriteTables(&b, sampleResults(), "bench/results/2026-12-01-vm.json")
	golden.Check(t, "testdata/tables.golden.md", b.String())
	for _, want := range []string{
		"| workload | blast runs | blast | peer runs | peer | blast/peer | iperf3 3.21 runs | iperf3 3.21 | blast/iperf3 3.21 |",
		"against iperf3 3.21, the older ones against iperf3 3.12 (Debian)",
		"| #10 | peak RSS, ttcp mode, 1 TCP stream (blast -t and -r): <= 32 MB | - | 21.0 MB (largest) |",
		"| #10 | TCP latency, client on cpu0, server on cpu1: p99 <= 1.0x sockperf | sockperf | 0.92x | 0.80x to 1.10x (3 rounds) | **met** |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("tables lack %q", want)
		}
	}
}

// The README keeps its text outside the markers and replaces what is
// between them; a results file read back renders the same tables.
func TestUpdateREADMEAndReadJSON(t *testing.T) {
	dir := t.TempDir()
	r := sampleResults()
	js := filepath.Join(dir, "results", "run.json")
	if err := WriteJSON(js, r); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(js)
	if err != nil {
		t.Fatal(err)
	}
	var want, got strings.Builder
	WriteTables(&want, r, js)
	WriteTables(&got, back, js)
	if diff := cmp.Diff(want.String(), got.String()); diff != "" {
		t.Errorf("tables of the results read back (-want +got):\n%s", diff)
	}

	readme := filepath.Join(dir, "README.md")
	old := "# hand-written\n\nkept\n\n" + beginMark + "\nold tables\n" + endMark + "\n\ntail kept\n"
	if err := os.WriteFile(readme, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := UpdateREADME(readme, back, js); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.HasPrefix(s, "# hand-written\n\nkept\n\n"+beginMark+"\n") || !strings.HasSuffix(s, endMark+"\n\ntail kept\n") ||
		strings.Contains(s, "old tables") || !strings.Contains(s, "### Targets") {
		t.Errorf("README after update:\n%s", s)
	}
}

// The README's hand-written head is readmeIntro, which UpdateREADME
// writes when the file has no markers: the two say the same.
func TestREADMEIntro(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	head, _, ok := strings.Cut(string(b), beginMark)
	if !ok {
		t.Fatal("README.md has no generated part")
	}
	if diff := cmp.Diff(readmeIntro+"\n", head); diff != "" {
		t.Errorf("readmeIntro and README.md's head differ (-readmeIntro +README.md):\n%s", diff)
	}
}
