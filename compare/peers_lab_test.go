package compare

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/blasttest"
	"github.com/blastnet/blast/internal/netlab"
	"github.com/blastnet/blast/internal/netlab/labtest"
	"github.com/blastnet/blast/report"
)

// TestPeers measures blast's backends against iperf3 in one netns lab,
// alternating blast and the peer, and logs the medians and their ratios.
// It is a measurement, not a check: a timing never fails it. Run it with
//
//	BLAST_PEERS=1 go test -run TestPeers -v ./compare/
//
// BLAST_PEERS_ROUNDS (default 3) and BLAST_PEERS_SECS (default 3) set the
// rounds and the seconds per run; BLAST_PEERS_ONLY=udp|tcp limits the set.
func TestPeers(t *testing.T) {
	if os.Getenv("BLAST_PEERS") == "" {
		t.Skip("a measurement against iperf3: set BLAST_PEERS=1 to run it")
	}
	labtest.RequireRoot(t)
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Skip("iperf3 is not installed")
	}
	rounds := envInt("BLAST_PEERS_ROUNDS", 3)
	secs := envInt("BLAST_PEERS_SECS", 3)
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	only := os.Getenv("BLAST_PEERS_ONLY")
	if only == "" || only == "udp" {
		peerUDP(t, lab, rounds, secs)
	}
	if only == "" || only == "udp" || only == "ttcp" {
		peerUDPTTCP(t, lab, rounds, secs)
	}
	if only == "" || only == "tcp" {
		peerTCP(t, lab, rounds, secs)
	}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// iperf3 runs one iperf3 client against a one-off server in the lab and
// returns its JSON result.
func iperf3(t *testing.T, lab *netlab.Lab, args ...string) map[string]any {
	t.Helper()
	srv := lab.B.Command("iperf3", "-s", "-1", "-B", lab.B.Addr4.String())
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Wait()
	time.Sleep(200 * time.Millisecond)
	out, err := lab.A.Command("iperf3", append([]string{"-c", lab.B.Addr4.String(), "-J"}, args...)...).Output()
	if err != nil {
		t.Fatalf("iperf3 %v: %v\n%s", args, err, out)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("iperf3 JSON: %v", err)
	}
	return m
}

func dig(m map[string]any, path ...string) float64 {
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return 0
		}
		v = mm[p]
	}
	f, _ := v.(float64)
	return f
}

func peerUDP(t *testing.T, lab *netlab.Lab, rounds, secs int) {
	d := time.Duration(secs) * time.Second
	cfg := Config{UDP: true, Duration: d, BufLen: 64}
	cases := []Case{
		{Tx: "mmsg", Rx: "mmsg"},
		{Tx: "mmsg", Rx: "mmsg", TxOpts: "gso", RxOpts: "gro"},
	}
	var peer []float64
	blast := make([][]float64, len(cases))
	for r := range rounds {
		m := iperf3(t, lab, "-u", "-b", "0", "-l", "64", "-t", strconv.Itoa(secs))
		got := (dig(m, "end", "sum", "packets") - dig(m, "end", "sum", "lost_packets")) / dig(m, "end", "sum", "seconds")
		peer = append(peer, got)
		t.Logf("round %d: iperf3 -u -b 0 -l 64: %.0f datagrams/s delivered (lost %.2f%%)", r, got, dig(m, "end", "sum", "lost_percent"))
		for i, c := range cases {
			row := runCase(t.Context(), cfg, lab, c)
			if row.Error != "" {
				t.Fatalf("%s: %s", c.Name(), row.Error)
			}
			blast[i] = append(blast[i], row.PacketsSec)
			t.Logf("round %d: %s: %.0f datagrams/s delivered (lost %.2f%%, tx %d calls, rx %.1f datagrams/call, tx cpu %.2fs rx cpu %.2fs)",
				r, c.Name(), row.PacketsSec, row.LostPercent, row.TxCalls, float64(row.Rx.Datagrams)/float64(max(row.RxCalls, 1)), row.TxCPU.Total(), row.RxCPU.Total())
		}
	}
	p := median(peer)
	t.Logf("median iperf3 -u -b 0 -l 64: %.0f datagrams/s", p)
	for i, c := range cases {
		b := median(blast[i])
		t.Logf("median %s: %.0f datagrams/s = %.2fx iperf3", c.Name(), b, b/p)
	}
}

func peerTCP(t *testing.T, lab *netlab.Lab, rounds, secs int) {
	d := time.Duration(secs) * time.Second
	const bufLen = 128 << 10
	cfg := Config{Duration: d, BufLen: bufLen}
	type peerCase struct {
		name  string
		args  []string
		cases []Case
	}
	pcs := []peerCase{
		{"iperf3 -l 128K", nil, []Case{{Tx: "readwrite", Rx: "readwrite"}}},
		{"iperf3 -l 128K -Z", []string{"-Z"}, []Case{{Tx: "sendfile", Rx: "readwrite"}, {Tx: "splice", Rx: "readwrite"}}},
	}
	for _, pc := range pcs {
		var peerBps, peerCPU []float64
		bps := make([][]float64, len(pc.cases))
		cpu := make([][]float64, len(pc.cases))
		for r := range rounds {
			m := iperf3(t, lab, append([]string{"-l", "128K", "-t", strconv.Itoa(secs)}, pc.args...)...)
			got := dig(m, "end", "sum_received", "bits_per_second")
			secs := dig(m, "end", "sum_sent", "seconds")
			sent := dig(m, "end", "sum_sent", "bytes")
			// host_total is a percentage of the wall time (user+system).
			hostCPU := dig(m, "end", "cpu_utilization_percent", "host_total") / 100 * secs
			perGB := hostCPU / (sent / 1e9)
			peerBps = append(peerBps, got)
			peerCPU = append(peerCPU, perGB)
			t.Logf("round %d: %s: %s, sender %.3f CPU-s/GB", r, pc.name, report.SIRate(got), perGB)
			for i, c := range pc.cases {
				row := runCase(t.Context(), cfg, lab, c)
				if row.Error != "" {
					t.Fatalf("%s: %s", c.Name(), row.Error)
				}
				g := row.TxCPU.Total() / (float64(row.SentBytes) / 1e9)
				bps[i] = append(bps[i], row.BitsPerSec)
				cpu[i] = append(cpu[i], g)
				t.Logf("round %d: %s: %s, sender %.3f CPU-s/GB (%s)", r, c.Name(), report.SIRate(row.BitsPerSec), g, strings.Join(row.Notes, "; "))
			}
		}
		p, pc2 := median(peerBps), median(peerCPU)
		t.Logf("median %s: %s, sender %.3f CPU-s/GB", pc.name, report.SIRate(p), pc2)
		for i, c := range pc.cases {
			b, g := median(bps[i]), median(cpu[i])
			t.Logf("median %s: %s = %.2fx; sender %.3f CPU-s/GB = %.2fx", c.Name(), report.SIRate(b), b/p, g, g/pc2)
		}
	}
}

// TestOneCase runs BLAST_CASE (tx,rx,txopts,rxopts) once in a lab, for
// profiling.
func TestOneCase(t *testing.T) {
	spec := os.Getenv("BLAST_CASE")
	if spec == "" {
		t.Skip("set BLAST_CASE=tx,rx[,txopts[,rxopts]] (options separated by +)")
	}
	labtest.RequireRoot(t)
	f := strings.Split(spec, ",")
	for len(f) < 4 {
		f = append(f, "")
	}
	to, err := engine.ParseOptions(strings.ReplaceAll(f[2], "+", ","))
	if err != nil {
		t.Fatal(err)
	}
	ro, err := engine.ParseOptions(strings.ReplaceAll(f[3], "+", ","))
	if err != nil {
		t.Fatal(err)
	}
	c := Case{Tx: f[0], Rx: f[1], TxOpts: to, RxOpts: ro}
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	udp := os.Getenv("BLAST_TCP") == ""
	bufLen := 64
	if !udp {
		bufLen = 128 << 10
	}
	row := runCase(t.Context(), Config{UDP: udp, Duration: time.Duration(envInt("BLAST_PEERS_SECS", 3)) * time.Second, BufLen: bufLen}, lab, c)
	t.Logf("%.0f pkt/s %s lost %.2f%% tx %+v rx %+v txcpu %+v rxcpu %+v", row.PacketsSec, report.SIRate(row.BitsPerSec), row.LostPercent, row.Tx, row.Rx, row.TxCPU, row.RxCPU)
	t.Logf("tx syscalls %d rx syscalls %d", row.TxSyscalls, row.RxSyscalls)
	t.Logf("tx facts %v rx facts %v notes %v err %q", row.TxFacts, row.RxFacts, row.Notes, row.Error)
}

var ttcpRecv = regexp.MustCompile(`(?m)^blast-r: (\d+) bytes in ([0-9.]+) real seconds`)

// peerUDPTTCP measures mmsg the way iperf3 runs: two processes, blast -t
// and blast -r (ttcp mode), with the socket buffers left at the kernel's
// defaults on both sides, as iperf3 leaves them.
func peerUDPTTCP(t *testing.T, lab *netlab.Lab, rounds, secs int) {
	bin := blasttest.Bin
	type tcase struct{ name, tx, rx string }
	cases := []tcase{{"blast -u mmsg -> mmsg", "mmsg", "mmsg"}, {"blast -u mmsg:gso -> mmsg:gro", "mmsg:gso", "mmsg:gro"}}
	var peer []float64
	got := make([][]float64, len(cases))
	// About secs seconds at the rates seen here.
	nbuf := []int{300000 * secs, 10000000 * secs}
	for r := range rounds {
		m := iperf3(t, lab, "-u", "-b", "0", "-l", "64", "-t", strconv.Itoa(secs))
		p := (dig(m, "end", "sum", "packets") - dig(m, "end", "sum", "lost_packets")) / dig(m, "end", "sum", "seconds")
		peer = append(peer, p)
		t.Logf("round %d: iperf3 -u -b 0 -l 64: %.0f datagrams/s delivered", r, p)
		for i, c := range cases {
			rx := lab.B.Command(bin, "-r", "-s", "-u", "-l", "65507", "--backend", c.rx)
			var rout strings.Builder
			rx.Stdout = &rout
			if err := rx.Start(); err != nil {
				t.Fatal(err)
			}
			if err := netlab.WaitPort(t.Context(), rx.Process.Pid, "udp", 5001); err != nil {
				t.Fatal(err)
			}
			out, err := lab.A.Command(bin, "-t", "-s", "-u", "-l", "64", "-n", strconv.Itoa(nbuf[i]), "--backend", c.tx, lab.B.Addr4.String()).CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", c.name, err, out)
			}
			if err := rx.Wait(); err != nil {
				t.Fatalf("%s receiver: %v", c.name, err)
			}
			mm := ttcpRecv.FindStringSubmatch(rout.String())
			if mm == nil {
				t.Fatalf("no result line:\n%s", rout.String())
			}
			b, _ := strconv.ParseFloat(mm[1], 64)
			s, _ := strconv.ParseFloat(mm[2], 64)
			dps := b / 64 / s
			got[i] = append(got[i], dps)
			t.Logf("round %d: %s: %.0f datagrams/s delivered (%.1f%% of %d)", r, c.name, dps, 100*b/64/float64(nbuf[i]), nbuf[i])
			if os.Getenv("BLAST_PEERS_VERBOSE") != "" {
				t.Logf("transmitter:\n%s\nreceiver:\n%s", out, rout.String())
			}
		}
	}
	p := median(peer)
	t.Logf("median iperf3 -u -b 0 -l 64: %.0f datagrams/s", p)
	for i, c := range cases {
		b := median(got[i])
		t.Logf("median %s (ttcp mode): %.0f datagrams/s = %.2fx iperf3", c.name, b, b/p)
	}
}
