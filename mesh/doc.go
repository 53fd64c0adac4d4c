// Package mesh measures many hosts at once: it finds blast agents
// (mesh/discover), plans which pairs run when (mesh/plan), asks each
// source agent to run its test, and writes one JSON Document with a cell
// per test. Report renders a Document as a matrix, long CSV and a
// heatmap, and names the outlier cells and nodes.
package mesh

import (
	"time"

	"github.com/blastnet/blast/agent"
)

// Document is what `blast mesh` writes on stdout: exactly one JSON
// document, so `kubectl logs job/blast-mesh > mesh.json` is the whole
// collector.
type Document struct {
	Meta  Meta   `json:"meta"`
	Nodes []Node `json:"nodes"`
	Cells []Cell `json:"cells"`
}

// Meta says what ran: the tool, the plan and the test settings.
type Meta struct {
	Tool     string    `json:"tool"`    // "blast"
	Version  string    `json:"version"` // blast's version
	Peers    string    `json:"peers"`   // the discovery source as given (FILE, dns:NAME, k8s:SERVICE)
	Mode     string    `json:"mode"`    // pairs, fan-in, all, ring:K, sample:K
	Isolate  bool      `json:"isolate,omitempty"`
	Zones    string    `json:"zones,omitempty"` // zone-aware variant: "same", "cross" or ""
	Rounds   int       `json:"rounds"`
	Tests    int       `json:"tests"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Test     Settings  `json:"test"`
}

// Settings are the test settings every cell ran with.
type Settings struct {
	Proto    string  `json:"proto"` // "tcp" or "udp"
	Seconds  float64 `json:"seconds"`
	Streams  int     `json:"streams"`
	Rate     uint64  `json:"rate_bps,omitempty"` // -b, bits per second (0: unpaced TCP)
	Reverse  bool    `json:"reverse,omitempty"`
	Len      int     `json:"len,omitempty"` // -l, 0: the default
	Backend  string  `json:"backend,omitempty"`
	Timeout  float64 `json:"timeout_seconds"` // per test
	Retries  int     `json:"retries"`         // on busy
	Baseline bool    `json:"baseline,omitempty"`
}

// Node is one agent: its identity and where it is reached.
type Node struct {
	Name    string   `json:"name"`
	Addr    string   `json:"addr"` // the data address tests aim at (host or host:port)
	Zone    string   `json:"zone,omitempty"`
	Control string   `json:"control,omitempty"` // the agent's control endpoint, host:port
	Addrs   []string `json:"addrs,omitempty"`   // every address the agent reported
	Version string   `json:"version,omitempty"`
	Err     string   `json:"err,omitempty"` // the agent could not be reached
}

// Cell is one test from Src to Dst (node names). Bps is the receiver's
// goodput in bits per second; Dir is "up" (Src sends to Dst) or "down"
// (-R: Dst sends to Src). A failed test keeps its Err and zero numbers.
type Cell struct {
	Src      string    `json:"src"`
	Dst      string    `json:"dst"`
	Proto    string    `json:"proto"`
	Dir      string    `json:"dir"`
	Phase    string    `json:"phase,omitempty"` // fan-in: "baseline" (one at a time) or "" (all at once)
	Round    int       `json:"round"`
	Start    time.Time `json:"start"`
	Seconds  float64   `json:"seconds"`
	Bps      float64   `json:"bps"`
	Bytes    uint64    `json:"bytes"`
	Retrans  int64     `json:"retrans"`          // TCP retransmissions of the sender
	RTTus    float64   `json:"rtt_us,omitempty"` // TCP: the sender's smoothed RTT, mean over streams
	Loss     float64   `json:"loss"`             // UDP: lost datagrams / sent, 0..1
	JitterMs float64   `json:"jitter,omitempty"` // UDP: milliseconds, as iperf3's jitter_ms
	CPU      CPU       `json:"cpu"`
	NIC      string    `json:"nic,omitempty"` // the interface each end used: "eth0 -> eth0"
	Findings []Finding `json:"findings,omitempty"`
	Attempts int       `json:"attempts"` // 1 + retries on busy
	Err      string    `json:"err,omitempty"`
}

// CPU is each end's CPU utilisation over the test, in percent of one
// host (iperf3's cpu_utilization_percent host_total).
type CPU struct {
	Src float64 `json:"src"`
	Dst float64 `json:"dst"`
}

// Finding is one finding of a test's diagnosis (nicinfo and pathdiag
// rules), with the end that has it: "src", "dst" or "path" (the agent's
// reply carries them as they are).
type Finding = agent.Finding
