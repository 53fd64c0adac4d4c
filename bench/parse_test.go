package bench

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseTTCP(t *testing.T) {
	for _, tc := range []struct {
		file string
		want TTCPResult
	}{
		{"ttcp-tcp-t.txt", TTCPResult{Bytes: 2621440000, Seconds: 2.85, Backend: "readwrite"}},
		{"ttcp-udp-t.txt", TTCPResult{Bytes: 128000000, Seconds: 9.04, Datagrams: 2000000, Backend: "mmsg"}},
		{"ttcp-udp-r.txt", TTCPResult{Bytes: 108846144, Seconds: 9.05, Datagrams: 1700721, Backend: "mmsg"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, err := ParseTTCP(readTestdata(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseTTCP (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("classic ttcp prefix", func(t *testing.T) {
		got, err := ParseTTCP("ttcp-r: 16777216 bytes in 1.44 real seconds = 11377.78 KB/sec +++\n")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(TTCPResult{Bytes: 16777216, Seconds: 1.44}, got); diff != "" {
			t.Errorf("ParseTTCP (-want +got):\n%s", diff)
		}
	})
	t.Run("no result line", func(t *testing.T) {
		if _, err := ParseTTCP("blast-t: socket\nblast-t: connect: connection refused\n"); err == nil {
			t.Error("ParseTTCP of output without a byte count line: no error")
		}
	})
}

// Spread is the stream furthest from the mean, as a share of the mean;
// nothing for one stream.
func TestSpread(t *testing.T) {
	r := Iperf3Result{StreamBytes: []int64{1211236352, 1128782120, 1223950336, 1216006848}}
	mean := float64(1211236352+1128782120+1223950336+1216006848) / 4
	want := (mean - 1128782120) / mean
	if got := r.Spread(); got == nil || math.Abs(*got-want) > 1e-12 {
		t.Errorf("Spread of four streams = %v, want %v", got, want)
	}
	for _, one := range [][]int64{nil, {5}, {0, 0}} {
		if got := (Iperf3Result{StreamBytes: one}).Spread(); got != nil {
			t.Errorf("Spread of %v = %v, want none", one, *got)
		}
	}
}

func TestParseIperf3(t *testing.T) {
	for _, tc := range []struct {
		file string
		want Iperf3Result
	}{
		{"iperf3-tcp.json", Iperf3Result{
			SentBytes: 2621440000, SentSeconds: 4.649625, RecvBytes: 2621177856, RecvSeconds: 4.654544,
			Streams: 1, Retransmits: 1087, BlockSize: 131072, Version: "iperf 3.12", StreamBytes: []int64{2621177856}}},
		{"iperf3-udp.json", Iperf3Result{
			SentBytes: 56224000, SentSeconds: 3.000014, RecvBytes: 55949184, RecvSeconds: 3.000047,
			Streams: 1, UDP: true, Packets: 878499, LostPackets: 4293, BlockSize: 64, Version: "iperf 3.12"}},
		// iperf3 with --gsro (built from git after 3.21, which caps the
		// datagrams per send): packets and losses count datagrams, not
		// sends.
		{"iperf3-gsro-master.json", Iperf3Result{
			SentBytes: 2560081920, SentSeconds: 2.00488, RecvBytes: 2549817344, RecvSeconds: 2.005281,
			Streams: 1, UDP: true, Packets: 40001280, LostPackets: 160384, BlockSize: 64, GSO: true, GRO: true, Version: "iperf 3.21+"}},
		{"blast-client-p4.json", Iperf3Result{
			SentBytes: 4779975656, SentSeconds: 2.000116225, RecvBytes: 4779975656, RecvSeconds: 2.003087682,
			Streams: 4, Retransmits: 4918, BlockSize: 131072, Version: "blast 0.1 (iperf3 3.x protocol)", Backend: "readwrite", RemoteBackend: "readwrite",
			StreamBytes: []int64{1211236352, 1128782120, 1223950336, 1216006848}}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, err := ParseIperf3([]byte(readTestdata(t, tc.file)))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseIperf3 (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("delivered datagrams", func(t *testing.T) {
		r, err := ParseIperf3([]byte(readTestdata(t, "iperf3-udp.json")))
		if err != nil {
			t.Fatal(err)
		}
		// 55949184 bytes received / 64 bytes = 874206 datagrams.
		if got := r.Delivered(); got != 874206 {
			t.Errorf("Delivered() = %d, want 874206", got)
		}
	})
	t.Run("delivered datagrams with --gsro", func(t *testing.T) {
		r, err := ParseIperf3([]byte(readTestdata(t, "iperf3-gsro-master.json")))
		if err != nil {
			t.Fatal(err)
		}
		// Every datagram the receiver counted is 64 bytes: 2549817344 / 64.
		if got, want := r.Delivered(), r.RecvBytes/64; got != want {
			t.Errorf("Delivered() = %d, want %d (received bytes / 64)", got, want)
		}
	})
	t.Run("iperf3 3.21 --gsro -l 64 sends nothing", func(t *testing.T) {
		// 3.21 puts 1023 datagrams of 64 bytes in each GSO send, over
		// the kernel's 128: every send fails, yet it counts packets.
		_, err := ParseIperf3([]byte(readTestdata(t, "iperf3-3.21-gsro-l64.json")))
		if err == nil {
			t.Fatal("ParseIperf3 of a run that moved nothing: no error")
		}
		for _, want := range []string{"no datagrams", "iperf 3.21", "1023 datagrams of 64 bytes", "PR #2033"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
	})
	t.Run("UDP receiver got nothing, no GSO", func(t *testing.T) {
		doc := `{"start":{"version":"iperf 3.12","test_start":{"protocol":"UDP","num_streams":1,"blksize":64}},
			"end":{"sum":{"seconds":1,"bytes":0,"packets":0,"lost_packets":0}}}`
		_, err := ParseIperf3([]byte(doc))
		if err == nil || strings.Contains(err.Error(), "GSO") {
			t.Errorf("ParseIperf3 of an empty UDP run: %v, want an error without the GSO explanation", err)
		}
	})
	t.Run("more lost than sent", func(t *testing.T) {
		doc := `{"start":{"test_start":{"protocol":"UDP"}},"end":{"sum":{"seconds":1,"bytes":64,"packets":1,"lost_packets":2}}}`
		if _, err := ParseIperf3([]byte(doc)); err == nil {
			t.Error("ParseIperf3 took 2 datagrams lost of 1 sent")
		}
	})
	t.Run("iperf3 error document", func(t *testing.T) {
		_, err := ParseIperf3([]byte(`{"start":{},"intervals":[],"end":{},"error":"unable to connect to server: Connection refused"}`))
		if err == nil || !cmp.Equal(err.Error(), "iperf3 reports: unable to connect to server: Connection refused") {
			t.Errorf("ParseIperf3 of an error document: %v", err)
		}
	})
	t.Run("not JSON", func(t *testing.T) {
		if _, err := ParseIperf3([]byte("iperf3: error - unable to connect")); err == nil {
			t.Error("ParseIperf3 of plain text: no error")
		}
	})
}

func TestOptionSyntax(t *testing.T) {
	for _, tc := range []struct {
		name, help string
		want       []string // args for mmsg with gso; nil: no options
	}{
		{"none", "  --backend NAME   data path (see 'blast backends'; default readwrite)\n", nil},
		{"separate flag", "  --backend NAME  --backend-opt OPTS  backend options (batch=N, gso, gro)\n", []string{"--backend", "mmsg", "--backend-opt", "gso"}},
		{"colon", "  --backend NAME[:OPTS]  e.g. --backend mmsg:gso,gro\n", []string{"--backend", "mmsg:gso"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, f := optionSyntax(tc.help)
			var got []string
			if f != nil {
				got = f("mmsg", "gso")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("options for mmsg,gso (-want +got):\n%s", diff)
			}
		})
	}
}
