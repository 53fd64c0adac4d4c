package pathdiag

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/pathinfo"
)

// The CPU rule's thresholds. fullCorePct: a data thread that used this
// share of a core or more was the limit of its stream. starvedPct: a data
// thread runnable but waiting for a CPU this share of its time or more
// was held back by the scheduler (other work on its cores, or a CPU quota:
// cgroup cpu.max); on a host with CPU to spare it is a WARN when it
// waited heldPct of its time or more (a thread that shares its core with
// a busy loop waits half of it; one whose host's load comes and goes,
// less), an INFO that explains the receiver's full buffers below that. busyIdlePct and busyStealPct: a host idle less than
// this, or with this much stolen by its hypervisor, was busy as a whole,
// which is never the network's doing (a thread on a busy host, or one
// whose CPUs a hypervisor steals, waits for a CPU as long as one held
// back by a quota: 89% of a test was seen on a healthy lab; only the
// quota's own counters tell them apart). shortLossPct: a receiver's UDP loss
// from this share on is one its CPU can explain; rwndShortPct: a TCP
// sender waiting on the receiver's window this share of its busy time was
// held by the receiver.
const (
	fullCorePct = 85
	starvedPct  = 25
	heldPct     = 50
	busyIdlePct = 15
	// spareIdlePct is the idle share a host needs for a thread's long
	// run-queue wait to be its cores' (a quota, a busy loop on its core:
	// the other cores idle), not the host's load: a thread that waited
	// 51-58% of the test on a 2-CPU host 13-23% idle while two test
	// packages ran at once waited for the host.
	spareIdlePct = 35
	busyStealPct = 10
	shortLossPct = 1
	rwndShortPct = 20
)

// explainsMark ends the summary of a CPU finding that accounts for a
// receiver's loss or slow window: cpuExplained drops the network causes
// that would otherwise claim it.
const explainsMark = "; it explains the receiver's loss and window"

// D28: an end that was short of CPU: its data thread used a full core, or
// waited for a CPU a large share of the test. It is named before any
// network cause: a WARN when a cgroup CPU quota throttled the end in most
// periods of the test while its thread waited to run (busy host or not),
// when the host had CPU to spare yet the thread was held back half the
// test or more (a core shared with other work), or when a
// thread at a full core explains a shortfall (the receiver's loss or its
// slow window, the sender short of its -b rate); an INFO when nothing fell
// short (a fast path is CPU-bound on every host: the path is faster than
// this host) or when the host as a whole was busy (idle near zero, or
// stolen by a hypervisor): a busy host is never a network finding.
func D28(d Direction) []finding.Finding {
	var out []finding.Finding
	for _, e := range []*End{d.Receiver, d.Sender} {
		if f, ok := cpuFinding(d, e); ok {
			out = append(out, f)
		}
	}
	return out
}

func cpuFinding(d Direction, e *End) (finding.Finding, bool) {
	if e == nil {
		return finding.Finding{}, false
	}
	role := "sender"
	if e == d.Receiver {
		role = "receiver"
	}
	var host *pathinfo.HostCPU
	var quota *pathinfo.CPUQuota
	if e.Path != nil {
		host, quota = e.Path.Host, e.Path.Quota
	}
	t := e.Thread
	full := t != nil && t.CPUPct >= fullCorePct
	starved := t != nil && t.RunWaitPct >= starvedPct
	// Held back half the test or more on a host without much idle time:
	// the host's load, not the thread's cores.
	loaded := starved && t.RunWaitPct >= heldPct && host != nil && host.IdlePct < spareIdlePct
	busy := host != nil && (host.IdlePct < busyIdlePct || host.StealPct >= busyStealPct || loaded)
	// A quota that throttled the end in most periods while its data
	// thread waited to run held it back, busy host or not.
	throttled := quota != nil && quota.Periods > 0 && 2*quota.Throttled >= quota.Periods && (t == nil || starved)
	// A core in softirq moving the packets (D22 notes it alone) counts
	// here when something fell short.
	_, softPct := softirqBusiest(e)
	short := shortfall(d, role)
	soft := softPct >= busySoftirq && short != ""
	if !full && !starved && !busy && !throttled && !soft {
		return finding.Finding{}, false
	}
	var ev []string
	if t != nil {
		ev = append(ev, fmt.Sprintf("the %s's (%s) data thread used %.0f%% of a core and waited for a CPU %.0f%% of the test (run-queue wait)", role, e.Name, t.CPUPct, t.RunWaitPct))
	}
	if quota != nil {
		ev = append(ev, fmt.Sprintf("its cgroup %s has a CPU quota of %s CPU and was throttled in %d of %d periods (%.2f s)", quota.Cgroup, strconv.FormatFloat(quota.CPUs, 'g', 3, 64), quota.Throttled, quota.Periods, quota.ThrottledSeconds))
	}
	if host == nil {
		ev = append(ev, "its host's idle time unknown")
	} else {
		ev = append(ev, fmt.Sprintf("its host was %.0f%% idle, %.0f%% stolen, over %d CPU(s)", host.IdlePct, host.StealPct, host.CPUs))
	}
	if cpu, pct := softirqBusiest(e); pct >= 0 {
		ev = append(ev, fmt.Sprintf("the busiest core in softirq: cpu%d at %.0f%%", cpu, pct))
	}
	if short != "" {
		ev = append(ev, short)
	}
	ev = append(ev, "goodput "+bits(d.Goodput))
	f := finding.Finding{Rule: finding.D28, Severity: finding.Info, Iface: iface(e), Evidence: strings.Join(ev, "; ")}
	switch {
	case throttled:
		f.Severity = finding.Warn
		f.Summary = fmt.Sprintf("CPU-bound at the %s (%s), not the network: a cgroup quota holds its blast to %s CPU, and throttled it most of the test",
			role, e.Name, strconv.FormatFloat(quota.CPUs, 'g', 3, 64))
		f.Fix = fmt.Sprintf("raise the CPU quota of cgroup %s on the %s (cpu.max, cpu.cfs_quota_us, or the container's CPU limit) to at least %d CPU(s), one per stream, or lift it", quota.Cgroup, role, max(e.Streams, 1))
	case busy:
		// Named by its end, not its role: one line per host.
		f.Summary = fmt.Sprintf("the %s host was busy: the rates are what it left to the test, not the network's", e.Name)
		if host != nil && host.StealPct >= busyStealPct {
			f.Summary = fmt.Sprintf("the %s host had CPU stolen by its hypervisor: the rates are what it left to the test, not the network's", e.Name)
		}
		f.Fix = "test again on a quieter host (or a VM with dedicated CPUs); nothing to change on the network"
	case starved && t.RunWaitPct >= heldPct:
		// Held back half the test or more while the host had CPU to
		// spare: a quota, or a core shared with other work. (A thread
		// on a host whose load comes and goes waits less: 34% on a
		// 20%-idle host while make test ran, its peer's 31%, with the
		// outage lab's window short; a WARN there claimed a cause the
		// host's load was.)
		f.Severity = finding.Warn
		f.Summary = fmt.Sprintf("CPU-bound at the %s (%s), not the network: its data thread waited for a CPU while the host had CPU to spare (a CPU quota, or other work on its cores)",
			role, e.Name)
		f.Fix = fmt.Sprintf("give the %s's blast a CPU of its own: lift its CPU quota (cgroup cpu.max, a container's CPU limit) or move other work off its cores (taskset, --affinity)", role)
	case short != "" && full:
		f.Severity = finding.Warn
		f.Summary = fmt.Sprintf("CPU-bound at the %s (%s), not the network: its data thread used a full core and could not keep up",
			role, e.Name)
		f.Fix = "more streams (-P) on more cores, a batching backend (--backend mmsg or gro for UDP, splice to send TCP), a larger -l, or a lower -b"
	case soft:
		f.Severity = finding.Warn
		f.Summary = fmt.Sprintf("CPU-bound at the %s (%s), not the network: a core spent the test in softirq moving its packets and could not keep up",
			role, e.Name)
		f.Fix = "spread the packet work over more cores: more queues (ethtool -L IFACE combined N) with irqbalance, RPS/RFS, or GRO/GSO to handle fewer, larger packets"
	case starved && !full && short != "":
		f.Summary = fmt.Sprintf("the %s's data thread waited for a CPU %.0f%% of the test (other work on its cores), and it fell short there", role, t.RunWaitPct)
		f.Fix = "for the path's own figures, give blast a CPU of its own (taskset, --affinity) or test on a quieter host"
	case starved && !full:
		f.Summary = fmt.Sprintf("the %s's data thread waited for a CPU at times (other work on its cores), and nothing fell short for it", role)
		f.Fix = "none needed; for steadier figures, give blast a CPU of its own (taskset, --affinity)"
	default:
		f.Summary = fmt.Sprintf("the path is faster than this host: CPU-bound at the %s (%s) at %s", role, e.Name, bits(d.Goodput))
		f.Fix = "none needed for the path; for more, more streams (-P) on more cores or a copy-free backend"
	}
	// A receiver short of CPU accounts for its loss and slow window: at
	// WARN always; at INFO (a busy host) when it fell short here with
	// the buffer it was given, not one set small (-w): that buffer
	// overflows (D18) on any host (cpuExplained says what each accounts
	// for).
	if role == "receiver" && (f.Severity >= finding.Warn || (busy || starved) && short != "" && e.BufAsked == 0) {
		f.Summary += explainsMark
	}
	return f, true
}

// shortfall says what fell short in d that the role's CPU can explain, ""
// when nothing did: a receiver's UDP loss or full socket buffer, a TCP
// sender held by the receiver's window, a UDP sender below its -b.
func shortfall(d Direction, role string) string {
	if role == "receiver" {
		if d.UDP && d.Sent > 0 && 100*float64(d.Lost) >= shortLossPct*float64(d.Sent) {
			return fmt.Sprintf("the receiver lost %d of %d datagrams (%.1f%%)", d.Lost, d.Sent, 100*float64(d.Lost)/float64(d.Sent))
		}
		if r := d.Receiver; r != nil && r.Path != nil {
			if n := r.Path.Get("Udp.RcvbufErrors") + r.Path.Get("Udp6.RcvbufErrors"); d.UDP && n > 0 {
				return fmt.Sprintf("%d datagrams dropped in the receiver's full socket buffer", n)
			}
			if n := r.Path.Get("TcpExt.TCPRcvQDrop") + r.Path.Get("TcpExt.TCPBacklogDrop"); !d.UDP && n > 0 {
				return fmt.Sprintf("%d segments dropped in the receiver's full socket queue", n)
			}
		}
		if !d.UDP && d.BusyUs > 0 && 100*float64(d.RwndLimitedUs) >= rwndShortPct*float64(d.BusyUs) {
			return fmt.Sprintf("the sender waited on the receiver's window %.0f%% of its busy time", 100*float64(d.RwndLimitedUs)/float64(d.BusyUs))
		}
		return ""
	}
	if d.UDP && d.Rate > 0 && d.Seconds > 0 {
		if sent := 8 * float64(d.SentBytes) / d.Seconds; sent < 0.9*d.Rate {
			return fmt.Sprintf("the sender sent %s of the %s asked", bits(sent), bits(d.Rate))
		}
	}
	return ""
}

// cpuExplains: f is a CPU finding that accounts for the receiver's loss
// and slow window.
func cpuExplains(f finding.Finding) bool {
	return f.Rule == finding.D28 && strings.HasSuffix(f.Summary, explainsMark)
}

// ReceiverCPUBound reports whether d's receiver was short of CPU in a way
// that accounts for its loss: D28 fires at the receiver and explains its
// symptoms. Doctor then lowers its own UDP rate rather than report the
// overflow it caused.
func ReceiverCPUBound(d Direction) bool {
	f, ok := cpuFinding(d, d.Receiver)
	return ok && cpuExplains(f)
}

// cpuExplained drops, from one direction's findings, what its receiver's
// want of CPU accounts for: its full socket buffers (D18) and short reads
// (D21), and, when D28 is at WARN (the end was held back, not merely on a
// busy host, which leaves a small window's mark as it is), its slow
// window (D15) and the loss it left to the path (D20).
// Only this direction's: a busy receiver one way explains nothing of the
// other, nor the asymmetry between them (see CPUBound).
func cpuExplained(d Direction, fs []finding.Finding) []finding.Finding {
	f, ok := cpuFinding(d, d.Receiver)
	if !ok || !cpuExplains(f) {
		return fs
	}
	drop := []finding.ID{finding.D21}
	if f.Severity >= finding.Warn {
		drop = append(drop, finding.D15, finding.D20)
	}
	rcv := iface(d.Receiver)
	return slices.DeleteFunc(fs, func(g finding.Finding) bool {
		return slices.Contains(drop, g.Rule) || g.Rule == finding.D18 && g.Severity >= finding.Warn && g.Iface == rcv
	})
}

// CPUBound reports whether an end of d was short of CPU at WARN (D28): a
// direction slower than the other for that is no asymmetry of the path.
func CPUBound(d Direction) bool {
	for _, e := range []*End{d.Receiver, d.Sender} {
		if f, ok := cpuFinding(d, e); ok && f.Severity >= finding.Warn {
			return true
		}
	}
	return false
}

// WithoutCPUAsymmetry drops D7 (one direction slower than the other) from
// fs when the slower of a and b had an end short of CPU at WARN: the CPU,
// named by D28, is why.
func WithoutCPUAsymmetry(fs []finding.Finding, a, b *Direction) []finding.Finding {
	if a == nil || b == nil {
		return fs
	}
	slow := a
	if b.Goodput < a.Goodput {
		slow = b
	}
	if !CPUBound(*slow) {
		return fs
	}
	return slices.DeleteFunc(fs, func(f finding.Finding) bool { return f.Rule == finding.D7 })
}
