package latency_test

import (
	"encoding/json"
	"regexp"
	"strconv"
	"testing"

	"github.com/blastnet/blast/internal/blasttest"
	"github.com/blastnet/blast/latency"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

func TestMain(m *testing.M) { blasttest.Main(m, true) }

// TestLabBlast runs blast lat against blast lat -s -1 across the lab's
// veth pair, TCP and UDP, v4 and v6, and checks the JSON document.
func TestLabBlast(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	for _, tc := range []struct {
		addr string
		udp  bool
	}{
		{lab.B.Addr4.String(), false}, {lab.B.Addr4.String(), true}, {lab.B.Addr6.String(), false}, {lab.B.Addr6.String(), true},
	} {
		proto := "tcp"
		if tc.udp {
			proto = "udp"
		}
		t.Run(proto+" "+tc.addr, func(t *testing.T) {
			srv := blasttest.Listening(t, lab.B, proto, latency.DefaultPort, blasttest.Bin, "lat", "-s", "-1")
			args := []string{"lat", tc.addr, "-n", "1000", "-l", "100", "-J"}
			if tc.udp {
				args = append(args, "-u")
			}
			cli := blasttest.Start(t, lab.A, nil, blasttest.Bin, args...)
			cli.Wait(t)
			srv.Wait(t) // -1: the server exits once its client is done
			var doc latency.JSON
			if err := json.Unmarshal(cli.Stdout.Bytes(), &doc); err != nil {
				t.Fatalf("%v:\n%s", err, cli.Stdout.String())
			}
			r := doc.RTT
			if doc.Mode != "latency" || doc.Protocol != proto || doc.RoundTrips != 1000 || doc.Requests != 1000 || doc.Lost != 0 || r.Count != 1000 || doc.SizeBytes != 100 {
				t.Errorf("mode %q, protocol %s, round trips %d of %d requests, lost %d, rtt count %d, size %d; want latency, %s, 1000 of 1000, 0, 1000, 100",
					doc.Mode, doc.Protocol, doc.RoundTrips, doc.Requests, doc.Lost, r.Count, doc.SizeBytes, proto)
			}
			if !(0 < r.Min && r.Min <= r.P50 && r.P50 <= r.P90 && r.P90 <= r.P99 && r.P99 <= r.P999 && r.P999 <= r.P9999 && r.P9999 <= r.Max) {
				t.Errorf("round-trip figures out of order: %+v", r)
			}
			var n int64
			for _, b := range doc.Histogram.Buckets {
				n += b.Count
			}
			if n != 1000 || doc.Histogram.Unit != "ns" {
				t.Errorf("histogram holds %d values in %q, want 1000 in ns", n, doc.Histogram.Unit)
			}
			checkKeys(t, cli.Stdout.Bytes())
			t.Logf("%s p50 %.1f us, p99 %.1f us, %.0f round trips/s", proto, float64(r.P50)/1e3, float64(r.P99)/1e3, doc.RoundTripsPerS)
		})
	}
}

// checkKeys checks the -J document's keys by name, as a script reads
// them.
func checkKeys(t *testing.T, doc []byte) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"mode", "metric", "protocol", "local", "remote", "size_bytes", "warmup_round_trips", "timeout_ns",
		"requests", "round_trips", "lost", "late", "elapsed_ns", "round_trips_per_sec", "rtt_ns", "histogram"} {
		if _, ok := m[k]; !ok {
			t.Errorf("the JSON document lacks %q", k)
		}
	}
	rtt, _ := m["rtt_ns"].(map[string]any)
	for _, k := range []string{"count", "min", "mean", "stddev", "p50", "p90", "p99", "p99.9", "p99.99", "max"} {
		if _, ok := rtt[k]; !ok {
			t.Errorf("rtt_ns lacks %q", k)
		}
	}
	h, _ := m["histogram"].(map[string]any)
	for _, k := range []string{"unit", "significant_digits", "buckets"} {
		if _, ok := h[k]; !ok {
			t.Errorf("histogram lacks %q", k)
		}
	}
}

// TestLabText checks the text report over the lab: interval lines, every
// figure labelled a round trip.
func TestLabText(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	srv := blasttest.Listening(t, lab.B, "tcp", latency.DefaultPort, blasttest.Bin, "lat", "-s", "-1")
	cli := blasttest.Start(t, lab.A, nil, blasttest.Bin, "lat", lab.B.Addr4.String(), "-t", "1", "-i", "0.25")
	cli.Wait(t)
	srv.Wait(t)
	out := cli.Stdout.String()
	t.Logf("blast lat %s -t 1 -i 0.25:\n%s", lab.B.Addr4, out)
	// An interval ends with the first reply after its tick (where that
	// falls is the host's: TestIntervals has them exactly), and the run
	// with the first reply after its second.
	for _, re := range []string{
		`(?m)^blast lat: TCP ping-pong with 198\.18\.\S+ port 5202, 64-byte request and reply, TCP_NODELAY`,
		`(?m)^0\.00-[0-9.]+ s +\d+ +[0-9.]+ us`,
		`(?m)^round-trip time \(request sent to whole reply received; not RTT/2\)`,
		`(?m)^  p99\.99 +[0-9.]+ us$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("output lacks %s", re)
		}
	}
	m := regexp.MustCompile(`(?m)^  \d+ round trips in ([0-9.]+) s: [0-9.]+ round trips/s \(transactions/s\)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatal("no summary line")
	}
	if secs, _ := strconv.ParseFloat(m[1], 64); secs < 1 {
		t.Errorf("the run took %s s, less than its -t 1", m[1])
	}
}
