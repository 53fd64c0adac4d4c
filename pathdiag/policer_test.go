package pathdiag

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/pathinfo"
)

// D26 names a policer between the hosts when TCP loses heavily and UDP
// below its rate passes clean; random loss (the slow UDP loses too) and
// an over-rate UDP that passes (no limit) rule it out.
func TestD26(t *testing.T) {
	// 1 s of TCP at 80 Mbit/s, 10 MB in 6906 segments, 690 resent: 10%.
	tcp := &Direction{Seconds: 1, Goodput: 80e6, SentBytes: 10e6, Retransmits: 690, MSS: 1448}
	udp := func(rate, goodput float64, sent, lost int64) *Direction {
		return &Direction{UDP: true, Seconds: 1, Rate: rate, Goodput: goodput, Sent: sent, Lost: lost, Datagram: 1472}
	}
	clean := udp(72e6, 72e6, 6114, 0)
	over := udp(200e6, 99.2e6, 16985, 8560)
	shaped := *tcp
	shaped.Sender = &End{Path: &pathinfo.Delta{Iface: "a0", Qdiscs: []pathinfo.Qdisc{{Kind: "tbf", Handle: "8001:", RateBps: 100e6}}}}
	for _, tc := range []struct {
		name string
		p    Probe
		want []string
	}{
		{"policer, rate from the over-rate probe", Probe{Name: "upload", TCP: tcp, Clean: clean, Over: over}, []string{"WARN D26"}},
		{"policer, lower bound only", Probe{Name: "download", TCP: tcp, Clean: clean}, []string{"WARN D26"}},
		{"policer, the over-rate probe failed", Probe{Name: "upload", TCP: tcp, Clean: clean, OverErr: "server error: unable to receive parameters from client"}, []string{"WARN D26"}},
		{"random loss: the slow UDP loses too", Probe{Name: "upload", TCP: tcp, Clean: udp(72e6, 70.5e6, 6114, 122), Over: over}, nil},
		{"no limit above TCP's rate", Probe{Name: "upload", TCP: tcp, Clean: clean, Over: udp(200e6, 199e6, 16985, 20)}, nil},
		{"TCP lost little", Probe{Name: "upload", TCP: &Direction{Goodput: 80e6, SentBytes: 10e6, Retransmits: 60, MSS: 1448}, Clean: clean, Over: over}, nil},
		{"a shaper on the sender is D14's", Probe{Name: "upload", TCP: &shaped, Clean: clean, Over: over}, nil},
		{"no UDP in that direction", Probe{Name: "download", TCP: tcp}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, rulesOf(D26(tc.p))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// Every number in D26's finding comes from the probes: the rate is what
// UDP offered above it delivered, and the fix paces below it.
func TestD26Words(t *testing.T) {
	tcp := &Direction{Seconds: 1, Goodput: 80e6, SentBytes: 10e6, Retransmits: 690, MSS: 1448}
	fs := D26(Probe{Name: "upload", TCP: tcp,
		Clean: &Direction{UDP: true, Rate: 72e6, Goodput: 72e6, Sent: 6114},
		Over:  &Direction{UDP: true, Rate: 200e6, Goodput: 99.2e6, Sent: 16985, Lost: 8560}})
	want := []finding.Finding{{Rule: "D26", Severity: finding.Warn,
		Summary:  "a policer (or a lossy token bucket) in the upload direction, passing about 99.2 Mbit/s: TCP loses 10.0% to it while UDP below that rate passes clean",
		Evidence: "tcp upload 80.0 Mbit/s with 10.0% of its segments lost (retransmitted, less what the receiver already had); udp upload at 72.0 Mbit/s: 0 of 6114 datagrams lost (0.00%); udp upload offered at 200 Mbit/s: 50% lost, 99.2 Mbit/s delivered; the loss grows with the rate: the policer passes about 99.2 Mbit/s (what UDP offered above it delivered)",
		Fix:      "a device between the hosts drops what exceeds about 99.2 Mbit/s in the upload direction (a tc police action, a router's or a provider's rate limit): find it (tc -s filter show on the routers on the way); if it is meant, pace the sender below it (blast client -b 94.2M) or shape to it at the sender (a tbf or htb at 94.2 Mbit/s), which TCP follows without loss"}}
	if diff := cmp.Diff(want, fs); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if strings.Contains(fs[0].Summary+fs[0].Evidence+fs[0].Fix, "duplex") {
		t.Errorf("D26 speaks of duplex: %s", fs[0])
	}
}

// A policer explains the asymmetry (D7 at WARN) and the loss (D20) it
// makes: the merge names it alone, and first.
func TestMergePolicer(t *testing.T) {
	fs := Merge(
		[]finding.Finding{{Rule: "D20", Severity: finding.Warn, Iface: "a"}, {Rule: "D21", Severity: finding.Info, Iface: "b"}},
		[]finding.Finding{{Rule: "D7", Severity: finding.Warn, Summary: "asymmetric path"}},
		[]finding.Finding{{Rule: "D26", Severity: finding.Warn, Summary: "a policer"}},
	)
	if diff := cmp.Diff([]string{"WARN D26", "INFO D21"}, rulesOf(fs)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// A UDP sender that fell short of its rate was held by its host, and the
// policer's rate may have gone unused meanwhile: what passed is a lower
// bound, said so, never "about".
func TestD26BusySender(t *testing.T) {
	tcp := &Direction{Seconds: 2, Goodput: 98e6, SentBytes: 25e6, Retransmits: 4389, MSS: 1448}
	fs := D26(Probe{Name: "upload", TCP: tcp,
		Clean: &Direction{UDP: true, Seconds: 2, Rate: 78.4e6, Goodput: 68.4e6, Sent: 11678, Datagram: 1472},
		// 35397 datagrams in 2.57 s: 162 Mbit/s of the 245 offered.
		Over: &Direction{UDP: true, Seconds: 2.57, Rate: 245e6, Goodput: 68.8e6, Sent: 35397, Lost: 20378, Datagram: 1472}})
	if len(fs) != 1 {
		t.Fatalf("got %v, want one D26", fs)
	}
	// TCP's 98 Mbit/s went through it too: the better bound.
	for _, want := range []string{"passing at least 98.0 Mbit/s", "(the sender sent only 162 Mbit/s of it: a busy host)", "a lower bound"} {
		if !strings.Contains(fs[0].Summary+" "+fs[0].Evidence, want) {
			t.Errorf("no %q in %s", want, fs[0])
		}
	}
}

// The same loss pattern behind a queue (TCP's RTT 17.4 ms above an 80 ms
// path, as a 200 Mbit/s line with 50 ms of queue makes): a policer alone
// holds no queue, so the finding names the rate limit, both causes it
// fits and the test that tells them apart, with the numbers from the
// probes.
func TestD26Queued(t *testing.T) {
	tcp := &Direction{Seconds: 3, Goodput: 111.2e6, SentBytes: 45e6, Retransmits: 3800, MSS: 1448, RTTus: 97_430, MinRTTus: 80_000}
	fs := D26(Probe{Name: "upload", TCP: tcp,
		Clean: &Direction{UDP: true, Rate: 19.5e6, Goodput: 19.5e6, Sent: 5096},
		Over:  &Direction{UDP: true, Rate: 278e6, Goodput: 190e6, Sent: 70000, Lost: 22000}})
	want := []finding.Finding{{Rule: "D26", Severity: finding.Warn,
		Summary:  "a rate limit in the upload direction, passing about 190 Mbit/s, that TCP overflows behind a queue: TCP loses 12.2% there and gets 111 Mbit/s (a shaper or a slower link with a queue shorter than TCP's window, or a policer behind a queue)",
		Evidence: "tcp upload 111 Mbit/s with 12.2% of its segments lost (retransmitted, less what the receiver already had), its RTT 17.43 ms above the path's 80.00 ms; udp upload at 19.5 Mbit/s: 0 of 5096 datagrams lost (0.00%); udp upload offered at 278 Mbit/s: 31% lost, 190 Mbit/s delivered; the loss grows with the rate: the limit passes about 190 Mbit/s (what UDP offered above it delivered); TCP's RTT stood 17.4 ms above the path's 80.0 ms: a queue on the way, which a policer alone does not hold",
		Fix:      "find what limits the upload direction to about 190 Mbit/s; to tell the two apart, watch the round trip (blast lat) while UDP runs just above that rate (blast client -u -b 199M): a shaper's queue adds its depth to the round trip, a policer adds nothing. A queue that is yours to size needs rate × RTT = 190 Mbit/s × 80.0 ms = 1.8 MiB; either way, pacing the sender below the rate (blast client -b 180M, or --fq-rate) or a congestion control that paces (-C bbr where the kernel has it) avoids the loss"}}
	if diff := cmp.Diff(want, fs); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// Under PolicerQueueMs of queue (a busy host's inflation of a path
	// of microseconds), it is the policer.
	tcp.RTTus, tcp.MinRTTus = 620, 3
	if fs := D26(Probe{Name: "upload", TCP: tcp, Clean: &Direction{UDP: true, Rate: 19.5e6, Goodput: 19.5e6, Sent: 5096},
		Over: &Direction{UDP: true, Rate: 278e6, Goodput: 190e6, Sent: 70000, Lost: 22000}}); len(fs) != 1 || !strings.HasPrefix(fs[0].Summary, "a policer") {
		t.Errorf("0.6 ms of queue: %v, want the policer", fs)
	}
}

// Random loss: the slow UDP loses about as much as TCP (2.0% and 2.2%,
// the trial's 2% dropped at random one way), and its receiver's socket
// dropped none: D30, not a policer, with both figures; a receiver whose
// socket dropped the UDP's losses gets nothing, and UDP that lost far
// less than TCP (a queue's loss, rate-dependent) neither; nor UDP whose
// loss came in long runs (a queue a burst overflowed), or whose receiver
// did not count its runs.
func TestD30(t *testing.T) {
	tcp := &Direction{Seconds: 2, Goodput: 4.08e9, SentBytes: 1020e6, Retransmits: 15538, MSS: 1448}
	udp := func(lost int64, drops uint64) *Direction {
		// 2% lost at random: 2% of the runs are two or more long.
		d := &Direction{UDP: true, Seconds: 2, Rate: 400e6, Goodput: 392e6, Sent: 83557, Lost: lost, LossRuns: lost - lost/50, Datagram: 1472}
		if drops > 0 {
			d.Receiver = &End{Path: &pathinfo.Delta{SNMP: map[string]uint64{"Udp.RcvbufErrors": drops}}}
		}
		return d
	}
	fs := D26(Probe{Name: "upload", TCP: tcp, Clean: udp(1662, 0)})
	want := []finding.Finding{{Rule: "D30", Severity: finding.Warn,
		Summary:  "random loss in the upload direction: about 2.1% of packets lost whatever the rate, not a rate limit",
		Evidence: "tcp upload 4.08 Gbit/s with 2.2% of its segments lost (retransmitted, less what the receiver already had); udp upload at 392 Mbit/s, a lower rate: 1662 of 83557 datagrams lost, 1.99% on the path (none counted that the receiver's socket dropped), in 1629 gaps of 1.0 on average (spread, as loss at random is): the loss does not grow with the rate",
		Fix:      "a link or device in the upload direction drops about 2.1% of packets at any rate: look for errors on the routers' and switches' ports on the way (CRC errors, discards: ethtool -S, the devices' interface counters), a failing cable or optic, or a radio link; a congestion control that does not read loss as congestion (-C bbr where the kernel has it) keeps TCP's rate through it"}}
	if diff := cmp.Diff(want, fs); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if fs := D30(Probe{Name: "upload", TCP: tcp, Clean: udp(1662, 1662)}); fs != nil {
		t.Errorf("the receiver's socket dropped them all: %v", fs)
	}
	if fs := D30(Probe{Name: "upload", TCP: tcp, Clean: udp(500, 0)}); fs != nil {
		t.Errorf("UDP lost 0.6%% against TCP's 2.2%%: %v", fs)
	}
	// The same count lost in 7 runs (a sender held up that caught up in
	// bursts a queue could not hold), in 395 (4.2 each), or with no runs
	// counted (an iperf3 receiver): no cause named.
	for _, runs := range []int64{7, 395, 0} {
		c := udp(1662, 0)
		c.LossRuns = runs
		if fs := D26(Probe{Name: "upload", TCP: tcp, Clean: c}); fs != nil {
			t.Errorf("1662 lost in %d runs: %v, want none", runs, fs)
		}
	}
	// Runs of 4 on average: a link that errs in short bursts.
	bursts := udp(1662, 0)
	bursts.LossRuns = 416
	if fs := D30(Probe{Name: "upload", TCP: tcp, Clean: bursts}); len(fs) != 1 {
		t.Errorf("1662 lost in 416 runs: %v, want D30", fs)
	}
	if got := rulesOf(Merge([]finding.Finding{{Rule: "D7", Severity: finding.Warn}, {Rule: "D20", Severity: finding.Warn}, {Rule: "D27", Severity: finding.Warn}}, fs)); !cmp.Equal(got, []string{"WARN D30"}) {
		t.Errorf("merged: %v, want D30 alone (it explains D7, D20 and the stall of D27)", got)
	}
	// 1.9% lost (under D26's probe) with the UDP upload's 2.0%: D30 too.
	tcp.Retransmits = 13_400
	if fs := D30(Probe{Name: "upload", TCP: tcp, Clean: udp(1662, 0)}); len(fs) != 1 {
		t.Errorf("TCP 1.9%%, UDP 2.0%%: %v, want D30", fs)
	}
	// Under 1% of TCP's segments lost is no warning (D20's bound).
	tcp.Retransmits = 5_000
	if fs := D30(Probe{Name: "upload", TCP: tcp, Clean: udp(1662, 0)}); fs != nil {
		t.Errorf("TCP 0.7%%: %v, want none", fs)
	}
}

// TCP that lost 1.24% where it filled a queue (its RTT 14 ms above a
// 20 ms path, as through a 200 Mbit/s line with 50 ms of queue) found its
// rate by congestion: D20 is an INFO saying so. The same loss with no
// queue is a WARN, and so is more than PolicerLoss behind the queue (for
// doctor's probes to place).
func TestD20Congestion(t *testing.T) {
	d := Direction{Seconds: 3, Goodput: 172.5e6, SentBytes: 65e6, Retransmits: 559, MSS: 1448, RTTus: 34_000, MinRTTus: 20_000}
	fs := D20(d)
	if len(fs) != 1 || fs[0].Severity != finding.Info || !strings.HasPrefix(fs[0].Summary, "TCP lost a little where it filled a queue") ||
		!strings.Contains(fs[0].Evidence, "its RTT stood 14.0 ms above the path's 20.0 ms") {
		t.Errorf("behind a queue: %v", fs)
	}
	d.RTTus = 20_500
	if fs := D20(d); len(fs) != 1 || fs[0].Severity != finding.Warn {
		t.Errorf("no queue: %v, want WARN", fs)
	}
	// No standing queue on average, but 400 of the 559 resent in slow
	// start: TCP's overshoot, an INFO.
	d.Sender = &End{Path: &pathinfo.Delta{SNMP: map[string]uint64{"TcpExt.TCPSlowStartRetrans": 400}}}
	if fs := D20(d); len(fs) != 1 || fs[0].Severity != finding.Info || !strings.Contains(fs[0].Evidence, "400 of the retransmissions in slow start") {
		t.Errorf("slow start's overshoot: %v, want INFO", fs)
	}
	d.Sender = nil
	d.RTTus, d.Retransmits = 34_000, 1500
	if fs := D20(d); len(fs) != 1 || fs[0].Severity != finding.Warn {
		t.Errorf("3.3%% lost behind a queue: %v, want WARN", fs)
	}
}

// A flow that stalled to its end on a path-MTU black hole (D17, or D29 at
// ERROR) met the hole, not an outage: small packets passed.
func TestMergeStallOnBlackHole(t *testing.T) {
	for _, hole := range []finding.ID{finding.D17, finding.D29} {
		got := rulesOf(Merge([]finding.Finding{{Rule: hole, Severity: finding.Error}, {Rule: "D27", Severity: finding.Warn}}))
		if !cmp.Equal(got, []string{"ERROR " + string(hole)}) {
			t.Errorf("%s and D27: %v, want %s alone", hole, got, hole)
		}
	}
}
