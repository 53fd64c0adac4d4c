package pathdiag

import (
	"fmt"

	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/units"
)

// D26's thresholds.
const (
	// PolicerLoss: TCP that lost this many segments per 100 in a
	// direction makes doctor probe that direction with UDP for a policer.
	PolicerLoss = 2.0
	// CleanLoss: UDP that lost less than this per 100 passed clean.
	CleanLoss = 0.5
	// OverLoss: UDP offered above the policed rate loses at least this
	// per 100 (what exceeds the rate): below it, the over-rate probe
	// met no limit.
	OverLoss = 5.0
	// PolicerQueueMs: a TCP direction whose smoothed RTT stood this many
	// milliseconds above the path's own built a queue on the way, which
	// a policer alone does not hold (queuedLimit). A busy host inflates the RTT of a path of
	// microseconds to under a millisecond (0.58-0.67 ms in
	// TestLabDoctorPolicer with other tests running); a 200 Mbit/s
	// bottleneck with 50 ms of queue on an 80 ms path stood 17-28 ms.
	PolicerQueueMs = 5.0
)

// Probe is one direction of a path as doctor tested it: TCP, UDP at a
// rate below TCP's goodput (Clean), and UDP offered above it (Over; nil
// when not run).
type Probe struct {
	// Name is the direction in words: "upload" (client to server) or
	// "download".
	Name        string
	TCP         *Direction
	Clean, Over *Direction
	// OverErr is why the probe above TCP's rate failed ("": it ran,
	// or was not run).
	OverErr string
}

// LossPct is the share of a TCP direction's segments that were lost, per
// 100 sent: its retransmissions less those the receiver reports it
// already had (D-SACK on the sender's host); -1 when unknown.
func LossPct(d Direction) float64 {
	if d.UDP || d.Retransmits < 0 || d.SentBytes <= 0 {
		return -1
	}
	mss := d.MSS
	if mss <= 0 {
		mss = 1448
	}
	lost := d.Retransmits
	if s := d.Sender; s != nil && s.Path != nil {
		lost -= min(int64(s.Path.Get("TcpExt.TCPDSACKRecvSegs")), d.Retransmits)
	}
	// A connection that sent little may resend more segments than its
	// byte count holds: all of it was lost.
	return min(100*float64(lost)/(float64(d.SentBytes)/float64(mss)), 100)
}

// QueueMs is how far a TCP direction's mean smoothed RTT stood above the
// path's own (the smallest the kernel measured), in milliseconds: the
// queue the flow built at its bottleneck; -1 when unknown.
func QueueMs(d Direction) float64 {
	if d.UDP || d.RTTus <= 0 || d.MinRTTus <= 0 {
		return -1
	}
	return max(d.RTTus-d.MinRTTus, 0) / 1000
}

// Probable says whether a TCP direction is worth probing for a policer
// between the hosts: it lost at least PolicerLoss of its segments, and
// no shaper or policer on either end (D14's) explains that.
func Probable(d Direction) bool {
	return !d.UDP && d.Goodput > 0 && LossPct(d) >= PolicerLoss && !localLimiter(&d)
}

// hostShort: a UDP sender that sent less than this share of its rate was
// held by its host.
const hostShort = 0.9

// sentRate is what a UDP direction's sender sent in bit/s (its
// datagrams' payload over the test), 0 when unknown.
func sentRate(d *Direction) float64 {
	if d == nil || d.Sent <= 0 || d.Datagram <= 0 || d.Seconds <= 0 {
		return 0
	}
	return 8 * float64(d.Sent) * float64(d.Datagram) / d.Seconds
}

// udpLossPct is a UDP direction's datagrams lost per 100 sent; -1 when
// nothing was sent.
func udpLossPct(d *Direction) float64 {
	if d == nil || !d.UDP || d.Sent <= 0 {
		return -1
	}
	return 100 * float64(d.Lost) / float64(d.Sent)
}

// localLimiter says whether either end holds a shaper or a policer on
// the direction's way: D14 names that one, with its rate.
func localLimiter(d *Direction) bool {
	if s := d.Sender; s != nil && s.Path != nil {
		if len(s.Path.Shapers()) > 0 {
			return true
		}
		for _, p := range s.Path.Policers {
			if p.Direction == "egress" {
				return true
			}
		}
	}
	if r := d.Receiver; r != nil && r.Path != nil {
		for _, p := range r.Path.Policers {
			if p.Direction == "ingress" {
				return true
			}
		}
	}
	return false
}

// D26: a policer between the hosts. A token bucket that drops what
// exceeds its rate costs TCP, which probes past the rate, heavy loss
// (at least 2% of its segments), while UDP sent below the rate passes
// clean (under 0.5% lost): loss that depends on the rate. Random loss
// on the path rules it out (it costs the slow UDP as much), and so does
// UDP offered above TCP's goodput that passes with little loss (no rate
// limit there); a shaper or policer on either end is D14's. The rate:
// what UDP offered above it delivered, when that probe ran, lost what
// exceeded the rate (at least 5%) and its sender kept to its rate;
// otherwise what UDP delivered is a lower bound.
func D26(p Probe) []finding.Finding {
	t := p.TCP
	if t == nil || !Probable(*t) {
		return nil
	}
	loss := LossPct(*t)
	clean := udpLossPct(p.Clean)
	if clean >= CleanLoss {
		return D30(p) // the slow UDP lost too: random loss, or nothing
	}
	if clean < 0 || p.Clean.Goodput <= 0 {
		return nil
	}
	ev := fmt.Sprintf("tcp %s %s with %.1f%% of its segments lost (retransmitted, less what the receiver already had)", p.Name, bits(t.Goodput), loss)
	if q := QueueMs(*t); q >= 0 {
		ev += fmt.Sprintf(", its RTT %.2f ms above the path's %.2f ms", q, float64(t.MinRTTus)/1000)
	}
	ev += fmt.Sprintf("; udp %s at %s: %d of %d datagrams lost (%.2f%%)", p.Name, bits(p.Clean.Goodput), p.Clean.Lost, p.Clean.Sent, clean)
	rate, what := p.Clean.Goodput, "at least"
	if p.OverErr != "" {
		ev += fmt.Sprintf("; udp %s above that rate failed (%s)", p.Name, p.OverErr)
	}
	if o := p.Over; o != nil {
		ol := udpLossPct(o)
		if ol < 0 || o.Goodput <= 0 {
			return nil
		}
		if ol < OverLoss {
			return nil // UDP above TCP's rate passed: no rate limit there
		}
		ev += fmt.Sprintf("; udp %s offered at %s: %.0f%% lost, %s delivered", p.Name, bits(o.Rate), ol, bits(o.Goodput))
		sent := sentRate(o)
		switch {
		case sent > 0 && sent < hostShort*o.Rate:
			// A UDP sender does not slow for loss: one that fell
			// short was held by its host, and the policer's rate may
			// have gone unused while it waited.
			ev += fmt.Sprintf(" (the sender sent only %s of it: a busy host)", bits(sent))
			rate = max(rate, o.Goodput)
		case o.Goodput >= p.Clean.Goodput:
			rate, what = o.Goodput, "about"
		}
	}
	if what == "at least" && t.Goodput > rate {
		// TCP's own goodput went through the limit too.
		rate = t.Goodput
	}
	ev += "; the loss grows with the rate: "
	q, limiter := QueueMs(*t), "the policer"
	if q >= PolicerQueueMs {
		limiter = "the limit"
	}
	if what == "about" {
		ev += fmt.Sprintf("%s passes about %s (what UDP offered above it delivered)", limiter, bits(rate))
	} else {
		ev += fmt.Sprintf("%s passes at least %s (what UDP or TCP delivered; a lower bound)", limiter, bits(rate))
	}
	pace := 0.95 * rate
	if what == "at least" {
		pace = rate
	}
	if q >= PolicerQueueMs {
		return []finding.Finding{queuedLimit(p.Name, what, rate, pace, loss, q, t, ev)}
	}
	return []finding.Finding{{Rule: finding.D26, Severity: finding.Warn,
		Summary:  fmt.Sprintf("a policer (or a lossy token bucket) in the %s direction, passing %s %s: TCP loses %.1f%% to it while UDP below that rate passes clean", p.Name, what, bits(rate), loss),
		Evidence: ev,
		Fix: fmt.Sprintf("a device between the hosts drops what exceeds %s %s in the %s direction (a tc police action, a router's or a provider's rate limit): find it (tc -s filter show on the routers on the way); if it is meant, pace the sender below it (blast client -b %s) or shape to it at the sender (a tbf or htb at %s), which TCP follows without loss",
			what, bits(rate), p.Name, rateFlag(pace), bits(pace))}}
}

// queuedLimit is D26's finding when the lossy direction's TCP built a
// queue on the way (PolicerQueueMs or more): the loss still grows with
// the rate, but a queue stood there. That fits a shaper or a slower link
// whose queue is shorter than the window TCP brings (TCP overflows it),
// and as well a policer behind a faster link's queue (measured: a
// queue-less 100 Mbit/s token bucket behind a 200 Mbit/s line's 50 ms
// queue on a 40 ms path left TCP 12.3 ms above the path's RTT; the line
// alone on an 80 ms path, 17-28 ms). The finding names the rate, both
// causes and the test that tells them apart; the numbers in its fix come
// from the rate and the path's round trip.
func queuedLimit(name, what string, rate, pace, loss, queueMs float64, t *Direction, ev string) finding.Finding {
	rttMs := float64(t.MinRTTus) / 1000
	bdp := int64(rate / 8 * rttMs / 1000)
	ev += fmt.Sprintf("; TCP's RTT stood %.1f ms above the path's %.1f ms: a queue on the way, which a policer alone does not hold", queueMs, rttMs)
	return finding.Finding{Rule: finding.D26, Severity: finding.Warn,
		Summary: fmt.Sprintf("a rate limit in the %s direction, passing %s %s, that TCP overflows behind a queue: TCP loses %.1f%% there and gets %s (a shaper or a slower link with a queue shorter than TCP's window, or a policer behind a queue)",
			name, what, bits(rate), loss, bits(t.Goodput)),
		Evidence: ev,
		Fix: fmt.Sprintf("find what limits the %s direction to %s %s; to tell the two apart, watch the round trip (blast lat) while UDP runs just above that rate (blast client -u -b %s): a shaper's queue adds its depth to the round trip, a policer adds nothing. A queue that is yours to size needs rate × RTT = %s × %.1f ms = %s; either way, pacing the sender below the rate (blast client -b %s, or --fq-rate) or a congestion control that paces (-C bbr where the kernel has it) avoids the loss",
			name, what, bits(rate), rateFlag(1.05*rate), bits(rate), rttMs, bytesWords(bdp), rateFlag(pace))}
}

// rateFlag is a rate as -b takes it, rounded down to 3 significant
// digits: units.RateFlagBelow.
func rateFlag(bps float64) string { return units.RateFlagBelow(bps) }
