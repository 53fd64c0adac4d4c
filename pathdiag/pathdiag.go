// Package pathdiag says why a test was slow when the cause is above the
// link layer: a shaper on the path, a window too small for the round trip,
// an MTU that does not fit, buffers that overflowed, loss, a policer between
// the hosts (D26, from doctor's probes of one direction), one direction far
// slower than the other, a reader or a CPU that could not keep up.
//
// nicinfo's rules (D1-D13) judge one interface; these rules (D14 and up)
// judge one direction of one test, with what both ends saw: the
// measurement, TCP_INFO, the interfaces (nicinfo) and the host's path
// facts (pathinfo: qdiscs, policers, SNMP counters, sysctls). Each finding
// has a severity, the evidence that made it fire and a fix, in
// finding.Finding's form, so every mode prints and exchanges them alike.
//
// Rank orders findings so that the most likely cause comes first: by
// severity, then causes before symptoms (a shaper before the retransmits it
// causes).
package pathdiag

import (
	"time"

	"slices"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/nicinfo"
	"github.com/blastnet/blast/pathinfo"
)

// End is what one end of a test knows about itself. Any part may be
// missing (nil or zero): a rule that needs it stays silent.
type End struct {
	// Name says which end in evidence: "local", "remote", "sender" ...
	Name string
	// NIC is the interface that carried the test on this end, with its
	// counter deltas over the test.
	NIC *nicinfo.Result
	// Path is the host's path facts over the test (qdiscs with their
	// counter deltas, policers, SNMP deltas); Sysctls the buffer settings.
	Path    *pathinfo.Delta
	Sysctls map[string]string
	// CPUPct is the process's CPU time over the test in percent of one
	// core (user + system; iperf3's figure is of all cores); negative
	// when unknown.
	CPUPct float64
	// Streams is the number of streams this end moved (its threads).
	Streams int
	// SndBuf and RcvBuf are the socket buffers the kernel granted (0:
	// unknown); BufAsked is -w as asked (0: autotuning).
	SndBuf, RcvBuf, BufAsked int
	// IO sums this end's I/O calls over its streams in this direction
	// (the receiver's reads).
	IO engine.Sample
	// BufLen is the buffer each I/O call was given (-l).
	BufLen int
	// Thread is what this end's data threads spent in this direction
	// (nil: not known, as from iperf3 or blast before it).
	Thread *Thread
}

// Thread is what an end's data threads (one per stream) spent over a
// test, in percent of each one's wall time: the most CPU one used (100 is
// a full core) and the longest one was runnable but waited for a CPU
// (the scheduler's run delay: other threads on its CPUs, or a CPU quota).
type Thread struct {
	CPUPct, RunWaitPct float64
}

// Direction is one direction of one test: data from Sender to Receiver.
type Direction struct {
	// UDP: datagrams; otherwise TCP.
	UDP bool
	// Seconds the test ran.
	Seconds float64
	// Sender and Receiver (nil when unknown, as the far end of an iperf3
	// peer mostly is).
	Sender, Receiver *End
	// Goodput is what the receiver got, in bit/s; SentBytes what the
	// sender sent, ReceivedBytes what the receiver got.
	Goodput                  float64
	SentBytes, ReceivedBytes int64
	// Rate is the sender's target rate (-b) in bit/s, 0 unlimited.
	Rate float64
	// TCP, from the sender's TCP_INFO: retransmitted segments (negative
	// when unknown), the largest congestion and send windows in bytes,
	// the mean smoothed RTT and the smallest RTT the kernel measured
	// (tcpi_min_rtt: the path's without queues, 0 unknown) in
	// microseconds, the path MTU and the MSS.
	Retransmits     int64
	MaxCwnd, MaxWnd int64
	RTTus, MinRTTus float64
	PMTU, MSS       int
	// BusyUs is the microseconds the sender's streams had data in flight
	// (TCP_INFO's tcpi_busy_time, summed), and of that, RwndLimitedUs
	// unable to send because the receiver's window was full, and
	// SndbufLimitedUs because the sender's buffer was (0: not known).
	BusyUs, RwndLimitedUs, SndbufLimitedUs int64
	// RTOs are the sender's retransmission timeouts over the test (its
	// streams' summed), RTOTimeMs the most milliseconds a stream spent
	// recovering from them (0: none, or not known).
	RTOs, RTOTimeMs int64
	// Stall is the longest time the direction moved no byte between its
	// first and its last (seconds into the test; 0: none seen).
	Stall Stall
	// UDP: the datagram payload length, datagrams sent and lost, and
	// the runs they were lost in: the gaps the receiver saw in the
	// sequence (0: not known, as from an iperf3 receiver).
	Datagram   int
	Sent, Lost int64
	LossRuns   int64
	// Resent: UDP sends the sender's own queue refused (ENOBUFS), which
	// the sender sent again once there was room, after waiting ResentWait
	// in all (blast senders; 0 unknown).
	Resent     int64
	ResentWait time.Duration
	// Failed: the test ended in an error (a stall, the peer's results
	// never came); what it measured up to then is still judged.
	Failed bool
}

// Stall is a time a direction moved nothing: Start seconds into the
// test, for Seconds.
type Stall struct {
	Start, Seconds float64
}

// rule is one path rule.
type rule struct {
	id    finding.ID
	check func(Direction) []finding.Finding
}

// rules are D14 and up, in the order a verdict prefers them at the same
// severity (their rank in finding's registry): causes first, symptoms
// last.
var rules = []rule{
	{finding.D28, D28}, // CPU: not the network, before any network cause
	{finding.D17, D17}, // black hole
	{finding.D16, D16}, // MTU
	{finding.D14, D14}, // shaper or policer
	{finding.D18, D18}, // socket buffers overflowed
	{finding.D19, D19}, // qdisc drops
	{finding.D15, D15}, // window
	{finding.D21, D21}, // reader
	{finding.D27, D27}, // outage
	{finding.D20, D20}, // loss on the path
	{finding.D22, D22}, // CPU
	{finding.D23, D23}, // line rate
}

// Diagnose runs every path rule over one direction, most serious first.
func Diagnose(d Direction) []finding.Finding {
	var out []finding.Finding
	for _, r := range rules {
		out = append(out, r.check(d)...)
	}
	// nicinfo's D9 (far below line rate, the NIC to blame) applies only
	// when nothing on the path set the pace: the path rules decide that.
	if NICBound(d, out) {
		n := d.Sender.NIC
		out = append(out, nicinfo.D9(nicinfo.Input{Iface: n.Interface, Delta: n.Delta, GoodputBps: d.Goodput, NICBound: true})...)
	}
	out = explained(out)
	out = cpuExplained(d, out)
	Rank(out)
	// One finding per rule and interface: the most serious (another
	// test's milder view of the same limit adds nothing).
	var seen []string
	return slices.DeleteFunc(out, func(f finding.Finding) bool {
		k := string(f.Rule) + " " + f.Iface
		if slices.Contains(seen, k) {
			return true
		}
		seen = append(seen, k)
		return false
	})
}

// explained drops the findings that a stronger one explains, so the
// verdict names the cause once: the asymmetry a shaper, a window, a
// policer, random loss or an outage makes (D7 at WARN beside D14, D15,
// D26, D30 or D27 at WARN), and the loss on the path (D20) that a black hole (D17), an MTU
// (D16 at ERROR), the sender's own queue (D19), a policer between the
// hosts (D26), random loss (D30) or an outage (D27) accounts for; the
// black hole D17 suspects when D29 measured it (with the hop's MTU); and
// the distance from line rate (D23) that D9 names as the NIC's.
func explained(fs []finding.Finding) []finding.Finding {
	has := func(rule finding.ID, sev finding.Severity) bool {
		return slices.ContainsFunc(fs, func(f finding.Finding) bool { return f.Rule == rule && f.Severity >= sev })
	}
	policed := has(finding.D26, finding.Warn) || has(finding.D30, finding.Warn) // a rate limit, or random loss
	// The retransmits, and a slow direction, are the outage's; a stall
	// amid random loss is TCP's timer backing off on lost resends.
	outage := has(finding.D27, finding.Warn) && !has(finding.D30, finding.Warn)
	shaped := has(finding.D14, finding.Warn) || has(finding.D15, finding.Warn) || policed || outage
	mtuHole := has(finding.D29, finding.Error) // a black hole D29 measured: D17 suspected it
	lost := has(finding.D17, finding.Error) || has(finding.D16, finding.Error) || has(finding.D19, finding.Warn) || policed || outage || mtuHole
	nicBound := has(finding.D9, finding.Warn)
	return slices.DeleteFunc(fs, func(f finding.Finding) bool {
		if f.Rule == finding.D27 && (has(finding.D30, finding.Warn) || has(finding.D17, finding.Error) || has(finding.D16, finding.Error) || mtuHole) {
			// A stall amid random loss is TCP's timer backing off;
			// one on a path-MTU black hole is the hole's (small
			// packets pass: no outage).
			return true
		}
		return f.Rule == finding.D7 && f.Severity == finding.Warn && shaped || f.Rule == finding.D20 && lost || f.Rule == finding.D23 && nicBound ||
			f.Rule == finding.D17 && mtuHole ||
			f.Rule == finding.D18 && f.Severity == finding.Info && has(finding.D16, finding.Error) // the MTU refused the sends
	})
}

// Rank sorts findings in place: the most serious first, then the most
// likely cause (link, then path causes, then symptoms: their rank in
// finding's registry), stable otherwise.
func Rank(fs []finding.Finding) {
	slices.SortStableFunc(fs, finding.Compare)
}

// Merge joins findings of several tests or both ends, ranks them, and
// keeps the most serious of each rule on each interface.
func Merge(lists ...[]finding.Finding) []finding.Finding {
	var out []finding.Finding
	for _, l := range lists {
		for _, f := range l {
			if !slices.ContainsFunc(out, func(g finding.Finding) bool {
				return g.Rule == f.Rule && g.Iface == f.Iface && g.Summary == f.Summary
			}) {
				out = append(out, f)
			}
		}
	}
	out = explained(out)
	Rank(out)
	return out
}
