package render

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/golden"
	"github.com/blastnet/blast/internal/testkit"
)

// csvClientP2 is blast client -P 2 -t 3: two streams over three intervals,
// with retransmits and a congestion window on both, against a blast
// server.
func csvClientP2() *result.Result {
	ivs := intervals(
		[]goldenIv{
			{socket: 5, id: 1, sender: true, start: 0, end: 1.000117, calls: 4410, retr: 12, cwnd: 1048576, rtt: 512, minRTT: 64},
			{socket: 7, id: 2, sender: true, start: 0, end: 1.000117, calls: 4388, retr: 9, cwnd: 983040, rtt: 530, minRTT: 66},
		},
		[]goldenIv{
			{socket: 5, id: 1, sender: true, start: 1.000117, end: 2.000204, calls: 4502, retr: 0, cwnd: 1310720, rtt: 488, minRTT: 64},
			{socket: 7, id: 2, sender: true, start: 1.000117, end: 2.000204, calls: 4471, retr: 3, cwnd: 1179648, rtt: 495, minRTT: 66},
		},
		[]goldenIv{
			{socket: 5, id: 1, sender: true, start: 2.000204, end: 3.000093, calls: 4498, retr: 1, cwnd: 1376256, rtt: 471, minRTT: 63},
			{socket: 7, id: 2, sender: true, start: 2.000204, end: 3.000093, calls: 4467, retr: 0, cwnd: 1245184, rtt: 480, minRTT: 66},
		},
	)
	r := &result.Result{
		Role: "client", Version: result.Version, SystemInfo: "Linux lab-a 6.12.0 #1 SMP x86_64", Time: goldenTime,
		Peer: addrPort(goldenServer, 5201), Host: "198.18.0.2", Cookie: "p2p2p2p2p2p2p2p2p2p2p2p2p2p2p2p2p2p2",
		Params:         wire.Params{TCP: true, Time: 3, Parallel: 2, Len: goldenBlock, Blast: &wire.BlastParams{Version: result.Version}},
		TCPMSSDefault:  1448,
		Intervals:      ivs,
		CPU:            result.CPUUtil{Total: 51.2, User: 1.6, System: 49.6, UserSeconds: 0.05, SystemSeconds: 1.49},
		RemoteCPU:      result.CPUUtil{Total: 63.0, User: 2.2, System: 60.8, UserSeconds: 0.07, SystemSeconds: 1.82},
		HasRetransmits: true, Congestion: "cubic", RemoteCongestion: "cubic",
		Backend: "readwrite", RemoteBackend: "readwrite", RemoteVersion: result.Version,
	}
	peerBytes := []int64{1751121920, 1734606848}
	for i, cwnd := range []int64{1376256, 1245184} {
		sr := streamFromIntervals(&result.StreamResult{ID: i + 1, Socket: 5 + 2*i, Sender: true,
			Local: addrPort(goldenClient, uint16(50480+i)), Remote: addrPort(goldenServer, 5201),
			PeerBytes: peerBytes[i], PeerSeconds: 3.040117,
			MaxSndCwnd: cwnd, MaxSndWnd: 3 << 20, MinRTT: 63 + int64(3*i), MaxRTT: 512 + int64(18*i), MeanRTT: 490 + int64(12*i)}, ivs)
		sr.PeerIO = &engine.Sample{Bytes: peerBytes[i], Calls: peerBytes[i] / 65536, MinIO: 1448, MaxIO: goldenBlock}
		r.Streams = append(r.Streams, sr)
	}
	return r
}

// csvResults are the golden Results of the text and JSON renderers, and
// those only the CSV has.
func csvResults() []struct {
	name string
	r    func() *result.Result
} {
	return append(slices.Clone(goldenResults), struct {
		name string
		r    func() *result.Result
	}{"client-p2", csvClientP2})
}

func TestCSVGolden(t *testing.T) {
	for _, tc := range csvResults() {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteCSV(&b, tc.r()); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "testdata/golden/csv-"+tc.name+".csv", b.String())
		})
	}
}

// readCSV parses what WriteCSV wrote: the header must be csvHeader and
// every row as long. It returns the rows as maps by column name.
func readCSV(t *testing.T, s string) []map[string]string {
	t.Helper()
	var rows []map[string]string
	for _, rec := range testkit.ReadCSV(t, s, csvHeader) {
		m := map[string]string{}
		for j, name := range csvHeader {
			m[name] = rec[j]
		}
		rows = append(rows, m)
	}
	return rows
}

// TestCSVParses reads every golden Result's CSV back: one header, every
// row as long as it, a known kind, numbers or booleans in the cells that
// are set, nothing of TCP on a UDP test and nothing of UDP on a TCP one,
// omitted on intervals only, and a stream id on every row but the sums.
func TestCSVParses(t *testing.T) {
	kinds := []string{"interval", "interval_sum", "stream_sent", "stream_received", "sum_sent", "sum_received"}
	tcpOnly := []string{"retransmits", "cwnd_bytes", "rtt_us", "max_cwnd_bytes", "min_rtt_us", "mean_rtt_us", "max_rtt_us"}
	udpOnly := []string{"packets", "lost", "out_of_order", "duplicates", "jitter_ms"}
	for _, tc := range csvResults() {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r()
			var b strings.Builder
			if err := WriteCSV(&b, r); err != nil {
				t.Fatal(err)
			}
			for i, row := range readCSV(t, b.String()) {
				kind := row["kind"]
				if !slices.Contains(kinds, kind) {
					t.Errorf("row %d: kind %q", i+1, kind)
				}
				for name, v := range row {
					if name == "kind" || v == "" {
						continue
					}
					if name == "sender" || name == "omitted" {
						if _, err := strconv.ParseBool(v); err != nil {
							t.Errorf("row %d: %s %q is not a boolean", i+1, name, v)
						}
					} else if _, err := strconv.ParseFloat(v, 64); err != nil {
						t.Errorf("row %d: %s %q is not a number", i+1, name, v)
					}
				}
				notHere := udpOnly
				if r.UDP() {
					notHere = tcpOnly
				}
				for _, name := range notHere {
					if row[name] != "" {
						t.Errorf("row %d (%s): %s = %q on a %s test", i+1, kind, name, row[name], map[bool]string{true: "UDP", false: "TCP"}[r.UDP()])
					}
				}
				interval := strings.HasPrefix(kind, "interval")
				if (row["omitted"] != "") != interval {
					t.Errorf("row %d (%s): omitted = %q", i+1, kind, row["omitted"])
				}
				if sum := strings.Contains(kind, "sum"); (row["stream"] == "") != sum {
					t.Errorf("row %d (%s): stream = %q", i+1, kind, row["stream"])
				}
				if row["sender"] == "" || row["bytes"] == "" || row["bits_per_second"] == "" {
					t.Errorf("row %d (%s): sender, bytes or bits_per_second missing: %v", i+1, kind, row)
				}
			}
		})
	}
}

// TestCSVRows checks the rows of a few Results by kind and what their
// sums add up to.
func TestCSVRows(t *testing.T) {
	for _, tc := range []struct {
		name  string
		r     *result.Result
		kinds map[string]int
	}{
		{"two TCP streams, three intervals", csvClientP2(),
			map[string]int{"interval": 6, "interval_sum": 3, "stream_sent": 2, "stream_received": 2, "sum_sent": 1, "sum_received": 1}},
		{"omitted interval", clientP3(),
			map[string]int{"interval": 9, "interval_sum": 3, "stream_sent": 3, "stream_received": 3, "sum_sent": 1, "sum_received": 1}},
		{"bidir: each direction its sums", clientBidir(),
			map[string]int{"interval": 4, "interval_sum": 4, "stream_sent": 2, "stream_received": 2, "sum_sent": 2, "sum_received": 2}},
		// The peer's results never came: no received view, no sum of it.
		{"failed", clientFailed(),
			map[string]int{"interval": 4, "interval_sum": 2, "stream_sent": 2, "sum_sent": 1}},
		{"no intervals", clientNoIntervals(),
			map[string]int{"stream_sent": 1, "stream_received": 1, "sum_sent": 1, "sum_received": 1}},
		{"UDP with loss", udpClientP2Loss(),
			map[string]int{"interval": 4, "interval_sum": 2, "stream_sent": 2, "stream_received": 2, "sum_sent": 1, "sum_received": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteCSV(&b, tc.r); err != nil {
				t.Fatal(err)
			}
			rows := readCSV(t, b.String())
			got := map[string]int{}
			for _, row := range rows {
				got[row["kind"]]++
			}
			if diff := cmp.Diff(tc.kinds, got); diff != "" {
				t.Errorf("rows by kind (-want +got):\n%s", diff)
			}
			// Each sum is the sum of its streams' rows of the same
			// direction (and interval: an omitted one starts at 0 too).
			type key struct{ kind, sender, omitted, start string }
			want := map[key][2]int64{} // bytes, retransmits
			for _, row := range rows {
				var k key
				switch row["kind"] {
				case "interval":
					k = key{"interval_sum", row["sender"], row["omitted"], row["start_s"]}
				case "stream_sent":
					k = key{"sum_sent", row["sender"], "", ""}
				case "stream_received":
					k = key{"sum_received", row["sender"], "", ""}
				default:
					continue
				}
				w := want[k]
				w[0] += csvAtoi(t, row["bytes"])
				w[1] += csvAtoi(t, row["retransmits"])
				want[k] = w
			}
			for _, row := range rows {
				if !strings.Contains(row["kind"], "sum") {
					continue
				}
				k := key{row["kind"], row["sender"], "", ""}
				if k.kind == "interval_sum" {
					k.omitted, k.start = row["omitted"], row["start_s"]
				}
				if got := [2]int64{csvAtoi(t, row["bytes"]), csvAtoi(t, row["retransmits"])}; got != want[k] {
					t.Errorf("%v: bytes, retransmits %v, its streams add up to %v", k, got, want[k])
				}
			}
		})
	}
}

func csvAtoi(t *testing.T, s string) int64 {
	t.Helper()
	if s == "" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCSVNotConnected: a test that never connected has the header alone.
func TestCSVNotConnected(t *testing.T) {
	var b strings.Builder
	if err := WriteCSV(&b, connectRefused()); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), strings.Join(csvHeader, ",")+"\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
