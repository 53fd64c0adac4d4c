package bench

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseSockperf(t *testing.T) {
	// Without --full-rtt sockperf prints RTT/2 (avg-latency): doubled.
	data, err := os.ReadFile("testdata/sockperf-udp-rtt-half.txt")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSockperf(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.Source, "doubled") || !(s.Min > 0 && s.Min <= s.P50 && s.P50 <= s.P90 && s.P90 <= s.P99 && s.P99 <= s.P999 && s.P999 <= s.Max) || !(s.PerSec > 0) {
		t.Errorf("%+v", s)
	}
	// With --full-rtt (avg-rtt) the figures are kept as they are.
	full := strings.ReplaceAll(string(data), "avg-latency=", "avg-rtt=")
	f, err := ParseSockperf(full)
	if err != nil {
		t.Fatal(err)
	}
	if f.P50*2 != s.P50 || f.Mean*2 != s.Mean {
		t.Errorf("full-rtt p50 %v mean %v, half-rtt doubled p50 %v mean %v", f.P50, f.Mean, s.P50, s.Mean)
	}
}

func TestParseQperf(t *testing.T) {
	data, err := os.ReadFile("testdata/qperf-lat.txt") // tcp_lat 8.65 us, udp_lat 10.5 us
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseQperf(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if float64(s.Mean) != 17.3 { // 2 x 8.65 us: a round trip
		t.Errorf("mean round trip %v us, want 17.3", s.Mean)
	}
	ms, err := ParseQperf("tcp_lat:\n    latency  =  1.5 ms\n")
	if err != nil || float64(ms.Mean) != 3000 {
		t.Errorf("1.5 ms one way: %v us, %v; want 3000 us", ms.Mean, err)
	}
}

func TestParseBlastLat(t *testing.T) {
	doc := `{"round_trips": 10, "round_trips_per_sec": 50000, "rtt_ns": {"min": 10000, "mean": 20000, "p50": 19000, "p90": 25000, "p99": 30000, "p99.9": 40000, "max": 50000}}`
	s, err := ParseBlastLat([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := LatencyStats{Min: 10, Mean: 20, P50: 19, P90: 25, P99: 30, P999: 40, Max: 50, PerSec: 50000, Source: "blast lat -J rtt_ns (round trip)"}
	if diff := cmp.Diff(want, *s); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := ParseBlastLat([]byte(`{"round_trips": 0}`)); err == nil {
		t.Error("a run without round trips parsed")
	}
}
