package plot

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"image/png"
	"io"
	"math"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/compare"
	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/doctor"
	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/latency"
)

// -keep DIR writes every picture the tests draw into DIR too, to look at.
var keep = flag.String("keep", "", "also write the test pictures into this `dir`")

// tcpRun is a 10 s, 4-stream TCP upload in 1 s intervals: the windows ramp
// up in slow start, and a few losses cut them back.
func tcpRun() *result.Result {
	rng := rand.New(rand.NewPCG(1, 2))
	r := &result.Result{Role: "client", Host: "198.18.0.2", Peer: netip.MustParseAddrPort("198.18.0.2:5201"),
		Params: wire.Params{TCP: true, Parallel: 4, Time: 10}, Backend: "readwrite", RemoteBackend: "readwrite",
		HasRetransmits: true, Congestion: "cubic"}
	ids := []int{1, 3, 4, 5}
	cwnd := []float64{600e3, 450e3, 520e3, 380e3}
	growth := []float64{1.8, 1.6, 1.7, 1.5}
	losses := map[[2]int]int64{{3, 1}: 12, {5, 2}: 4, {6, 0}: 31, {8, 3}: 7}
	for i := range 10 {
		iv := &result.Interval{}
		for s, id := range ids {
			if k := losses[[2]int{i, s}]; k > 0 {
				cwnd[s] *= 0.7
			} else {
				cwnd[s] = min(cwnd[s]*growth[s], 3.2e6+float64(s)*200e3)
			}
			bps := 2.35e9 * (0.85 + 0.3*rng.Float64()) * min(1, cwnd[s]/1.5e6)
			iv.Streams = append(iv.Streams, result.StreamInterval{ID: id, Socket: 5 + s, Sender: true,
				Start: float64(i), End: float64(i + 1), Bytes: int64(bps / 8),
				TCP:         &engine.TCPInfo{SndCwnd: int64(cwnd[s]), RTT: 180 + int64(rng.IntN(60)), SndMSS: 1448},
				Retransmits: losses[[2]int{i, s}]})
		}
		r.Intervals = append(r.Intervals, iv)
	}
	for _, id := range ids {
		r.Streams = append(r.Streams, &result.StreamResult{ID: id, Sender: true, Seconds: 10})
	}
	return r
}

// udpRun is a 5 s, 1-stream UDP download at 800 Mbit/s in 0.5 s
// intervals: this side receives and counts a few lost datagrams.
func udpRun() *result.Result {
	rng := rand.New(rand.NewPCG(3, 4))
	r := &result.Result{Role: "client", Host: "server.example", Peer: netip.MustParseAddrPort("[2001:db8::2]:5201"),
		Params: wire.Params{UDP: true, Parallel: 1, Reverse: true, Time: 5, Len: 1448}, Backend: "mmsg", RemoteBackend: "mmsg"}
	for i := range 10 {
		pk := int64(0.5 * 800e6 / 8 / 1448 * (0.98 + 0.04*rng.Float64()))
		lost := int64(0)
		if i == 3 || i == 7 {
			lost = int64(rng.IntN(400))
		}
		r.Intervals = append(r.Intervals, &result.Interval{Streams: []result.StreamInterval{{
			ID: 1, Socket: 5, Start: float64(i) / 2, End: float64(i+1) / 2, Bytes: (pk - lost) * 1448, Retransmits: -1,
			UDP: &wire.UDPStats{Packets: pk, Lost: lost, Jitter: 0.00002}}}})
	}
	return r
}

// bidirRun is a 6 s bidirectional run, 2 streams each way, seen from the
// server, with a 2 s omit period left out of the picture.
func bidirRun() *result.Result {
	r := &result.Result{Role: "server", Peer: netip.MustParseAddrPort("198.18.0.1:40000"),
		Params: wire.Params{TCP: true, Parallel: 2, Bidirectional: true, Time: 6, Omit: 2}, Backend: "splice", RemoteBackend: "readwrite"}
	for i := range 8 {
		iv := &result.Interval{Omitted: i < 2}
		t := float64(i - 2)
		if i < 2 {
			t = float64(i)
		}
		for s := range 4 {
			// The server sends on streams 3 and 4: the download.
			send := s >= 2
			si := result.StreamInterval{ID: wire.StreamID(s), Sender: send, Start: t, End: t + 1, Omitted: i < 2,
				Bytes: int64((3e9 + float64(s)*4e8 + float64(i%3)*2e8) / 8), Retransmits: -1}
			if send {
				si.TCP = &engine.TCPInfo{SndCwnd: int64(200e3 * float64(i+1))}
				si.Retransmits = int64(i % 2)
			}
			iv.Streams = append(iv.Streams, si)
		}
		r.Intervals = append(r.Intervals, iv)
	}
	return r
}

// manyRun is a 16-stream download in 0.1 s intervals: the client only
// receives, so it knows no congestion window.
func manyRun() *result.Result {
	rng := rand.New(rand.NewPCG(7, 8))
	r := &result.Result{Role: "client", Host: "10.0.0.2", Params: wire.Params{TCP: true, Parallel: 16, Reverse: true, Time: 3}}
	for i := range 30 {
		iv := &result.Interval{}
		for s := range 16 {
			iv.Streams = append(iv.Streams, result.StreamInterval{ID: wire.StreamID(s), Start: float64(i) / 10,
				End: float64(i+1) / 10, Bytes: int64(0.1 * 40e6 / 8 * (0.5 + rng.Float64())), Retransmits: -1})
		}
		r.Intervals = append(r.Intervals, iv)
	}
	return r
}

// wanLatency is a UDP latency run over a WAN: 20 to 80 ms, some lost.
func wanLatency() *latency.Result {
	rng := rand.New(rand.NewPCG(9, 10))
	h := latency.NewHistogram()
	for range 3000 {
		h.Record(time.Duration(21e6 + rng.ExpFloat64()*4e6))
	}
	return &latency.Result{Protocol: "udp", Remote: "203.0.113.9:5201", Size: 64, Requests: 3012, RoundTrips: 3000,
		Lost: 12, Timeout: time.Second, Elapsed: 10 * time.Second, RTT: h.Stats(), Buckets: h.Buckets()}
}

// compareRows are six rows of a TCP comparison: two skipped or failed.
func compareRows() ([]compare.Row, map[string]Interval) {
	rows := []compare.Row{
		{Case: "readwrite -> readwrite", BitsPerSec: 18.2e9, CPUPerGB: 0.21},
		{Case: "sendfile -> readwrite", BitsPerSec: 24.9e9, CPUPerGB: 0.14},
		{Case: "splice -> readwrite", BitsPerSec: 23.1e9, CPUPerGB: 0.16},
		{Case: "iouring[zc] -> readwrite", BitsPerSec: 27.4e9, TxCPUUnknown: true},
		{Case: "afxdp -> afxdp", Skipped: "afxdp: needs CAP_NET_ADMIN; run as root"},
		{Case: "readwrite -> iouring[multishot]", Error: "receive: io_uring_setup: operation not permitted"},
	}
	ivs := map[string]Interval{
		"readwrite -> readwrite": {Low: 17.1e9, High: 19.3e9},
		"sendfile -> readwrite":  {Low: 24.0e9, High: 25.8e9},
		"splice -> readwrite":    {Low: 21.0e9, High: 25.2e9},
	}
	return rows, ivs
}

// latencyRun is 5000 round trips around 40 µs with a tail to 2 ms, in the
// histogram's own buckets.
func latencyRun() *latency.Result {
	rng := rand.New(rand.NewPCG(5, 6))
	h := latency.NewHistogram()
	for range 5000 {
		d := 38e3 * math.Exp(0.18*rng.NormFloat64())
		if rng.IntN(100) == 0 {
			d = 60e3 + rng.ExpFloat64()*300e3
		}
		h.Record(time.Duration(d))
	}
	return &latency.Result{Protocol: "tcp", Remote: "198.18.0.2:5201", Size: 1, Requests: 5000, RoundTrips: 5000,
		Elapsed: 250 * time.Millisecond, RTT: h.Stats(), Buckets: h.Buckets()}
}

// loadedLatency is a --load run: latencyRun's round trips idle, then
// 5000 beside a bulk stream, around 800 µs with a tail to 12 ms.
func loadedLatency() *latency.Result {
	rng := rand.New(rand.NewPCG(7, 8))
	h := latency.NewHistogram()
	for range 5000 {
		d := 800e3 * math.Exp(0.3*rng.NormFloat64())
		if rng.IntN(100) == 0 {
			d = 2e6 + rng.ExpFloat64()*3e6
		}
		h.Record(time.Duration(d))
	}
	r := &latency.Result{Protocol: "tcp", Remote: "198.18.0.2:5201", Size: 64, Requests: 5000, RoundTrips: 5000,
		Elapsed: 4 * time.Second, LoadBps: 4.8e9, RTT: h.Stats(), Buckets: h.Buckets()}
	r.Idle = latencyRun()
	return r
}

func doctorReport() *doctor.Report {
	return &doctor.Report{Host: "198.18.0.2", Port: 5201, Tests: []doctor.Test{
		{Name: "tcp upload", Bps: 9.41e9, Retransmits: 12},
		{Name: "tcp download", Bps: 3.12e9, Retransmits: 4210},
		{Name: "udp upload", Bps: 481.3e6, RateBps: 500e6, Datagram: 1472, Sent: 212000, Lost: 8100},
		{Name: "latency", RTT: &latency.Stats{P50: 41 * time.Microsecond, P99: 95 * time.Microsecond}},
	}, Findings: []finding.Finding{{Severity: finding.Warn, Rule: "D7",
		Summary: "download is 3x slower than upload with 350x the retransmits: the reverse path drops (a policer or a full queue on the server side)"}},
		Verdict: "WARN D7: download is 3x slower than upload with 350x the retransmits: the reverse path drops (a policer or a full queue on the server side)"}
}

// draw is one picture a test draws, and the texts its SVG must hold.
type drawCase struct {
	name string
	draw func(path string) error
	want []string
}

func cases() []drawCase {
	rows, ivs := compareRows()
	return []drawCase{
		{"tcp", func(p string) error { return ClientRun(p, tcpRun()) },
			[]string{"blast client -&gt; 198.18.0.2: TCP, 4 streams, upload (readwrite)", "stream 1", "stream 4", "SUM",
				"time (s)", "throughput (Gbit/s)", "cwnd (MiB)", "retransmits", "54 retransmits"}},
		{"udp", func(p string) error { return ClientRun(p, udpRun()) },
			[]string{"UDP, 1 stream, download (mmsg)", "stream 1", "time (s)", "throughput (Mbit/s)", "lost datagrams"}},
		{"compare", func(p string) error { return Compare(p, rows, ivs, "blast compare --lab: TCP, 10 s per row") },
			[]string{"blast compare --lab: TCP, 10 s per row", "sendfile -&gt; readwrite", "throughput (Gbit/s)",
				"CPU-s/GB", "confidence interval", "afxdp -&gt; afxdp", "skipped", "failed"}},
		{"latency", func(p string) error { return Latency(p, latencyRun(), "") },
			[]string{"blast lat -&gt; 198.18.0.2:5201", "round-trip time (µs)", "p50", "p99", "p99.9", "CDF"}},
		{"bidir", func(p string) error { return ClientRun(p, bidirRun()) },
			[]string{"blast server &lt;- 198.18.0.1: TCP, 2 streams each way, bidirectional (splice here, readwrite there)",
				"stream 1 (up)", "stream 4 (down)", "SUM upload", "SUM download", "cwnd (MiB)", "retransmits"}},
		{"many", func(p string) error { return ClientRun(p, manyRun()) },
			[]string{"16 streams, download", "streams 1-16", "SUM", "throughput (Mbit/s)", "time (s)"}},
		{"compare-plain", func(p string) error { return Compare(p, rows[:4], nil, "") },
			[]string{"blast compare", "readwrite -&gt; readwrite", "throughput (Gbit/s)", "CPU-s/GB"}},
		{"latency-wan", func(p string) error { return Latency(p, wanLatency(), "") },
			[]string{"blast lat -&gt; 203.0.113.9:5201: UDP, 64-byte requests, 10 s", "round-trip time (ms)", "p99.9", "12 of 3012 requests lost"}},
		{"latency-load", func(p string) error { return Latency(p, loadedLatency(), "") },
			[]string{"blast lat -&gt; 198.18.0.2:5201", "idle: 5000 round trips", "under load: 5000 round trips",
				"idle: CDF", "under load: CDF", "under load: percentiles", "Idle, before the bulk stream started"}},
		{"latency-repeated", func(p string) error { return LatencyRuns(p, latencyRuns()) },
			[]string{"TCP, 1-byte requests, 3 runs", "run 1", "run 3", "medians&#39; mean", "median round trip (µs)"}},
		{"repeated", func(p string) error { return ClientRuns(p, repeatedRuns()) },
			[]string{"upload (readwrite), 3 runs", "run 1", "run 3", "time (s)", "receivers&#39; mean"}},
		{"doctor", func(p string) error { return Doctor(p, doctorReport()) },
			[]string{"blast doctor 198.18.0.2", "WARN D7", "tcp upload", "tcp download", "udp upload", "9.41 Gbit/s", "throughput"}},
	}
}

func TestDraw(t *testing.T) {
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			svg, pngPath := filepath.Join(dir, c.name+".svg"), filepath.Join(dir, c.name+".png")
			if err := c.draw(svg); err != nil {
				t.Fatalf("draw %s: %v", svg, err)
			}
			if err := c.draw(pngPath); err != nil {
				t.Fatalf("draw %s: %v", pngPath, err)
			}
			b, err := os.ReadFile(svg)
			if err != nil {
				t.Fatal(err)
			}
			texts := checkSVG(t, b)
			for _, w := range c.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("SVG has no text %q; its texts:\n%s", w, strings.Join(texts, "\n"))
				}
			}
			checkPNG(t, pngPath)
			if *keep != "" {
				for _, p := range []string{svg, pngPath} {
					b, _ := os.ReadFile(p)
					if err := os.WriteFile(filepath.Join(*keep, filepath.Base(p)), b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
}

// checkSVG decodes every XML token of an SVG and returns its texts.
func checkSVG(t *testing.T, b []byte) []string {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	var texts []string
	inText, sawSVG := false, false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG does not parse: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			sawSVG = sawSVG || tok.Name.Local == "svg"
			inText = tok.Name.Local == "text"
		case xml.EndElement:
			inText = false
		case xml.CharData:
			if inText {
				texts = append(texts, string(tok))
			}
		}
	}
	if !sawSVG {
		t.Fatal("no <svg> element")
	}
	return texts
}

func checkPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("PNG does not decode: %v", err)
	}
	if got := img.Bounds().Size(); got.X != PixelWidth || got.Y != PixelHeight {
		t.Errorf("PNG is %dx%d, want %dx%d", got.X, got.Y, PixelWidth, PixelHeight)
	}
}

func TestBadExtension(t *testing.T) {
	rows, _ := compareRows()
	for _, c := range []struct {
		name string
		draw func(string) error
	}{
		{"client", func(p string) error { return ClientRun(p, tcpRun()) }},
		{"compare", func(p string) error { return Compare(p, rows, nil, "") }},
		{"latency", func(p string) error { return Latency(p, latencyRun(), "") }},
		{"doctor", func(p string) error { return Doctor(p, doctorReport()) }},
	} {
		for _, name := range []string{"run.pdf", "run", "run.svg.txt"} {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), name)
				err := c.draw(path)
				if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), ".svg or .png") {
					t.Fatalf("got %v, want an error naming .svg or .png", err)
				}
				if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s was written anyway", name)
				}
			})
		}
	}
	for _, ok := range []string{"a.svg", "b.PNG", "dir.x/c.png"} {
		if err := CheckPath(ok); err != nil {
			t.Errorf("CheckPath(%q) = %v, want nil", ok, err)
		}
	}
}
