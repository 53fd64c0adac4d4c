package latency

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/internal/golden"
)

func micro(v float64) time.Duration { return time.Duration(math.Round(v * 1e3)) }

// tcpIntervals is blast lat 198.18.0.2 -t 3 -i 1: a LAN, three intervals.
func tcpIntervals() (Config, *Result) {
	cfg := Defaults()
	cfg.Host, cfg.Duration, cfg.Interval = "198.18.0.2", 3*time.Second, time.Second
	r := &Result{Protocol: "tcp", Remote: "198.18.0.2:5202", Local: "198.18.0.1:41874", Size: 64, Warmup: 10, Timeout: time.Second,
		Requests: 96312, RoundTrips: 96312, Elapsed: 3000021 * time.Microsecond,
		RTT: Stats{Count: 96312, Min: micro(24.512), Mean: micro(30.905), StdDev: micro(6.318), P50: micro(30.271), P90: micro(35.391),
			P99: micro(48.191), P999: micro(95.487), P9999: micro(213.247), Max: micro(1204.113)},
		Buckets: []Bucket{
			{From: 24512, To: 24575, Count: 120},
			{From: 28672, To: 28799, Count: 39897},
			{From: 30208, To: 30335, Count: 35000},
			{From: 35328, To: 35455, Count: 19000},
			{From: 48128, To: 48255, Count: 2000},
			{From: 95232, To: 95743, Count: 250},
			{From: 212992, To: 213503, Count: 40},
			{From: 1203200, To: 1204223, Count: 5},
		},
		Intervals: []Interval{
			{Start: 0, End: 1000008 * time.Microsecond, Requests: 32011, RoundTrips: 32011,
				RTT: Stats{Count: 32011, Min: micro(24.512), Mean: micro(31.014), StdDev: micro(7.102), P50: micro(30.271), P90: micro(35.391),
					P99: micro(48.191), P999: micro(95.487), P9999: micro(213.247), Max: micro(1204.113)}},
			{Start: 1000008 * time.Microsecond, End: 2000013 * time.Microsecond, Requests: 32240, RoundTrips: 32240,
				RTT: Stats{Count: 32240, Min: micro(24.576), Mean: micro(30.789), StdDev: micro(5.011), P50: micro(30.207), P90: micro(35.327),
					P99: micro(47.999), P999: micro(94.975), P9999: micro(201.727), Max: micro(411.903)}},
			{Start: 2000013 * time.Microsecond, End: 3000021 * time.Microsecond, Requests: 32061, RoundTrips: 32061,
				RTT: Stats{Count: 32061, Min: micro(24.544), Mean: micro(30.912), StdDev: micro(5.877), P50: micro(30.271), P90: micro(35.455),
					P99: micro(48.255), P999: micro(95.743), P9999: micro(212.991), Max: micro(513.023)}},
		},
	}
	return cfg, r
}

// udpLoss is blast lat -u --timeout 0.2 -t 2 -i 1: three requests lost,
// one of their replies seen late.
func udpLoss() (Config, *Result) {
	cfg := Defaults()
	cfg.Host, cfg.UDP, cfg.Duration, cfg.Interval, cfg.Timeout = "198.18.0.2", true, 2*time.Second, time.Second, 200*time.Millisecond
	r := &Result{Protocol: "udp", Remote: "198.18.0.2:5202", Local: "198.18.0.1:51020", Size: 64, Warmup: 10, Timeout: 200 * time.Millisecond,
		Requests: 61207, RoundTrips: 61204, Lost: 3, Late: 1, Elapsed: 2000412 * time.Microsecond,
		RTT: Stats{Count: 61204, Min: micro(17.408), Mean: micro(22.761), StdDev: micro(3.903), P50: micro(22.015), P90: micro(25.599),
			P99: micro(36.863), P999: micro(70.143), P9999: micro(151.551), Max: micro(402.431)},
		Buckets: []Bucket{
			{From: 17408, To: 17439, Count: 31},
			{From: 20480, To: 20991, Count: 21002},
			{From: 22016, To: 22527, Count: 27000},
			{From: 25600, To: 26111, Count: 12500},
			{From: 36864, To: 37375, Count: 600},
			{From: 70144, To: 70655, Count: 60},
			{From: 151552, To: 152575, Count: 9},
			{From: 401408, To: 402431, Count: 2},
		},
		Intervals: []Interval{
			{Start: 0, End: 1000011 * time.Microsecond, Requests: 31020, RoundTrips: 31018, Lost: 2,
				RTT: Stats{Count: 31018, Min: micro(17.408), Mean: micro(22.802), StdDev: micro(4.117), P50: micro(22.015), P90: micro(25.599),
					P99: micro(36.863), P999: micro(70.143), P9999: micro(151.551), Max: micro(402.431)}},
			{Start: 1000011 * time.Microsecond, End: 2000412 * time.Microsecond, Requests: 30187, RoundTrips: 30186, Lost: 1,
				RTT: Stats{Count: 30186, Min: micro(17.471), Mean: micro(22.719), StdDev: micro(3.671), P50: micro(21.983), P90: micro(25.535),
					P99: micro(36.607), P999: micro(69.631), P9999: micro(148.479), Max: micro(187.391)}},
		},
	}
	return cfg, r
}

// tcpWAN is blast lat -n 50 -i 5 over a 150 ms path, IPv6: round trips of
// more than 100 ms.
func tcpWAN() (Config, *Result) {
	cfg := Defaults()
	cfg.Host, cfg.Count, cfg.Interval = "2001:2::2", 50, 5*time.Second
	r := &Result{Protocol: "tcp", Remote: "[2001:2::2]:5202", Local: "[2001:2::1]:40122", Size: 64, Warmup: 10, Timeout: time.Second,
		Requests: 50, RoundTrips: 50, Elapsed: 7631442 * time.Microsecond,
		RTT: Stats{Count: 50, Min: micro(150112.003), Mean: micro(152628.840), StdDev: micro(6211.774), P50: micro(151781.375), P90: micro(154533.887),
			P99: micro(187301.887), P999: micro(187903.999), P9999: micro(187903.999), Max: micro(187903.999)},
		Buckets: []Bucket{
			{From: 150011904, To: 150142975, Count: 3},
			{From: 151650304, To: 151781375, Count: 24},
			{From: 152829952, To: 152961023, Count: 14},
			{From: 154402816, To: 154533887, Count: 7},
			{From: 187170816, To: 187301887, Count: 1},
			{From: 187695104, To: 187957247, Count: 1},
		},
		Intervals: []Interval{
			{Start: 0, End: 5036671 * time.Microsecond, Requests: 33, RoundTrips: 33,
				RTT: Stats{Count: 33, Min: micro(150112.003), Mean: micro(153520.117), StdDev: micro(7468.201), P50: micro(151781.375), P90: micro(154533.887),
					P99: micro(187903.999), P999: micro(187903.999), P9999: micro(187903.999), Max: micro(187903.999)}},
			{Start: 5036671 * time.Microsecond, End: 7631442 * time.Microsecond, Requests: 17, RoundTrips: 17,
				RTT: Stats{Count: 17, Min: micro(150142.975), Mean: micro(150898.532), StdDev: micro(701.419), P50: micro(150994.943), P90: micro(151781.375),
					P99: micro(151781.375), P999: micro(151781.375), P9999: micro(151781.375), Max: micro(151781.375)}},
		},
	}
	return cfg, r
}

// udpNone is blast lat -u to a server that never answers, interrupted
// with Ctrl-C: requests, all lost, no round trip.
func udpNone() (Config, *Result) {
	cfg := Defaults()
	cfg.Host, cfg.UDP, cfg.Timeout, cfg.Warmup = "198.18.0.2", true, 200*time.Millisecond, 0
	r := &Result{Protocol: "udp", Remote: "198.18.0.2:5202", Local: "198.18.0.1:51022", Size: 64, Warmup: 0, Timeout: 200 * time.Millisecond,
		Requests: 4, Lost: 4, Elapsed: 812 * time.Millisecond, Interrupted: true}
	return cfg, r
}

// tcpLoad is blast lat --load -n 3: three round trips idle, then three
// beside a bulk stream of 4.8 Gbit/s.
func tcpLoad() (Config, *Result) {
	cfg := Defaults()
	cfg.Host, cfg.Count, cfg.Load = "198.18.0.2", 3, true
	base := Result{Protocol: "tcp", Remote: "198.18.0.2:5202", Local: "198.18.0.1:40124", Size: 64, Warmup: 10, Timeout: time.Second,
		Requests: 3, RoundTrips: 3}
	idle := base
	idle.Elapsed = 51 * time.Microsecond
	idle.RTT = Stats{Count: 3, Min: micro(16.127), Mean: micro(16.703), StdDev: micro(0.58), P50: micro(16.703), P90: micro(17.279),
		P99: micro(17.279), P999: micro(17.279), P9999: micro(17.279), Max: micro(17.279)}
	idle.Buckets = []Bucket{{From: 16120, To: 16127, Count: 1}, {From: 16696, To: 16703, Count: 1}, {From: 17272, To: 17279, Count: 1}}
	loaded := base
	loaded.Elapsed = 2547 * time.Microsecond
	loaded.LoadBps = 4.83e9
	loaded.RTT = Stats{Count: 3, Min: micro(801.279), Mean: micro(846.165), StdDev: micro(45.2), P50: micro(845.823), P90: micro(891.391),
		P99: micro(891.391), P999: micro(891.391), P9999: micro(891.391), Max: micro(891.391)}
	loaded.Buckets = []Bucket{{From: 800768, To: 801279, Count: 1}, {From: 845312, To: 845823, Count: 1}, {From: 890880, To: 891391, Count: 1}}
	loaded.Idle = &idle
	return cfg, &loaded
}

var goldenRuns = []struct {
	name string
	run  func() (Config, *Result)
}{
	{"tcp-intervals", tcpIntervals},
	{"udp-loss", udpLoss},
	{"tcp-wan-count", tcpWAN},
	{"udp-interrupted-none", udpNone},
	{"tcp-load", tcpLoad},
}

// TestTextGolden renders a run as blast lat prints it: the header, the
// interval lines when there are intervals, the summary.
func TestTextGolden(t *testing.T) {
	for _, tc := range goldenRuns {
		t.Run(tc.name, func(t *testing.T) {
			cfg, r := tc.run()
			var b strings.Builder
			WriteHeader(&b, cfg)
			if cfg.Interval > 0 {
				WriteIntervalHeader(&b, cfg.UDP)
				for _, iv := range r.Intervals {
					WriteInterval(&b, iv, cfg.UDP)
				}
			}
			WriteText(&b, r)
			golden.Check(t, "testdata/golden/"+tc.name+".txt", b.String())
		})
	}
}

func TestJSONGolden(t *testing.T) {
	for _, tc := range goldenRuns {
		t.Run(tc.name, func(t *testing.T) {
			_, r := tc.run()
			var b strings.Builder
			if err := WriteJSON(&b, r); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "testdata/golden/"+tc.name+".json", b.String())
		})
	}
}
