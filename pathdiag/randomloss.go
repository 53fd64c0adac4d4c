package pathdiag

import (
	"fmt"

	"github.com/blastnet/blast/finding"
)

// D30's thresholds.
const (
	// RandomShare: UDP at a lower rate that lost at least this share of
	// TCP's loss lost about as much: the loss does not grow with the
	// rate. (Random loss of p costs TCP about p of its segments, and UDP
	// p of its datagrams.)
	RandomShare = 0.4
	// RandomRun: UDP's lost datagrams came in runs of at most this many
	// on average, as loss at random does (1/(1-p) for a share p: 1.1 at
	// 10%), and a link that errs in short bursts. A queue that a burst
	// overflowed (a sender the host held up catching up, cross traffic)
	// drops every datagram until it drains: runs of tens or hundreds.
	RandomRun = 4.0
)

// pathUDPLoss is a UDP direction's datagrams lost on the path per 100
// sent: those lost, less those the receiver's own socket dropped (a full
// receive buffer, D18's), so that a receiver a busy host held up is no
// loss on the path; -1 when nothing was sent.
func pathUDPLoss(d *Direction) float64 {
	l := udpLossPct(d)
	if l < 0 {
		return l
	}
	if r := d.Receiver; r != nil && r.Path != nil {
		drops := int64(r.Path.Get("Udp.RcvbufErrors") + r.Path.Get("Udp6.RcvbufErrors"))
		l = 100 * float64(max(d.Lost-drops, 0)) / float64(d.Sent)
	}
	return l
}

// D30: random loss between the hosts, in one direction. TCP lost at
// least 1% of its segments that way (D20's WARN), and UDP at a lower rate
// lost at least CleanLoss of its datagrams on the path, and at least
// RandomShare of TCP's share: the loss does not depend on the rate, as a
// policer's or a queue's does (D26), so it is a lossy link or device on
// the way (a bad cable or port, a radio link, a device dropping for its
// own reasons). The loss must have come in short runs (RandomRun), and
// the receiver must have counted them (a blast receiver): loss in long
// runs is a queue that bursts overflowed, whatever the rate, and no
// cable's fault. A shaper or policer on either end is D14's; datagrams the
// receiver's socket dropped are not counted (D18's). TCP that lost
// retransmissions too stalls on its backed-off timer: a stall during
// random loss is its (D27 explained; 2% dropped at random stalled TCP
// 1.0 s with 4 timeouts in the planted-fault trial).
func D30(p Probe) []finding.Finding {
	t := p.TCP
	if t == nil || t.UDP || t.Goodput <= 0 || LossPct(*t) < lossWarn || localLimiter(t) {
		return nil
	}
	loss, clean := LossPct(*t), pathUDPLoss(p.Clean)
	if clean < CleanLoss || clean < RandomShare*loss || p.Clean.Goodput >= t.Goodput {
		return nil
	}
	runs := p.Clean.LossRuns
	if runs <= 0 || float64(p.Clean.Lost) > RandomRun*float64(runs) {
		return nil
	}
	return []finding.Finding{{Rule: finding.D30, Severity: finding.Warn,
		Summary: fmt.Sprintf("random loss in the %s direction: about %.1f%% of packets lost whatever the rate, not a rate limit", p.Name, (loss+clean)/2),
		Evidence: fmt.Sprintf("tcp %s %s with %.1f%% of its segments lost (retransmitted, less what the receiver already had); udp %s at %s, a lower rate: %d of %d datagrams lost, %.2f%% on the path (none counted that the receiver's socket dropped), in %d gaps of %.1f on average (spread, as loss at random is): the loss does not grow with the rate",
			p.Name, bits(t.Goodput), loss, p.Name, bits(p.Clean.Goodput), p.Clean.Lost, p.Clean.Sent, clean, runs, float64(p.Clean.Lost)/float64(runs)),
		Fix: fmt.Sprintf("a link or device in the %s direction drops about %.1f%% of packets at any rate: look for errors on the routers' and switches' ports on the way (CRC errors, discards: ethtool -S, the devices' interface counters), a failing cable or optic, or a radio link; a congestion control that does not read loss as congestion (-C bbr where the kernel has it) keeps TCP's rate through it",
			p.Name, (loss+clean)/2)}}
}
