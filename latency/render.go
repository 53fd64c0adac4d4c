package latency

import (
	"encoding/json"
	"fmt"
	"github.com/blastnet/blast/units"
	"io"
	"strings"
	"time"
)

// WriteHeader writes the line that opens a text report.
func WriteHeader(w io.Writer, cfg Config) {
	proto, extra := "TCP", ", TCP_NODELAY"
	if cfg.UDP {
		proto, extra = "UDP", fmt.Sprintf(", reply timeout %s", cfg.Timeout)
	}
	until := fmt.Sprintf("for %s", cfg.Duration)
	if cfg.Count > 0 {
		until = fmt.Sprintf("%d round trips", cfg.Count)
	}
	if cfg.Rate > 0 {
		until += fmt.Sprintf(", %g requests/s on a fixed schedule (each time from its slot)", cfg.Rate)
	}
	if cfg.Load {
		until += "; idle first, then the same again beside a bulk TCP stream (--load)"
	}
	fmt.Fprintf(w, "blast lat: %s ping-pong with %s port %d, %d-byte request and reply%s; %d warm-up round trips, then %s\n",
		proto, cfg.Host, cfg.Port, cfg.Size, extra, cfg.Warmup, until)
}

// rttWidth is the width of a round-trip time column: "9999999.999 us",
// so times up to 10 s stay aligned (the default reply timeout is 1 s).
const rttWidth = 14

// WriteIntervalHeader writes the column titles of the interval lines.
func WriteIntervalHeader(w io.Writer, udp bool) {
	fmt.Fprintf(w, "%-15s %12s %*s %*s %*s %*s", "[ interval ]", "round trips", rttWidth, "rtt p50", rttWidth, "rtt p99", rttWidth, "rtt max", rttWidth, "rtt mean")
	if udp {
		fmt.Fprintf(w, " %8s", "lost")
	}
	fmt.Fprintln(w)
}

// WriteInterval writes one interval line.
func WriteInterval(w io.Writer, iv Interval, udp bool) {
	span := fmt.Sprintf("%.2f-%.2f s", iv.Start.Seconds(), iv.End.Seconds())
	fmt.Fprintf(w, "%-15s %12d %*s %*s %*s %*s", span, iv.RoundTrips, rttWidth, us(iv.RTT.P50), rttWidth, us(iv.RTT.P99), rttWidth, us(iv.RTT.Max), rttWidth, us(iv.RTT.Mean))
	if udp {
		fmt.Fprintf(w, " %8d", iv.Lost)
	}
	fmt.Fprintln(w)
}

// WriteText writes the summary of r: every figure a full round trip.
// A --load run writes its idle phase first, then the loaded one, and a
// line that sets their percentiles side by side.
func WriteText(w io.Writer, r *Result) {
	if r.Idle == nil {
		writeText(w, r, "")
		return
	}
	writeText(w, r.Idle, "idle, before the bulk stream started: ")
	writeText(w, r, "under load, beside the bulk stream: ")
	i, l := r.Idle.RTT, r.RTT
	if r.Idle.RoundTrips > 0 && r.RoundTrips > 0 {
		fmt.Fprintf(w, "idle -> under load: p50 %s -> %s, p99 %s -> %s, p99.9 %s -> %s, max %s -> %s\n",
			us(i.P50), us(l.P50), us(i.P99), us(l.P99), us(i.P999), us(l.P999), us(i.Max), us(l.Max))
	}
}

// writeText writes one phase's summary, its first line after lead.
func writeText(w io.Writer, r *Result, lead string) {
	state := ""
	if r.Interrupted {
		state = " (interrupted)"
	}
	fmt.Fprintf(w, "%sround-trip time (request sent to whole reply received; not RTT/2), %s %s <-> %s, %d bytes each way%s:\n",
		lead, strings.ToUpper(r.Protocol), r.Local, r.Remote, r.Size, state)
	if r.RoundTrips == 0 {
		fmt.Fprintf(w, "  no round trip completed\n")
	} else {
		s := r.RTT
		rows := []struct {
			name string
			v    time.Duration
		}{{"min", s.Min}, {"mean", s.Mean}, {"p50", s.P50}, {"p90", s.P90}, {"p99", s.P99},
			{"p99.9", s.P999}, {"p99.99", s.P9999}, {"max", s.Max}, {"stddev", s.StdDev}}
		for _, row := range rows {
			fmt.Fprintf(w, "  %-8s %*s\n", row.name, rttWidth, us(row.v))
		}
	}
	fmt.Fprintf(w, "  %d round trips in %.3f s: %.1f round trips/s (transactions/s)\n", r.RoundTrips, r.Elapsed.Seconds(), r.PerSecond())
	if r.Protocol == "udp" {
		fmt.Fprintf(w, "  %d requests, %d replies in time, %d lost (no reply within %s), %d late replies seen afterwards\n",
			r.Requests, r.RoundTrips, r.Lost, r.Timeout, r.Late)
	}
	if r.LoadBps > 0 {
		fmt.Fprintf(w, "  under load: a bulk TCP stream moved %s beside it (both directions)\n", units.SIRate(r.LoadBps))
	}
}

// us formats a duration in microseconds.
func us(d time.Duration) string {
	return fmt.Sprintf("%.3f us", float64(d)/1e3)
}

// JSON is the -J document. Every time is in nanoseconds and is a full
// round trip.
type JSON struct {
	Mode           string  `json:"mode"` // "latency"
	Metric         string  `json:"metric"`
	Protocol       string  `json:"protocol"`
	Local          string  `json:"local"`
	Remote         string  `json:"remote"`
	SizeBytes      int     `json:"size_bytes"`
	Warmup         int     `json:"warmup_round_trips"`
	TimeoutNS      int64   `json:"timeout_ns"`
	Requests       int64   `json:"requests"`
	RoundTrips     int64   `json:"round_trips"`
	Lost           int64   `json:"lost"`
	Late           int64   `json:"late"`
	ElapsedNS      int64   `json:"elapsed_ns"`
	RoundTripsPerS float64 `json:"round_trips_per_sec"`
	Interrupted    bool    `json:"interrupted,omitempty"`
	// Rate is --rate (requests a second on a fixed schedule; times count
	// from each request's slot); LoadBps the --load stream's bit/s.
	Rate      float64   `json:"rate_per_sec,omitempty"`
	LoadBps   float64   `json:"load_bits_per_second,omitempty"`
	RTT       StatsJSON `json:"rtt_ns"`
	Histogram HistJSON  `json:"histogram"`
	Intervals []IvJSON  `json:"intervals,omitempty"`
	// Idle is a --load run's idle phase, measured before the bulk
	// stream started, in the same form; the figures above are the
	// loaded phase's.
	Idle *JSON `json:"idle,omitempty"`
}

// StatsJSON are round-trip figures in nanoseconds.
type StatsJSON struct {
	Count  int64 `json:"count"`
	Min    int64 `json:"min"`
	Mean   int64 `json:"mean"`
	StdDev int64 `json:"stddev"`
	P50    int64 `json:"p50"`
	P90    int64 `json:"p90"`
	P99    int64 `json:"p99"`
	P999   int64 `json:"p99.9"`
	P9999  int64 `json:"p99.99"`
	Max    int64 `json:"max"`
}

// HistJSON is the histogram: its non-empty buckets, bounds included.
type HistJSON struct {
	Unit              string       `json:"unit"`
	SignificantDigits int          `json:"significant_digits"`
	Buckets           []BucketJSON `json:"buckets"`
}

// BucketJSON is one bucket: Count round trips took FromNS to ToNS.
type BucketJSON struct {
	FromNS int64 `json:"from_ns"`
	ToNS   int64 `json:"to_ns"`
	Count  int64 `json:"count"`
}

// IvJSON is one interval report.
type IvJSON struct {
	StartNS    int64     `json:"start_ns"`
	EndNS      int64     `json:"end_ns"`
	Requests   int64     `json:"requests"`
	RoundTrips int64     `json:"round_trips"`
	Lost       int64     `json:"lost"`
	RTT        StatsJSON `json:"rtt_ns"`
}

func statsJSON(s Stats) StatsJSON {
	return StatsJSON{Count: s.Count, Min: int64(s.Min), Mean: int64(s.Mean), StdDev: int64(s.StdDev), P50: int64(s.P50),
		P90: int64(s.P90), P99: int64(s.P99), P999: int64(s.P999), P9999: int64(s.P9999), Max: int64(s.Max)}
}

// ToJSON converts r to the -J document.
func ToJSON(r *Result) JSON {
	j := JSON{Mode: "latency", Metric: "round-trip time (not RTT/2)", Protocol: r.Protocol, Local: r.Local, Remote: r.Remote,
		SizeBytes: r.Size, Warmup: r.Warmup, TimeoutNS: int64(r.Timeout), Requests: r.Requests, RoundTrips: r.RoundTrips,
		Lost: r.Lost, Late: r.Late, ElapsedNS: int64(r.Elapsed), RoundTripsPerS: r.PerSecond(), Interrupted: r.Interrupted,
		Rate: r.Rate, LoadBps: r.LoadBps,
		RTT: statsJSON(r.RTT), Histogram: HistJSON{Unit: "ns", SignificantDigits: histSigFigs, Buckets: []BucketJSON{}}}
	for _, b := range r.Buckets {
		j.Histogram.Buckets = append(j.Histogram.Buckets, BucketJSON{FromNS: int64(b.From), ToNS: int64(b.To), Count: b.Count})
	}
	for _, iv := range r.Intervals {
		j.Intervals = append(j.Intervals, IvJSON{StartNS: int64(iv.Start), EndNS: int64(iv.End), Requests: iv.Requests,
			RoundTrips: iv.RoundTrips, Lost: iv.Lost, RTT: statsJSON(iv.RTT)})
	}
	if r.Idle != nil {
		idle := ToJSON(r.Idle)
		j.Idle = &idle
	}
	return j
}

// WriteJSON writes r as an indented -J document.
func WriteJSON(w io.Writer, r *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(ToJSON(r))
}
