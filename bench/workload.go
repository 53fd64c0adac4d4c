package bench

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"time"

	"github.com/blastnet/blast/netlab"
)

// Env is what a workload runs with: the lab, the blast binary and what it
// can do, the peers' binaries, and the length of each run.
type Env struct {
	Lab   *netlab.Lab
	Blast string // path of the blast binary
	Secs  int    // seconds per run
	Caps  Caps
	// Iperf3 is Debian's iperf3; Modern an iperf3 of 3.16 or later, or nil.
	Iperf3, Modern *Iperf3
	// CPUs are the CPUs bench may run on (its affinity mask).
	CPUs []int

	counts map[string]int64 // calibrated ttcp buffer counts per workload
}

// target is the receiving host's address; Check made sure it is the lab's.
func (e *Env) target() string { return e.Lab.B.Addr4.String() }

// Check refuses a lab whose hosts are not both in the benchmarking range
// 198.18.0.0/15: bench sends traffic nowhere else.
func (e *Env) Check() error {
	bench := netip.MustParsePrefix("198.18.0.0/15")
	for _, h := range []*netlab.Host{e.Lab.A, e.Lab.B} {
		if h == nil || !bench.Contains(h.Addr4) {
			return fmt.Errorf("bench: refusing to run: lab host address %v is outside %s", h.Addr4, bench)
		}
	}
	return nil
}

// Sample is one run of one side of a workload.
type Sample struct {
	Value Num         `json:"value"`          // the workload's metric
	Loss  Num         `json:"loss,omitempty"` // UDP: fraction of datagrams sent that were not delivered
	Procs []ProcStats `json:"procs"`
	// Latency holds a latency workload's round-trip figures.
	Latency *LatencyStats `json:"latency_us,omitempty"`
	// Spread is how far the stream furthest from the mean was from it
	// (Iperf3Result.Spread), for runs of several TCP streams.
	Spread *float64 `json:"stream_spread,omitempty"`
	Err    string   `json:"error,omitempty"`
}

// proc returns the stats of the process with role, or nil.
func (s Sample) proc(role string) *ProcStats {
	for i := range s.Procs {
		if s.Procs[i].Role == role {
			return &s.Procs[i]
		}
	}
	return nil
}

// Side is one contender of a workload: blast, or one of its peers.
type Side struct {
	// Key names the peer across workloads: PeerIperf3 (Debian's),
	// PeerIperf3Modern, "sockperf", "qperf", "trafgen", "blast" (blast
	// run another way). "" for blast's own side.
	Key   string
	Label string // what runs, in words ("iperf3 -l 128K")
	Tool  string // the Debian-packaged command it needs ("iperf3"), "" for none
	// Unavailable says why this side cannot run here ("" if it can).
	Unavailable func(e *Env) string
	Run         func(ctx context.Context, e *Env) Sample
}

// Workload is one comparison: blast against one or more peers on one
// metric. Each round runs blast, then each peer in turn.
type Workload struct {
	ID     string
	Title  string
	Metric string // "throughput", "delivered datagrams/s"
	Unit   string // "Gbit/s", "pps"
	UDP    bool
	Quick  bool // part of the quick suite
	// Extra: not in the default suite (no target rests on it, and make
	// bench must stay under 15 minutes); -all or -only runs it.
	Extra bool
	// Unavailable says why the workload cannot run with this blast ("" if
	// it can).
	Unavailable func(e *Env) string
	// Calibrate runs before the pairs (a warm-up that may size the runs).
	Calibrate func(ctx context.Context, e *Env) error
	Blast     Side
	Peers     []Side
}

// Num is a float64 that is null in JSON when it is not a number.
type Num float64

// MarshalJSON writes NaN and infinities as null.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', 6, 64), nil
}

// UnmarshalJSON reads a number or null (NaN).
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Num(math.NaN())
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	*n = Num(f)
	return err
}

func nan() Num { return Num(math.NaN()) }

// failed is a sample of a run that produced no measurement.
func failed(err error, procs ...*proc) Sample {
	s := Sample{Value: nan(), Loss: nan(), Err: err.Error()}
	for _, p := range procs {
		if p != nil {
			s.Procs = append(s.Procs, p.stats())
		}
	}
	return s
}

// timeout is how long one run may take before it is killed.
func (e *Env) timeout() time.Duration {
	return time.Duration(max(30, 8*e.Secs)) * time.Second
}
