package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Ports of the latency servers.
const (
	latPort      = 5202  // blast lat -s
	sockperfPort = 11111 // sockperf server
	qperfPort    = 19765 // qperf's listen port (its default)
	latSize      = 64    // request and reply payload, bytes, for every tool
)

// LatencyStats are one run's round-trip figures in microseconds: full
// round trips for every tool (qperf's RTT/2 doubled).
type LatencyStats struct {
	Min  Num `json:"min"`
	Mean Num `json:"mean"`
	P50  Num `json:"p50"`
	P90  Num `json:"p90"`
	P99  Num `json:"p99"`
	P999 Num `json:"p99.9"`
	Max  Num `json:"max"`
	// PerSec is round trips (transactions) per second.
	PerSec Num `json:"round_trips_per_sec"`
	// Source says where the figures come from and how they were converted.
	Source string `json:"source"`
}

func unknownLatency(source string) *LatencyStats {
	return &LatencyStats{Min: nan(), Mean: nan(), P50: nan(), P90: nan(), P99: nan(), P999: nan(), Max: nan(), PerSec: nan(), Source: source}
}

// ParseBlastLat reads a `blast lat -J` document.
func ParseBlastLat(data []byte) (*LatencyStats, error) {
	var d struct {
		RoundTrips int64   `json:"round_trips"`
		PerSec     float64 `json:"round_trips_per_sec"`
		RTT        struct {
			Min, Mean, P50, P90, P99, Max int64
			P999                          int64 `json:"p99.9"`
		} `json:"rtt_ns"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("blast lat JSON: %w (output begins: %s)", err, firstLines(string(data), 2))
	}
	if d.RoundTrips == 0 {
		return nil, errors.New("blast lat JSON: no round trip completed")
	}
	us := func(ns int64) Num { return Num(float64(ns) / 1e3) }
	r := d.RTT
	return &LatencyStats{Min: us(r.Min), Mean: us(r.Mean), P50: us(r.P50), P90: us(r.P90), P99: us(r.P99), P999: us(r.P999),
		Max: us(r.Max), PerSec: Num(d.PerSec), Source: "blast lat -J rtt_ns (round trip)"}, nil
}

var (
	sockperfPct = regexp.MustCompile(`percentile\s+([0-9.]+)\s*=\s*([0-9.]+)`)
	sockperfMax = regexp.MustCompile(`<MAX> observation\s*=\s*([0-9.]+)`)
	sockperfMin = regexp.MustCompile(`<MIN> observation\s*=\s*([0-9.]+)`)
	sockperfAvg = regexp.MustCompile(`avg-(rtt|latency)=([0-9.]+)`)
	sockperfRun = regexp.MustCompile(`\[Valid Duration\] RunTime=([0-9.]+) sec; SentMessages=(\d+); ReceivedMessages=(\d+)`)
)

// ParseSockperf reads `sockperf ping-pong` output. With --full-rtt
// (avg-rtt) the figures are round trips; without it (avg-latency) they are
// RTT/2 and are doubled here.
func ParseSockperf(out string) (*LatencyStats, error) {
	avg := sockperfAvg.FindStringSubmatch(out)
	if avg == nil {
		return nil, fmt.Errorf("sockperf: no avg-rtt or avg-latency in its output: %s", firstLines(out, 3))
	}
	mult, src := 1.0, "sockperf ping-pong --full-rtt (round trip)"
	if avg[1] == "latency" {
		mult, src = 2, "sockperf ping-pong, RTT/2 doubled to a round trip"
	}
	s := unknownLatency(src)
	f := func(v string) Num { x, _ := strconv.ParseFloat(v, 64); return Num(x * mult) }
	s.Mean = f(avg[2])
	for _, m := range sockperfPct.FindAllStringSubmatch(out, -1) {
		switch m[1] {
		case "50.000":
			s.P50 = f(m[2])
		case "90.000":
			s.P90 = f(m[2])
		case "99.000":
			s.P99 = f(m[2])
		case "99.900":
			s.P999 = f(m[2])
		}
	}
	if m := sockperfMax.FindStringSubmatch(out); m != nil {
		s.Max = f(m[1])
	}
	if m := sockperfMin.FindStringSubmatch(out); m != nil {
		s.Min = f(m[1])
	}
	if m := sockperfRun.FindStringSubmatch(out); m != nil {
		secs, _ := strconv.ParseFloat(m[1], 64)
		recv, _ := strconv.ParseFloat(m[3], 64)
		s.PerSec = Num(Ratio(recv, secs))
	}
	return s, nil
}

var qperfLat = regexp.MustCompile(`latency\s*=\s*([0-9.]+)\s*(ns|us|ms|sec|s)\b`)

// ParseQperf reads `qperf HOST tcp_lat` or `udp_lat` output. qperf's
// latency is the mean time per message one way, RTT/2: it is doubled
// here into a mean round trip. qperf has no percentiles.
func ParseQperf(out string) (*LatencyStats, error) {
	m := qperfLat.FindStringSubmatch(out)
	if m == nil {
		return nil, fmt.Errorf("qperf: no latency in its output: %s", firstLines(out, 3))
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return nil, fmt.Errorf("qperf: latency %q: %w", m[1], err)
	}
	scale := map[string]float64{"ns": 1e-3, "us": 1, "ms": 1e3, "sec": 1e6, "s": 1e6}[m[2]]
	s := unknownLatency("qperf latency (RTT/2, mean) doubled to a mean round trip")
	s.Mean = Num(2 * v * scale)
	s.PerSec = Num(Ratio(1e6, float64(s.Mean)))
	return s, nil
}

// latSample makes a sample whose value is the workload's metric.
func latSample(ls *LatencyStats, metric string, srv, cli *proc) Sample {
	v := ls.P50
	if metric == "mean" {
		v = ls.Mean
	}
	// The client sends the requests: it is the sender; the server the
	// receiver. Nothing is counted per GB here.
	ss, cs := srv.stats(), cli.stats()
	ss.Role, cs.Role = "receiver", "sender"
	ss.setBytes(0)
	cs.setBytes(0)
	return Sample{Value: v, Loss: nan(), Latency: ls, Procs: []ProcStats{cs, ss}}
}

// Placement pins both ends of a latency run to CPUs with taskset, blast
// and sockperf alike: both on one CPU, or the client on one and the
// server on another. A negative CPU leaves that end unpinned.
type Placement struct {
	ID             string // suffix of the workload ID: "1cpu", "2cpu"
	Text           string // in words, for titles
	Client, Server int
}

var (
	unpinned   = Placement{Client: -1, Server: -1}
	oneCPU     = Placement{ID: "1cpu", Text: "both ends on cpu0", Client: 0, Server: 0}
	twoCPUs    = Placement{ID: "2cpu", Text: "client on cpu0, server on cpu1", Client: 0, Server: 1}
	placements = []Placement{oneCPU, twoCPUs}
)

// pin prefixes argv with `taskset -c CPU` (nothing for a negative CPU).
// taskset execs the command in place: its pid and rusage are the
// command's own.
func pin(cpu int, argv []string) []string {
	if cpu < 0 {
		return argv
	}
	return append([]string{"taskset", "-c", strconv.Itoa(cpu)}, argv...)
}

// needCPUs says why the placement cannot be had here: a CPU it names is
// not one bench may run on.
func needCPUs(pl Placement) func(e *Env) string {
	return func(e *Env) string {
		for _, c := range []int{pl.Client, pl.Server} {
			if c >= 0 && !slices.Contains(e.CPUs, c) {
				return fmt.Sprintf("needs cpu%d, and bench may run on CPUs %v only", c, e.CPUs)
			}
		}
		return ""
	}
}

// blastLatSide runs `blast lat -s -1` in B and `blast lat -J` in A.
func blastLatSide(udp bool, metric string, pl Placement) Side {
	label := "blast lat"
	if udp {
		label += " -u"
	}
	return Side{Label: label + " -l 64", Run: func(ctx context.Context, e *Env) Sample {
		srvArgv := pin(pl.Server, []string{e.Blast, "lat", "-s", "-1", "-p", strconv.Itoa(latPort)})
		cliArgv := []string{e.Blast, "lat", e.target(), "-p", strconv.Itoa(latPort), "-l", strconv.Itoa(latSize),
			"-t", strconv.Itoa(e.Secs), "--warmup", "1000", "-J"}
		network := "tcp"
		if udp {
			cliArgv = append(cliArgv, "-u")
			network = "udp"
		}
		cliArgv = pin(pl.Client, cliArgv)
		srv, cli, err := clientServer(ctx, e.Lab.B, srvArgv, network, latPort, e.Lab.A, cliArgv, e.timeout(), false)
		if err != nil {
			return failed(err, srv, cli)
		}
		ls, err := ParseBlastLat([]byte(cli.stdout.String()))
		if err != nil {
			return failed(err, srv, cli)
		}
		return latSample(ls, metric, srv, cli)
	}}
}

// sockperfSide runs `sockperf server` in B and `sockperf ping-pong
// --full-rtt` in A.
func sockperfSide(udp bool, pl Placement) Side {
	label := "sockperf ping-pong --full-rtt -m 64"
	if !udp {
		label += " --tcp"
	}
	return Side{Key: "sockperf", Label: label, Tool: "sockperf", Run: func(ctx context.Context, e *Env) Sample {
		common := []string{"-i", e.target(), "-p", strconv.Itoa(sockperfPort)}
		network := "udp"
		if !udp {
			common = append(common, "--tcp")
			network = "tcp"
		}
		srvArgv := pin(pl.Server, append([]string{"sockperf", "server"}, common...))
		cliArgv := pin(pl.Client, append([]string{"sockperf", "ping-pong", "-m", strconv.Itoa(latSize), "-t", strconv.Itoa(e.Secs), "--full-rtt"}, common...))
		srv, cli, err := clientServer(ctx, e.Lab.B, srvArgv, network, sockperfPort, e.Lab.A, cliArgv, e.timeout(), true)
		if err != nil {
			return failed(err, srv, cli)
		}
		ls, err := ParseSockperf(cli.stdout.String() + cli.stderr.String())
		if err != nil {
			return failed(err, srv, cli)
		}
		return latSample(ls, "p50", srv, cli)
	}}
}

// qperfSide runs the qperf server in B and `qperf HOST tcp_lat` (or
// udp_lat) in A; its RTT/2 is doubled.
func qperfSide(udp bool) Side {
	test := "tcp_lat"
	if udp {
		test = "udp_lat"
	}
	return Side{Key: "qperf", Label: "qperf -m 64 " + test + " (RTT/2 x 2)", Tool: "qperf", Run: func(ctx context.Context, e *Env) Sample {
		srvArgv := []string{"qperf", "-lp", strconv.Itoa(qperfPort)}
		cliArgv := []string{"qperf", e.target(), "-lp", strconv.Itoa(qperfPort), "-m", strconv.Itoa(latSize), "-t", strconv.Itoa(e.Secs), test}
		srv, cli, err := clientServer(ctx, e.Lab.B, srvArgv, "tcp", qperfPort, e.Lab.A, cliArgv, e.timeout(), true)
		if err != nil {
			return failed(err, srv, cli)
		}
		ls, err := ParseQperf(cli.stdout.String())
		if err != nil {
			return failed(err, srv, cli)
		}
		return latSample(ls, "mean", srv, cli)
	}}
}

// latencyWorkloads compares round trips: p50 (and p99) against sockperf
// with both tools pinned alike, in each placement; the mean against
// qperf (which reports only a mean), unpinned. Lower is better: a ratio
// above 1 means blast measured longer round trips than the peer.
func latencyWorkloads() []Workload {
	var ws []Workload
	for _, udp := range []bool{false, true} {
		proto, id := "TCP", "lat-tcp"
		if udp {
			proto, id = "UDP", "lat-udp"
		}
		for _, pl := range placements {
			ws = append(ws, Workload{ID: id + "-" + pl.ID,
				Title:  proto + " round-trip latency, 64 B, " + pl.Text + ", vs sockperf ping-pong --full-rtt",
				Metric: "p50 round trip", Unit: "us", UDP: udp, Quick: true,
				Unavailable: func(e *Env) string { return firstReason(e, needLatency, needCPUs(pl)) },
				Blast:       blastLatSide(udp, "p50", pl), Peers: []Side{sockperfSide(udp, pl)}})
		}
	}
	for _, udp := range []bool{false, true} {
		proto, id := "TCP", "lat-tcp"
		if udp {
			proto, id = "UDP", "lat-udp"
		}
		ws = append(ws, Workload{ID: id + "-qperf", Title: proto + " round-trip latency, 64 B, unpinned, vs qperf " + strings.ToLower(proto) + "_lat (RTT/2 doubled)",
			Metric: "mean round trip", Unit: "us", UDP: udp, Extra: true, Unavailable: needLatency, Blast: blastLatSide(udp, "mean", unpinned), Peers: []Side{qperfSide(udp)}})
	}
	return ws
}

// firstReason is the first reason of checks that a workload cannot run.
func firstReason(e *Env, checks ...func(*Env) string) string {
	for _, c := range checks {
		if why := c(e); why != "" {
			return why
		}
	}
	return ""
}

// writeLatencyTable writes the round-trip figures of the latency
// workloads that ran: per side, the median over the rounds of each
// figure, and for each peer the blast/peer ratios of p50 and p99.
func writeLatencyTable(w io.Writer, r *Results) {
	header := false
	for _, wr := range r.Workloads {
		type side struct {
			label string
			stats []*LatencyStats
			ratio map[string]Summary
		}
		sides := []side{{label: wr.Blast}}
		for _, rd := range wr.Rounds {
			if rd.Blast.Latency != nil {
				sides[0].stats = append(sides[0].stats, rd.Blast.Latency)
			}
		}
		for _, p := range wr.Peers {
			sd := side{label: p.Label, ratio: p.LatencyRatio}
			for _, rd := range wr.Rounds {
				for _, run := range rd.Peers {
					if run.Key == p.Key && run.Sample.Latency != nil {
						sd.stats = append(sd.stats, run.Sample.Latency)
					}
				}
			}
			sides = append(sides, sd)
		}
		for _, sd := range sides {
			if len(sd.stats) == 0 {
				continue
			}
			if !header {
				fmt.Fprintf(w, "\n### Round-trip latency\n\nEvery figure is a full round trip in microseconds (sockperf with --full-rtt; qperf's RTT/2 doubled; qperf gives only a mean), the median over the rounds of each run's figure; lower is better, so a latency ratio above 1x means blast measured longer round trips. The sockperf workloads pin both tools alike with taskset: 1cpu puts client and server on cpu0, 2cpu the client on cpu0 and the server on cpu1. The ratios are blast/peer per round, median [min-max].\n\n")
				fmt.Fprintf(w, "| workload | tool | min | p50 | p90 | p99 | p99.9 | max | mean | round trips/s | p50 ratio | p99 ratio | source |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
				header = true
			}
			med := func(f func(*LatencyStats) Num) string {
				var xs []float64
				for _, ls := range sd.stats {
					xs = append(xs, float64(f(ls)))
				}
				s := Summarize(xs)
				if s.N == 0 || math.IsNaN(s.Median) {
					return "-"
				}
				return fmt.Sprintf("%.1f", s.Median)
			}
			rc := func(k string) string {
				if sd.ratio == nil {
					return ""
				}
				if s, ok := sd.ratio[k]; ok {
					return ratioCell(s)
				}
				return "-"
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", wr.ID, sd.label,
				med(func(l *LatencyStats) Num { return l.Min }), med(func(l *LatencyStats) Num { return l.P50 }),
				med(func(l *LatencyStats) Num { return l.P90 }), med(func(l *LatencyStats) Num { return l.P99 }),
				med(func(l *LatencyStats) Num { return l.P999 }), med(func(l *LatencyStats) Num { return l.Max }),
				med(func(l *LatencyStats) Num { return l.Mean }), med(func(l *LatencyStats) Num { return l.PerSec }),
				rc("p50"), rc("p99"), esc(sd.stats[0].Source))
		}
	}
}
