package pathinfo

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"
)

// Snapshot is the state of the path facts of one network namespace and one
// interface at one moment.
type Snapshot struct {
	Iface string    `json:"iface"`
	Time  time.Time `json:"time"`
	MTU   int       `json:"mtu"`
	// Qdiscs are every qdisc and class on Iface as tc lists them: the
	// egress tree from the root down, and the ingress or clsact qdisc.
	Qdiscs []Qdisc `json:"qdiscs"`
	// Policers are the police actions of the tc filters on Iface, on
	// either side.
	Policers []Policer `json:"policers,omitempty"`
	// SNMP holds the protocol counters named by SNMPNames that this kernel
	// has, as "Table.Counter" ("Udp.RcvbufErrors", "Udp6.RcvbufErrors",
	// "TcpExt.TCPBacklogDrop"). They count for the whole namespace, not
	// only Iface; the Softnet ones count for the whole host.
	SNMP map[string]uint64 `json:"snmp"`
	// Sysctls holds the settings named by SysctlNames that could be read,
	// runs of blanks made one space ("4096 131072 6291456").
	Sysctls map[string]string `json:"sysctls"`
	// CPUs are the host's CPU times (all namespaces), for softirq load.
	CPUs []CPUTime `json:"cpus,omitempty"`
	// Cgroup is the CPU quota that holds this process and its
	// throttling (nil: none).
	Cgroup *CgroupCPU `json:"cgroup_cpu,omitempty"`
}

// Qdisc is one qdisc or class. Counters are cumulative in a Snapshot and
// differences in a Delta; Backlog and Qlen are the queue at that moment.
type Qdisc struct {
	// Kind is the scheduler: "tbf", "htb", "cake", "fq", "fq_codel",
	// "netem", "pfifo_fast", "noqueue", "ingress", "clsact", ...
	Kind string `json:"kind"`
	// Handle and Parent are written as tc writes them: "1:", "1:10",
	// "root", "ffff:fff1".
	Handle string `json:"handle"`
	Parent string `json:"parent"`
	// Class is true for a class of a classful qdisc (htb, hfsc, mq).
	Class bool `json:"class,omitempty"`

	// RateBps is the rate it shapes to in bit/s, 0 when it does not
	// shape: tbf rate, htb class rate, hfsc class guaranteed rate, cake
	// bandwidth, netem rate, and fq maxrate, which caps each flow and not
	// the sum. CeilBps is an htb class's ceil or an hfsc class's upper
	// limit.
	RateBps uint64 `json:"rate_bps,omitempty"`
	CeilBps uint64 `json:"ceil_bps,omitempty"`
	// LimitBytes and LimitPackets are the queue limit when the kind has
	// one (tbf and bfifo in bytes, cake's memory limit when set; pfifo,
	// fq, fq_codel, sfq, netem in packets): a shallow queue drops bursts.
	LimitBytes   uint64 `json:"limit_bytes,omitempty"`
	LimitPackets uint64 `json:"limit_packets,omitempty"`
	// BurstBytes is the token bucket of tbf and htb classes, recomputed
	// from the kernel's 64 ns ticks to within one tick of the rate.
	BurstBytes uint64 `json:"burst_bytes,omitempty"`

	Drops       uint64 `json:"drops"`
	Overlimits  uint64 `json:"overlimits"`
	Requeues    uint64 `json:"requeues"`
	SentBytes   uint64 `json:"sent_bytes"`
	SentPackets uint64 `json:"sent_packets"`
	// Backlog is the bytes queued, Qlen the packets.
	Backlog uint32 `json:"backlog"`
	Qlen    uint32 `json:"qlen"`
}

// String names q the way Resets and messages do: "qdisc tbf 1: root",
// "class htb 1:10 parent 1:1".
func (q Qdisc) String() string {
	what := "qdisc"
	if q.Class {
		what = "class"
	}
	if q.Parent == "root" {
		return fmt.Sprintf("%s %s %s root", what, q.Kind, q.Handle)
	}
	return fmt.Sprintf("%s %s %s parent %s", what, q.Kind, q.Handle, q.Parent)
}

// Shapes says q limits the rate of what passes it.
func (q Qdisc) Shapes() bool { return q.RateBps > 0 || q.CeilBps > 0 }

// key identifies q across snapshots: several qdiscs may share handle 0:
// (the children of mq), never a handle and a parent.
func (q Qdisc) key() string {
	if q.Class {
		return "class " + q.Handle + " " + q.Parent
	}
	return "qdisc " + q.Handle + " " + q.Parent
}

// Policer is a police action of a tc filter on the interface.
type Policer struct {
	// Direction is "ingress" or "egress".
	Direction string `json:"direction"`
	// Parent is where the filter is attached, as tc writes it
	// ("ffff:fff2" is clsact's or ingress's ingress hook, "ffff:fff3"
	// clsact's egress hook, "1:" a qdisc of the egress tree).
	Parent string `json:"parent"`
	// Filter is the filter's kind: "u32", "matchall", "flower", "fw".
	Filter string `json:"filter"`
	// Index is the action's index ("tc actions list action police").
	Index uint32 `json:"index"`
	// RateBps is the policed rate in bit/s. The kernel reports at most
	// 34.36 Gbit/s (2^32-1 bytes/s) here; a faster policer reads as that.
	RateBps uint64 `json:"rate_bps"`
	// BurstBytes is the bucket, to within a microsecond of the rate.
	BurstBytes uint64 `json:"burst_bytes"`
	// Action is what happens to traffic over the rate, as tc names it:
	// "drop", "reclassify", "pipe", "continue", "pass".
	Action string `json:"action"`

	// Overlimits counts packets over the rate; Drops those it dropped.
	Drops      uint64 `json:"drops"`
	Overlimits uint64 `json:"overlimits"`
	// Packets and Bytes count everything the policer saw.
	Packets uint64 `json:"packets"`
	Bytes   uint64 `json:"bytes"`
}

// String names p: "police ingress ffff:fff2 index 1".
func (p Policer) String() string {
	return fmt.Sprintf("police %s %s index %d", p.Direction, p.Parent, p.Index)
}

// Shapers returns the qdiscs and classes that shape (RateBps or CeilBps
// set), in tc's order.
func (s *Snapshot) Shapers() []Qdisc { return shapers(s.Qdiscs) }

// Sysctl returns the value of a sysctl by its dotted name
// ("net.core.rmem_max"), or "" when it was not read.
func (s *Snapshot) Sysctl(name string) string { return s.Sysctls[name] }

func shapers(qs []Qdisc) []Qdisc {
	var out []Qdisc
	for _, q := range qs {
		if q.Shapes() {
			out = append(out, q)
		}
	}
	return out
}

// Delta is what changed on the path between two snapshots.
type Delta struct {
	Iface string `json:"iface"`
	// Seconds is the time between the snapshots.
	Seconds float64 `json:"seconds"`
	// SNMP holds the increase of each counter both snapshots have and
	// that did not go backwards.
	SNMP map[string]uint64 `json:"snmp"`
	// Qdiscs and Policers are the after state with counters made
	// differences. One that appeared between the snapshots counts from
	// zero: everything it counted happened in between.
	Qdiscs   []Qdisc   `json:"qdiscs"`
	Policers []Policer `json:"policers,omitempty"`
	// Resets names what the delta could not count: SNMP counters that
	// went backwards (left out of SNMP), and qdiscs, classes and policers
	// that went backwards or changed kind (replaced during the test; they
	// count from zero, so their differences are lower bounds) or went
	// away ("qdisc tbf 1: root gone").
	Resets []string `json:"resets,omitempty"`
	// SoftirqPct is each CPU's share of time in softirq between the
	// snapshots, in percent: a CPU near 100 is busy moving packets
	// (receive and transmit processing), whoever asked for them.
	SoftirqPct []float64 `json:"softirq_percent,omitempty"`
	// Host is the whole host's idle and steal shares between the
	// snapshots (nil: not known, as from blast before them).
	Host *HostCPU `json:"host_cpu,omitempty"`
	// Quota is what the CPU quota that holds this process did between
	// the snapshots (nil: none).
	Quota *CPUQuota `json:"cpu_quota,omitempty"`
}

// Get returns the increase of an SNMP counter ("Udp.RcvbufErrors"), 0
// when it is unknown or was reset.
func (d *Delta) Get(name string) uint64 { return d.SNMP[name] }

// Shapers returns the qdiscs and classes that shape, with their changes.
func (d *Delta) Shapers() []Qdisc { return shapers(d.Qdiscs) }

// Diff returns what changed from before to after (neither nil), two
// snapshots of the same interface in the same namespace. Qdiscs and policers are matched by
// handle and parent (by direction, parent and index); snapshots of two
// interfaces share no qdisc, so every one of after counts from zero and
// every one of before is gone.
func Diff(before, after *Snapshot) *Delta {
	d := &Delta{Iface: after.Iface, Seconds: after.Time.Sub(before.Time).Seconds(), SNMP: map[string]uint64{},
		SoftirqPct: softirqShares(before.CPUs, after.CPUs), Host: hostShares(before.CPUs, after.CPUs),
		Quota: quotaBetween(before.Cgroup, after.Cgroup)}
	for k, a := range after.SNMP {
		b, ok := before.SNMP[k]
		switch {
		case !ok:
		case a < b:
			d.Resets = append(d.Resets, k)
		default:
			d.SNMP[k] = a - b
		}
	}
	slices.Sort(d.Resets)
	same := before.Iface == after.Iface

	old := map[string]Qdisc{}
	if same {
		for _, q := range before.Qdiscs {
			old[q.key()] = q
		}
	}
	for _, a := range after.Qdiscs {
		b, ok := old[a.key()]
		delete(old, a.key())
		if ok && (b.Kind != a.Kind || a.Drops < b.Drops || a.Overlimits < b.Overlimits || a.Requeues < b.Requeues ||
			a.SentBytes < b.SentBytes || a.SentPackets < b.SentPackets) {
			d.Resets = append(d.Resets, a.String())
			ok = false
		}
		if ok {
			a.Drops -= b.Drops
			a.Overlimits -= b.Overlimits
			a.Requeues -= b.Requeues
			a.SentBytes -= b.SentBytes
			a.SentPackets -= b.SentPackets
		}
		d.Qdiscs = append(d.Qdiscs, a)
	}
	for _, b := range before.Qdiscs {
		if _, gone := old[b.key()]; gone || !same {
			d.Resets = append(d.Resets, b.String()+" gone")
		}
	}

	oldP := map[string]Policer{}
	if same {
		for _, p := range before.Policers {
			oldP[p.String()] = p
		}
	}
	for _, a := range after.Policers {
		b, ok := oldP[a.String()]
		delete(oldP, a.String())
		if ok && (a.Drops < b.Drops || a.Overlimits < b.Overlimits || a.Packets < b.Packets || a.Bytes < b.Bytes) {
			d.Resets = append(d.Resets, a.String())
			ok = false
		}
		if ok {
			a.Drops -= b.Drops
			a.Overlimits -= b.Overlimits
			a.Packets -= b.Packets
			a.Bytes -= b.Bytes
		}
		d.Policers = append(d.Policers, a)
	}
	for _, b := range before.Policers {
		if _, gone := oldP[b.String()]; gone || !same {
			d.Resets = append(d.Resets, b.String()+" gone")
		}
	}
	return d
}

// tc handles: a 16-bit major and a 16-bit minor.
const (
	handleRoot    = 0xffffffff // TC_H_ROOT
	handleUnspec  = 0          // TC_H_UNSPEC
	handleIngress = 0xfffffff1 // TC_H_INGRESS, the parent of ingress and clsact
	// The pseudo-classes of clsact (and ingress) that filters hang on.
	minIngress = 0xfffffff2 // TC_H_MIN_INGRESS
	minEgress  = 0xfffffff3 // TC_H_MIN_EGRESS
)

// qdiscHandle writes a qdisc's handle as tc does: the major only, "1:".
func qdiscHandle(h uint32) string { return fmt.Sprintf("%x:", h>>16) }

// classID writes a class id or parent as tc's print_tc_classid does.
func classID(h uint32) string {
	switch {
	case h == handleRoot:
		return "root"
	case h == handleUnspec:
		return "none"
	case h>>16 == 0:
		return fmt.Sprintf(":%x", h&0xffff)
	case h&0xffff == 0:
		return fmt.Sprintf("%x:", h>>16)
	}
	return fmt.Sprintf("%x:%x", h>>16, h&0xffff)
}

// bitRate turns the kernel's bytes per second into bits per second.
func bitRate(bytesPerSec uint64) uint64 {
	if bytesPerSec > math.MaxUint64/8 {
		return math.MaxUint64
	}
	return bytesPerSec * 8
}

// tickNS is the length of the packet scheduler's tick that tbf and htb
// express their buckets in (PSCHED_SHIFT 6 in include/net/pkt_sched.h,
// the 0x40 of /proc/net/psched).
const tickNS = 64

// bucketBytes is the size of a token bucket of ticks scheduler ticks at
// bytesPerSec, rounded to the byte. tc computes the burst it prints in
// whole microseconds and so shows a little less (32762 for "burst 32kb" at
// 100mbit); the kernel keeps nanoseconds, and so does this.
func bucketBytes(bytesPerSec uint64, ticks uint32) uint64 {
	hi, lo := bits.Mul64(bytesPerSec, uint64(ticks)*tickNS)
	lo, carry := bits.Add64(lo, 5e8, 0)
	hi += carry
	if hi >= 1e9 {
		return math.MaxUint64
	}
	q, _ := bits.Div64(hi, lo, 1e9)
	return q
}

// actionName names a tc action verdict the way tc prints it.
func actionName(a int32) string {
	const (
		jump      = 0x10000000 // TC_ACT_JUMP
		gotoChain = 0x20000000 // TC_ACT_GOTO_CHAIN
		extMask   = 0x0fffffff
	)
	switch {
	case a&^extMask == jump:
		return fmt.Sprintf("jump %d", a&extMask)
	case a&^extMask == gotoChain:
		return fmt.Sprintf("goto chain %d", a&extMask)
	}
	switch a {
	case -1:
		return "continue"
	case 0:
		return "pass"
	case 1:
		return "reclassify"
	case 2:
		return "drop"
	case 3:
		return "pipe"
	case 4:
		return "stolen"
	case 5:
		return "queued"
	case 6:
		return "repeat"
	case 7:
		return "redirect"
	case 8:
		return "trap"
	}
	return fmt.Sprintf("action %d", a)
}
