package bench

import (
	"fmt"
	"math"
)

// Target is a performance figure one of blast's issues asks for.
type Target struct {
	Issue    int
	Text     string
	Workload string
	// CPU judges the senders' CPU-seconds per GB instead of the metric.
	CPU bool
	// Loss judges blast's median loss (a fraction) instead of a ratio.
	Loss bool
	Less bool // the ratio must be at most Want (else at least)
	Want float64
}

// Targets are the ratio targets of issues 4, 5 and 6.
var Targets = []Target{
	{Issue: 4, Text: "TCP 1 stream, readwrite: throughput >= 1.0x iperf3", Workload: "tcp1", Want: 1.0},
	{Issue: 4, Text: "TCP 1 stream, sendfile: throughput >= 1.0x iperf3 -Z", Workload: "tcp1-sendfile", Want: 1.0},
	{Issue: 4, Text: "TCP 1 stream, sendfile: sender CPU-s/GB <= 0.85x iperf3 -Z", Workload: "tcp1-sendfile", CPU: true, Less: true, Want: 0.85},
	{Issue: 4, Text: "TCP 1 stream, splice: throughput >= 1.0x iperf3 -Z", Workload: "tcp1-splice", Want: 1.0},
	{Issue: 4, Text: "TCP 1 stream, splice: sender CPU-s/GB <= 0.85x iperf3 -Z", Workload: "tcp1-splice", CPU: true, Less: true, Want: 0.85},
	{Issue: 4, Text: "UDP 64 B, mmsg, no GSO/GRO: delivered pps >= 2.5x iperf3 -u -b 0 -l 64", Workload: "udp64", Want: 2.5},
	{Issue: 4, Text: "UDP 64 B, mmsg with GSO+GRO: delivered pps >= 10x iperf3 -u -b 0 -l 64", Workload: "udp64-gso", Want: 10},
	{Issue: 5, Text: "blast client -P 1: throughput >= 1.0x iperf3", Workload: "client-P1", Want: 1.0},
	{Issue: 5, Text: "blast client -P 2: throughput >= 1.0x iperf3 -P 2", Workload: "client-P2", Want: 1.0},
	{Issue: 5, Text: "blast server, 8 clients: aggregate >= 0.9x one client -P 8", Workload: "server-8clients", Want: 0.9},
	{Issue: 6, Text: "AF_XDP transmit, 64 B frames: pps >= 2x trafgen", Workload: "afxdp-tx", Want: 2.0},
	{Issue: 6, Text: "AF_XDP receive: no loss at trafgen's full rate", Workload: "afxdp-rx", Loss: true, Less: true, Want: 0},
}

// TargetResult is a target with what this run measured for it.
type TargetResult struct {
	Issue    int    `json:"issue"`
	Text     string `json:"target"`
	Workload string `json:"workload"`
	Measured Num    `json:"measured"` // the median per-pair ratio
	Min      Num    `json:"min"`
	Max      Num    `json:"max"`
	Pairs    int    `json:"pairs"`
	Verdict  string `json:"verdict"`        // pass, miss, or why nothing was measured
	Loss     bool   `json:"loss,omitempty"` // Measured is a loss fraction, not a ratio
}

// EvalTargets judges each target on the median of its per-pair ratios.
func EvalTargets(ws []WorkloadResult) []TargetResult {
	var out []TargetResult
	for _, t := range Targets {
		tr := TargetResult{Issue: t.Issue, Text: t.Text, Workload: t.Workload, Measured: nan(), Min: nan(), Max: nan(), Loss: t.Loss}
		var w *WorkloadResult
		for i := range ws {
			if ws[i].ID == t.Workload {
				w = &ws[i]
			}
		}
		s := Summary{}
		if w != nil {
			s = w.Ratio
			switch {
			case t.CPU:
				s = w.SenderCPURatio
			case t.Loss && w.BlastLoss != nil:
				s = *w.BlastLoss
			case t.Loss:
				s = Summary{}
			}
		}
		switch {
		case w == nil:
			tr.Verdict = "not run"
		case w.Skipped != "":
			tr.Verdict = w.Skipped
		case w.Error != "":
			tr.Verdict = "failed: " + w.Error
		case s.N == 0:
			tr.Verdict = "no pair measured"
		default:
			tr.Measured, tr.Min, tr.Max, tr.Pairs = Num(s.Median), Num(s.Min), Num(s.Max), s.N
			tr.Verdict = verdict(s.Median, t)
		}
		out = append(out, tr)
	}
	return out
}

func verdict(m float64, t Target) string {
	ok := m >= t.Want
	if t.Less {
		ok = m <= t.Want
	}
	if math.IsNaN(m) {
		return "no value"
	}
	if ok {
		return "pass"
	}
	return "miss"
}

// fmtRatio writes a ratio as "1.23x".
func fmtRatio(r float64) string {
	if math.IsNaN(r) {
		return "-"
	}
	return fmt.Sprintf("%.2fx", r)
}

// fmtValue writes a measurement with 3 significant digits, large counts
// with a k or M suffix.
func fmtValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v >= 1e6:
		return fmt.Sprintf("%.3gM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.3gk", v/1e3)
	}
	return fmt.Sprintf("%.3g", v)
}
