package finding

import (
	"fmt"
	"slices"
	"strings"
)

// ID names a rule. The IDs below are every rule blast has; Lookup finds
// what the registry says of one.
type ID string

// The rules: D1-D13 (but D7) and D25 judge one interface (nicinfo), D7
// the two directions of a path, D14 and up one direction of a test
// (pathdiag); Reset is the counters going backwards during a test.
const (
	D1    ID = "D1"
	D2    ID = "D2"
	D3    ID = "D3"
	D4    ID = "D4"
	D5    ID = "D5"
	D6    ID = "D6"
	D7    ID = "D7"
	D8    ID = "D8"
	D9    ID = "D9"
	D10   ID = "D10"
	D11   ID = "D11"
	D12   ID = "D12"
	D13   ID = "D13"
	D14   ID = "D14"
	D15   ID = "D15"
	D16   ID = "D16"
	D17   ID = "D17"
	D18   ID = "D18"
	D19   ID = "D19"
	D20   ID = "D20"
	D21   ID = "D21"
	D22   ID = "D22"
	D23   ID = "D23"
	D25   ID = "D25"
	D26   ID = "D26"
	D27   ID = "D27"
	D28   ID = "D28"
	D29   ID = "D29"
	D30   ID = "D30"
	Reset ID = "reset"
)

// Rule is what the registry says of one rule.
type Rule struct {
	ID ID
	// Title is what the rule finds, with the thresholds that make it fire.
	Title string
	// Needs is the evidence it reads (and its findings cite).
	Needs string
	// Rank orders findings of the same severity: lower is more likely
	// the cause, higher a symptom of another (the link before the path,
	// a shaper before the retransmits it causes). A rule the registry
	// does not hold ranks 0, with the link rules.
	Rank int
}

// rules is the registry, in the order of Rank (the README's table's order).
var rules = []Rule{
	{D28, "not the network: an end short of CPU, ranked before every network cause. WARN \"CPU-bound at the receiver/sender\" when a cgroup CPU quota (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us`, the nearest up the process's tree: a container's CPU limit) throttled the end in half the periods of the test or more while its data thread waited to run 25% of it or more, busy host or not; when the thread waited that long on a host more than 15% idle with under 10% stolen (other work on its cores) and something fell short, or waited half the test or more; or when the thread used 85% of a core or more, or a core of its host spent 90% of the test in softirq, and something fell short (the receiver lost 1% or more of its datagrams or dropped in a full socket buffer, the TCP sender waited on its window 20% of its busy time or more, the UDP sender sent under 90% of `-b`). INFO otherwise: a fast path at a full core (\"the path is faster than this host\"), a thread that waited at times with nothing short, and a busy host (under 15% idle, or 10% or more stolen by a hypervisor), which is never a network finding. A receiver short of CPU explains that direction's D18 (at the receiver) and D21 (a busy host's too, when the receiver dropped with the buffer it was given, not one asked small with `-w`), and at WARN its D15 and D20; an end at WARN in the slower direction explains D7. Doctor runs its UDP test again at a quarter of its automatic rate (up to twice, down to 1 Mbit/s) when the receiver lost datagrams to it for want of CPU, and judges the last run",
		"each end's busiest data thread: CPU time over its wall time and run-queue wait (`/proc/thread-self/schedstat`'s run delay, carried from a blast server in its results), the host's idle and steal shares and busiest softirq core (`/proc/stat`), the quota in CPUs and the periods it throttled, what fell short, the goodput", -10},
	{D1, "a forced peer: this end negotiates at half duplex and the link partner advertises nothing (its speed and duplex are hard-set; parallel detection found the speed, not the duplex) (ERROR)",
		"carrier, autonegotiation, duplex, the link partner's modes", 0},
	{D2, "half duplex on a link that could run full, with why from the partner's modes: a forced peer (a mismatch), a hub or half-only device, or this end forced",
		"duplex, autonegotiation, the link partner's modes, collisions", 0},
	{D3, "late collisions: the far end sends without listening (a duplex mismatch)",
		"late collisions over the test, packets sent", 0},
	{D4, "collisions while the interface reports full duplex",
		"collisions over the test, the duplex", 0},
	{D5, "heavy or excessive collisions at half duplex (or on a MAC that counts them when the driver does not say the duplex): a busy shared segment (hub), or a mismatch when late collisions come with them",
		"collisions, excessive collisions (frames dropped after 16 in a row) and late collisions over the test, packets sent", 0},
	{D6, "receive-side frame errors (CRC, alignment, runts, too long)",
		"frame error counters over the test against packets received, duplex", 0},
	{D8, "a link below the best speed both ends advertise",
		"speed, this end's and the link partner's modes", 0},
	{D10, "the link flapped during the test (the result is not valid: exit status 1)",
		"carrier changes and link-down events over the test", 0},
	{D11, "the host dropped received frames (rx ring or backlog full)",
		"the host's drop counters over the test, packets received, ring sizes", 0},
	{D12, "no link although the interface is up (carrier down)",
		"admin state, carrier, operstate", 0},
	{D13, "deferred transmissions on a full-duplex link",
		"deferrals over the test, the duplex", 0},
	{D25, "a card renamed between two captures of the same machine (matched by permanent MAC and bus address); WARN when the old name now names another card, or ethN names came in another probe order",
		"both names, the identity that matched them, what the old name names now, the naming kind and udev's pin", 0},
	{D17, "a path-MTU black hole",
		"bytes that arrived after the handshake, retransmits and timeouts, tcp_mtu_probing", 10},
	{D16, "MTUs that differ across a link; UDP datagrams larger than the path carries",
		"both MTUs, the loss, the sender's tx_dropped", 11},
	{D29, "a hop between the hosts that carries less than both ends' MTUs (a jumbo path behind a 1500-byte link), in the direction(s) it applies (doctor): the largest don't-fragment probe that arrived (IP_PMTUDISC_PROBE: the kernel's estimate ignored), the next size up lost twice; WARN when the hop's ICMP \"fragmentation needed\" (ICMPv6 \"packet too big\") reached the sender's kernel, ERROR when it did not (a path-MTU black hole: doctor then skips the TCP download and the UDP test, whose results would not get through); measured after the TCP upload, and only against a blast server or after an upload that stalled (iperf3 would take a probe for a test and fail its next one); ends that differ with nothing smaller between are D16's; INFO when a direction was not measured (an iperf3 server sends no probes) or the search did not settle",
		"each direction's largest probe that arrived and the smallest lost, both interfaces' MTUs, the path MTU each sender's kernel holds after the probes (IP_MTU, IPV6_MTU)", 11},
	{D14, "a shaper or policer (tbf, htb, cake, fq maxrate, police) setting the pace",
		"its rate, goodput as a share of it, overlimits and drops", 12},
	{D26, "a policer (or a lossy token bucket) between the hosts, in one direction (doctor): TCP loses at least 2% of its segments that way while UDP below its rate loses under 0.5%; ruled out by random loss (the slow UDP loses too), by UDP offered above TCP's rate passing with under 5% lost, and by a shaper or policer on either end (D14's). When TCP's RTT stood 5 ms or more above the path's own, a queue stood on the way, which a policer alone does not hold: then it is \"a rate limit that TCP overflows behind a queue\", a shaper or slower link with a queue shorter than TCP's window, or a policer behind a queue, with the test that tells them apart (the round trip while UDP runs just above the rate)",
		"TCP's goodput, loss (retransmits less D-SACK) and queue (mean smoothed RTT less the smallest), the clean UDP rate and TCP's goodput (lower bounds of the limit's rate), what UDP offered at 2.5 × TCP's goodput (2.5 × more while that passes, up to 1 Gbit/s) delivered (the limit's rate; only a lower bound when that probe failed or its sender fell short of its rate on a busy host); the queue a loss-based TCP needs: rate × the path's RTT", 12},
	{D30, "random loss between the hosts, in one direction (doctor): TCP lost at least 1% of its segments that way and UDP at a lower rate (the UDP upload, or the probe of D26 from 2%) lost at least 0.5% of its datagrams on the path and at least 0.4 × TCP's share, in runs of at most 4 on average (a blast receiver counts the gaps; longer runs are a queue that bursts overflowed, such as a held-up sender catching up): the loss does not grow with the rate (a lossy link or device: a bad cable, port or optic, a radio link), not a rate limit; datagrams the receiver's own socket dropped (D18's) are not counted, a shaper or policer on either end is D14's; it explains D7, D20, and D27's stall (TCP's timer backing off on lost resends)",
		"TCP's loss (retransmits less D-SACK) and goodput, the slower UDP's datagrams lost on the path (less the receiver's RcvbufErrors) and its rate", 12},
	{D18, "socket buffers that overflowed",
		"UdpRcvbufErrors / SndbufErrors, TCPRcvQDrop, SO_RCVBUF, rmem_max", 13},
	{D19, "the sender's egress queue dropping",
		"the qdisc's drops and limit", 14},
	{D15, "a TCP window too small for the round trip: goodput at 70% or more of the window over the path's own RTT (the smallest the kernel measured, `tcpi_min_rtt`; a window that binds leaves the queues empty, so a smoothed RTT far above it means a queue or a busy CPU sets the pace, not the window); silent when goodput runs over 10% above window / smoothed RTT (then the RTT samples were not the data's)",
		"window / RTT vs goodput, the share of time the kernel found the sender blocked by the receiver's window and by its own buffer (`tcpi_rwnd_limited`, `tcpi_sndbuf_limited`), the bandwidth-delay product, granted buffers, the sysctls, the `-w` that would lift it", 15},
	{D7, "the two directions compared (`--bidir`, doctor). A duplex mismatch (ERROR) needs a collapse (one direction more than 10 times slower, losing over 1% of its segments or with error counters) and link evidence: an end at half duplex (not on a hub: a partner advertising only half-duplex modes, or D2/D5 finding a hub from the counters: 100 collisions or more, none late, no CRC error), late collisions (D3) on the half side, CRC errors or runts (D6) on the full side, collisions or deferrals on a full-duplex MAC (D4, D13); CRC errors alone are \"a mismatch or a bad cable\". Both ends at full duplex with no such counters rule it out, whatever the retransmits. Otherwise an asymmetry (WARN, with each direction's rate): over 1.5× when the slow direction lost at least 2% or built a standing queue (its TCP's smoothed RTT 2 ms or more above the path's own, `tcpi_min_rtt`, and 4 times the fast direction's: \"behind a queue: a shaper or a slower link that way, at about\" its rate; below 10×, only loss or such a queue tells a path from a busy host's noise, which delays both directions alike), any 10× or more",
		"both rates, each direction's loss and queue, the link evidence or its absence", 15},
	{D21, "a reader-limited receiver (full reads of a small buffer) vs a starved one",
		"reads, bytes per read, CPU", 16},
	{D27, "an outage between the hosts: a direction moved no byte for 1 s or more between its first and last bytes (the client watches its counts every 100 ms or less), with both links up; TCP only when its sender's retransmission timer fired meanwhile (a host that stopped running the flow fires none), UDP only when at least 10 datagrams were due; it explains the retransmits (not D20) and a slow direction (not D7)",
		"when and how long, the sender's retransmission timeouts and the time spent recovering from them (`tcpi_total_rto`, `tcpi_total_rto_time`, Linux 6.7+), the interfaces whose carrier never changed", 17},
	{D20, "loss nothing above explains (INFO when the receiver already had the resent segments: reordering, not loss; INFO for under 2% lost where TCP stood 5 ms or more in a queue, or resent half of it in slow start: the congestion TCP finds its rate by)",
		"retransmits less those the receiver reports as duplicates (D-SACK), TCP's queue (smoothed RTT less the smallest), retransmissions in slow start (TCPSlowStartRetrans), lost datagrams, local tx vs remote rx bytes", 17},
	{D22, "a CPU-bound end: the process, or a core in softirq moving packets",
		"CPU per stream, the busiest core's softirq share (INFO)", 18},
	{D9, "goodput far below line rate with the NIC as the bottleneck (only when nothing on the path set the pace)",
		"goodput vs the link speed", 18},
	{D23, "goodput far below a real link's line rate",
		"goodput vs 0.94 × speed (INFO)", 19},
	{Reset, "counters that went backwards during the test (driver reload or device reset): the rules using them were skipped (WARN)",
		"the counters that went backwards", 30},
}

// Rules is the registry: every rule, in the order of their rank.
func Rules() []Rule { return slices.Clone(rules) }

// Lookup is the registry's entry for id.
func Lookup(id ID) (Rule, bool) {
	i := slices.IndexFunc(rules, func(r Rule) bool { return r.ID == id })
	if i < 0 {
		return Rule{}, false
	}
	return rules[i], true
}

// Rank is id's rank in the registry (0 for a rule it does not hold).
func (id ID) Rank() int {
	r, _ := Lookup(id)
	return r.Rank
}

// Compare orders findings as a verdict ranks them: the most serious first,
// then the most likely cause (the link, then the path's causes, then
// symptoms); 0 leaves them in their order (sort stably).
func Compare(a, b Finding) int {
	if a.Severity != b.Severity {
		return int(b.Severity) - int(a.Severity)
	}
	return a.Rule.Rank() - b.Rule.Rank()
}

// Table is the registry as the Markdown table README.md shows.
func Table() string {
	var b strings.Builder
	b.WriteString("| rule | finds | evidence |\n|---|---|---|\n")
	for _, r := range rules {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.ID, r.Title, r.Needs)
	}
	return b.String()
}
