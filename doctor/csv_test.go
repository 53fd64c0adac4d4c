package doctor

import (
	"encoding/csv"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/internal/golden"
	"github.com/blastnet/blast/internal/safetext"
	"github.com/blastnet/blast/latency"
	"github.com/blastnet/blast/pathmtu"
)

func csvMicro(v float64) time.Duration { return time.Duration(math.Round(v * 1e3)) }

const csvBase = "blast client 198.18.0.2 -p 5201 -t 3"

func csvLatency() Test {
	return Test{Name: "latency", Command: "blast lat 198.18.0.2 -p 5201 -t 2",
		RTT: &latency.Stats{Count: 61841, Min: csvMicro(24.512), Mean: csvMicro(31.201), StdDev: csvMicro(6.877), P50: csvMicro(30.271),
			P90: csvMicro(35.391), P99: csvMicro(48.191), P999: csvMicro(95.487), P9999: csvMicro(213.247), Max: csvMicro(1204.113)}}
}

// mtuMismatch is blast doctor against a server whose link has a smaller
// MTU: TCP hides it, the UDP test's full-size datagrams are lost.
func mtuMismatch() *Report {
	d16 := finding.Finding{Rule: "D16", Severity: finding.Error, Iface: "bl1cf.1a",
		Summary:  "datagrams larger than the path's MTU are lost",
		Evidence: "1472-byte datagrams make 1500-byte packets; MTU sender 1500, receiver 1400; 85612 of 85612 datagrams lost (100%); sender tx_dropped +0",
		Fix:      "send datagrams of at most 1372 bytes (-l 1372), or set the same MTU on both ends of every link (ip link set dev IFACE mtu N)"}
	mtu16 := finding.Finding{Rule: "D16", Severity: finding.Warn, Iface: "bl1cf.1a",
		Summary:  "the two ends of the link have different MTUs",
		Evidence: "MTU 1500 on the sender's bl1cf.1a, 1400 on the receiver's bl1cf.1b",
		Fix:      "set one MTU on both ends (ip link set dev IFACE mtu 1400): frames over 1400 bytes from the larger side are dropped, and only TCP's MSS hides it"}
	d22 := finding.Finding{Rule: "D22", Severity: finding.Info, Iface: "bl1cf.1a",
		Summary:  "the sender is CPU-bound: a core per stream was busy the whole test",
		Evidence: "the sender (lab-a) used 98% of a core per stream (1 stream(s)) for 9.21 Gbit/s",
		Fix:      "more streams (-P) on more cores, a copy-free backend (--backend splice or sendfile to send, larger -l), or a faster CPU"}
	rep := &Report{Host: "198.18.0.2", Port: 5201, Tests: []Test{
		{Name: "tcp upload", Command: csvBase, Bps: 9.214e9, Retransmits: 12, Findings: []finding.Finding{mtu16, d22}},
		{Name: "tcp download", Command: csvBase + " -R", Bps: 9.087e9, Retransmits: 3, Findings: []finding.Finding{mtu16}},
		{Name: "udp upload", Command: csvBase + " -u -b 500M --backend mmsg -l 1472", RateBps: 500e6, Datagram: 1472,
			Sent: 85612, Lost: 85612, Findings: []finding.Finding{d16}},
		csvLatency(),
	}}
	var lists [][]finding.Finding
	for _, t := range rep.Tests {
		lists = append(lists, t.Findings)
	}
	return rep.Finish(lists)
}

// healthyPath is blast doctor on a path with nothing wrong: one note.
func healthyPath() *Report {
	d22 := finding.Finding{Rule: "D22", Severity: finding.Info, Iface: "eth0",
		Summary:  "the receiver's host is bound by packet processing: a core spent the test in softirq",
		Evidence: "cpu3 spent 97% of the test in softirq on the receiver (lab-b)",
		Fix:      "spread the packet work over more cores: more queues (ethtool -L IFACE combined N) with irqbalance, RPS/RFS, or GRO/GSO to handle fewer, larger packets"}
	rep := &Report{Host: "198.18.0.2", Port: 5201, Tests: []Test{
		{Name: "tcp upload", Command: csvBase, Bps: 9.412e9},
		{Name: "path mtu", Command: "tracepath -n 198.18.0.2 (upload only)", PathMTU: &pathmtu.Result{
			Up:   pathmtu.Direction{Measured: true, PMTU: 1500, Exact: true, SenderMTU: 1500, Learned: 1500, Rounds: 1},
			Down: pathmtu.Direction{Measured: true, PMTU: 1500, Exact: true, SenderMTU: 1500, Learned: 1500, Rounds: 1}}},
		{Name: "tcp download", Command: csvBase + " -R", Bps: 9.398e9, Findings: []finding.Finding{d22}},
		{Name: "udp upload", Command: csvBase + " -u -b 500M --backend mmsg -l 1472", RateBps: 500e6, Datagram: 1472, Bps: 499.97e6, Sent: 42806},
		csvLatency(),
	}}
	return rep.Finish([][]finding.Finding{nil, {d22}, nil})
}

// failedTests is blast doctor against a server that went away after the
// upload: the download broke off, the UDP test and the latency run could
// not start.
func failedTests() *Report {
	rep := &Report{Host: "198.18.0.2", Port: 5201, Tests: []Test{
		{Name: "tcp upload", Command: csvBase, Bps: 9.301e9, Retransmits: 0},
		{Name: "tcp download", Command: csvBase + " -R", Bps: 4.12e9, Retransmits: 0,
			Err: "stream 1: read: connection reset by peer"},
		{Name: "udp upload", Command: csvBase + " -u -b 500M --backend mmsg -l 1472", RateBps: 500e6,
			Err: "control: dial tcp 198.18.0.2:5201: connect: connection refused"},
		{Name: "latency", Command: "blast lat 198.18.0.2 -p 5201 -t 2",
			Err: "latency: dial tcp 198.18.0.2:5201: connect: connection refused"},
	}}
	return rep.Finish(nil)
}

// hostilePeer is a report whose interface name and evidence came from a
// peer that put a terminal escape, quotes, commas and a line break in
// them: the CSV escapes the escape and quotes the rest.
func hostilePeer() *Report {
	f := finding.Finding{Rule: "D3", Severity: finding.Warn, Iface: "eth0\x1b[2J\"x\"",
		Summary:  "receive errors, CRC/frame errors",
		Evidence: "rx_crc_errors +1204, rx_frame_errors +17 on \"eth0\"\nreported by the peer",
		Fix:      "replace the cable or the transceiver; check \"ethtool -S eth0\""}
	rep := &Report{Host: "198.18.0.2", Port: 5201, Tests: []Test{
		{Name: "tcp upload", Command: csvBase, Bps: 8.7e9, Retransmits: 912, Findings: []finding.Finding{f}},
	}}
	return rep.Finish([][]finding.Finding{{f}})
}

var csvReports = []struct {
	name string
	rep  func() *Report
}{
	{"mtu-mismatch", mtuMismatch},
	{"healthy", healthyPath},
	{"failed-tests", failedTests},
	{"hostile-peer", hostilePeer},
}

func TestCSVGolden(t *testing.T) {
	for _, tc := range csvReports {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteCSV(&b, tc.rep()); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "testdata/golden/csv-"+tc.name+".csv", b.String())
		})
	}
}

// TestCSVParses reads each report's CSV back: the header, every row as
// long as it, the tests in order, the verdict, then the findings ranked
// from 1, every text cell what the report holds (escaped as WriteText
// escapes it, line breaks kept), no terminal escape anywhere, and the
// figures of each test's kind and no others.
func TestCSVParses(t *testing.T) {
	col := func(name string) int { return slices.Index(csvHeader, name) }
	figures := []string{"bits_per_second", "target_bits_per_second", "retransmits", "datagram_bytes", "sent_datagrams",
		"lost_datagrams", "rtt_min_us", "rtt_p50_us", "rtt_p99_us", "rtt_max_us"}
	for _, tc := range csvReports {
		t.Run(tc.name, func(t *testing.T) {
			rep := tc.rep()
			var b strings.Builder
			if err := WriteCSV(&b, rep); err != nil {
				t.Fatal(err)
			}
			if strings.ContainsRune(b.String(), '\x1b') {
				t.Errorf("a terminal escape reached the output")
			}
			cr := csv.NewReader(strings.NewReader(b.String()))
			cr.FieldsPerRecord = -1 // checked below, to say which row
			recs, err := cr.ReadAll()
			if err != nil {
				t.Fatalf("the output does not parse as CSV: %v", err)
			}
			if len(recs) == 0 {
				t.Fatal("no header")
			}
			if diff := cmp.Diff(csvHeader, recs[0]); diff != "" {
				t.Fatalf("header (-want +got):\n%s", diff)
			}
			rows := recs[1:]
			if want := len(rep.Tests) + 1 + len(rep.Findings); len(rows) != want {
				t.Fatalf("%d rows, want %d tests, the verdict and %d findings", len(rows), len(rep.Tests), len(rep.Findings))
			}
			for i, row := range rows {
				if len(row) != len(csvHeader) {
					t.Fatalf("row %d has %d fields, the header %d: %q", i+1, len(row), len(csvHeader), row)
				}
			}
			for i, tt := range rep.Tests {
				row := rows[i]
				if row[col("kind")] != "test" || row[col("name")] != tt.Name || row[col("command")] != tt.Command || row[col("error")] != tt.Err {
					t.Errorf("test row %d: %q, want the test %q", i+1, row, tt.Name)
				}
				var want []string
				switch {
				case tt.Err != "" && tt.Bps == 0 && tt.RTT == nil:
				case tt.RTT != nil:
					want = []string{"rtt_min_us", "rtt_p50_us", "rtt_p99_us", "rtt_max_us"}
				case tt.PathMTU != nil:
					if row[col("path_mtu_upload_bytes")] != strconv.Itoa(tt.PathMTU.Up.PMTU) || row[col("path_mtu_download_bytes")] != strconv.Itoa(tt.PathMTU.Down.PMTU) {
						t.Errorf("test %q: path MTU %q, %q; want %d, %d", tt.Name, row[col("path_mtu_upload_bytes")], row[col("path_mtu_download_bytes")], tt.PathMTU.Up.PMTU, tt.PathMTU.Down.PMTU)
					}
				case tt.Datagram > 0:
					want = []string{"bits_per_second", "datagram_bytes", "sent_datagrams", "lost_datagrams"}
				default:
					want = []string{"bits_per_second", "retransmits"}
				}
				if tt.RateBps > 0 {
					want = append(want, "target_bits_per_second")
				}
				for _, name := range figures {
					v := row[col(name)]
					if set := v != ""; set != slices.Contains(want, name) {
						t.Errorf("test %q: %s = %q", tt.Name, name, v)
					} else if set {
						if _, err := strconv.ParseFloat(v, 64); err != nil {
							t.Errorf("test %q: %s %q is not a number", tt.Name, name, v)
						}
					}
				}
			}
			verdict := rows[len(rep.Tests)]
			if verdict[col("kind")] != "verdict" || verdict[col("summary")] != rep.Verdict || verdict[col("healthy")] != strconv.FormatBool(rep.Healthy) {
				t.Errorf("verdict row %q, want %q healthy %v", verdict, rep.Verdict, rep.Healthy)
			}
			for i, f := range rep.Findings {
				row := rows[len(rep.Tests)+1+i]
				want := map[string]string{"kind": "finding", "rank": strconv.Itoa(i + 1), "rule": string(f.Rule), "severity": f.Severity.String(),
					"iface": safetext.Escape(f.Iface), "summary": f.Summary, "evidence": f.Evidence, "fix": f.Fix, "invalid": strconv.FormatBool(f.Invalid)}
				for name, w := range want {
					if got := row[col(name)]; got != w {
						t.Errorf("finding %d: %s %q, want %q", i+1, name, got, w)
					}
				}
				for _, name := range figures {
					if row[col(name)] != "" {
						t.Errorf("finding %d: %s %q", i+1, name, row[col(name)])
					}
				}
			}
		})
	}
}

// TestTextUnit: -f sets the unit of every rate in the text, the verdict
// included (its JSON and CSV numbers stay in bit/s).
func TestTextUnit(t *testing.T) {
	rep := healthyPath()
	rep.Unit = 'm'
	rep = rep.Finish(nil)
	var b strings.Builder
	if err := WriteText(&b, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  tcp upload    9412 Mbit/s, 0 retransmits\n",
		"  udp upload    500 Mbit/s at 500 Mbit/s, 1472-byte datagrams, 0 of 42806 lost\n",
		"  path mtu      upload 1500 bytes (the sender's MTU), download 1500 bytes (the sender's MTU)\n",
		"verdict: healthy: tcp upload 9412 Mbit/s, path mtu 1500 bytes both ways, tcp download 9398 Mbit/s, udp upload 500 Mbit/s with 0 of 42806 datagrams lost",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("-f m: no %q in:\n%s", want, b.String())
		}
	}
}
