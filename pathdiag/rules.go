package pathdiag

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/units"
)

// Thresholds. Goodput counts payload only: TCP over Ethernet carries about
// 94% of the line rate (1448 of 1538 bytes on the wire per full frame).
const (
	lineRateShare = 0.94
	// atShaper: goodput at or above this share of a shaper's rate means
	// the shaper set the pace (a shaper counts frames, goodput payload).
	atShaper = 0.75
	// windowShare: goodput at or above this share of window/RTT means the
	// window set the pace.
	windowShare = 0.7
	// busyCPU: a process at this share of one core per stream is CPU-bound.
	busyCPU = 90
	// lossWarn: retransmits or lost datagrams per 100 that earn a warning.
	lossWarn = 1.0
	// smallRead: a receive buffer below this (ttcp's default, 8 KiB) is
	// small enough to be the limit when every read fills it.
	smallRead = 8192
)

// D14: a shaper or a policer on the path, and whether it set the pace.
func D14(d Direction) []finding.Finding {
	type limiter struct {
		what, iface string
		rate        uint64
		drops       uint64
		overlimits  uint64
	}
	var ls []limiter
	if s := d.Sender; s != nil && s.Path != nil {
		for _, q := range s.Path.Shapers() {
			// An htb class may borrow up to its ceil.
			rate := max(q.RateBps, q.CeilBps)
			what := q.Kind + " " + q.Handle
			if q.Class {
				what = q.Kind + " class " + q.Handle
			}
			ls = append(ls, limiter{what, s.Path.Iface, rate, q.Drops, q.Overlimits})
		}
		for _, p := range s.Path.Policers {
			if p.Direction == "egress" && p.RateBps > 0 {
				ls = append(ls, limiter{"an egress policer", s.Path.Iface, p.RateBps, 0, p.Overlimits})
			}
		}
	}
	if r := d.Receiver; r != nil && r.Path != nil {
		for _, p := range r.Path.Policers {
			if p.Direction == "ingress" && p.RateBps > 0 {
				ls = append(ls, limiter{"an ingress policer", r.Path.Iface, p.RateBps, 0, p.Overlimits})
			}
		}
	}
	if len(ls) == 0 {
		return nil
	}
	n := ls[0]
	for _, l := range ls[1:] {
		if l.rate < n.rate {
			n = l
		}
	}
	ev := fmt.Sprintf("%s on %s shapes to %s; goodput %s (%.0f%% of it)", n.what, n.iface, bits(float64(n.rate)), bits(d.Goodput), 100*d.Goodput/float64(n.rate))
	ev += fmt.Sprintf(", %d over its limit and %d dropped during the test", n.overlimits, n.drops)
	own := d.Rate > 0 && d.Rate <= 1.05*float64(n.rate)
	if own || d.Goodput < atShaper*float64(n.rate) || d.Goodput > 1.1*float64(n.rate) {
		why := "it did not set the pace of this test"
		if own {
			why = "the sender's own -b was at or below its rate"
		}
		return []finding.Finding{{Rule: finding.D14, Severity: finding.Info, Iface: n.iface,
			Summary:  "a rate limit on the path (" + why + ")",
			Evidence: ev,
			Fix:      "none needed for this test; a faster test will stop at " + bits(float64(n.rate))}}
	}
	return []finding.Finding{{Rule: finding.D14, Severity: finding.Warn, Iface: n.iface,
		Summary:  "the shaper, not the link, is the bottleneck: goodput sits at its rate",
		Evidence: ev,
		Fix:      "if the limit is not intended, remove it (tc qdisc show dev " + n.iface + "; tc qdisc del dev " + n.iface + " root, or the filter's police action); otherwise this is the expected rate"}}
}

// D15: TCP whose pace is the peer's advertised window over the round
// trip. A window that binds keeps the path's queues empty, so the RTT it
// divides by is the path's own, the smallest the kernel measured
// (tcpi_min_rtt): a goodput near the window over the smoothed RTT alone
// holds for any flow (what is in flight over the RTT), a CPU-bound one
// included, whose smoothed RTT a busy host inflates 20 to 200 times.
func D15(d Direction) []finding.Finding {
	if d.UDP || d.RTTus <= 0 || d.MinRTTus <= 0 || d.MaxWnd <= 0 || d.Goodput <= 0 {
		return nil
	}
	rtt := d.MinRTTus / 1e6
	limit := 8 * float64(d.MaxWnd) / rtt
	// The window binds when congestion control would have sent more.
	if d.MaxCwnd > 0 && d.MaxCwnd < d.MaxWnd {
		return nil
	}
	if d.Goodput < windowShare*limit {
		return nil
	}
	// A window moves at most window / RTT: a goodput over 10% above that
	// says the RTT the samples saw was not the data's (a busy host's
	// late ACKs inflate it), and the evidence claims nothing.
	if d.Goodput > 1.1*8*float64(d.MaxWnd)/(d.RTTus/1e6) {
		return nil
	}
	ev := fmt.Sprintf("goodput %s, window %s / RTT %s (the path's smallest; smoothed %s) = %s", bits(d.Goodput), bytesWords(d.MaxWnd), usWords(d.MinRTTus), usWords(d.RTTus), bits(limit))
	if d.BusyUs > 0 {
		ev += fmt.Sprintf("; with data in flight, the sender could send no more for %.0f%% of the time because the receiver's window was full and %.0f%% because its own send buffer was (tcpi_rwnd_limited, tcpi_sndbuf_limited)",
			100*float64(d.RwndLimitedUs)/float64(d.BusyUs), 100*float64(d.SndbufLimitedUs)/float64(d.BusyUs))
	}
	target, what := 10*d.Goodput, "10 times this rate"
	if s := speedBps(d.Sender); s > 0 && s > d.Goodput {
		target, what = lineRateShare*s, "the link's line rate"
	}
	bdp := int64(target * rtt / 8)
	ev += fmt.Sprintf("; the bandwidth-delay product at %s (%s) is %s", what, bits(target), bytesWords(bdp))
	var bufs []string
	if r := d.Receiver; r != nil && r.RcvBuf > 0 {
		bufs = append(bufs, "receiver SO_RCVBUF "+bytesWords(int64(r.RcvBuf)))
	}
	if s := d.Sender; s != nil && s.SndBuf > 0 {
		bufs = append(bufs, "sender SO_SNDBUF "+bytesWords(int64(s.SndBuf)))
	}
	if len(bufs) > 0 {
		ev += "; granted " + strings.Join(bufs, ", ")
	}
	var sys []string
	for _, e := range []*End{d.Receiver, d.Sender} {
		if e == nil {
			continue
		}
		for _, k := range []string{"net.core.rmem_max", "net.ipv4.tcp_rmem", "net.core.wmem_max", "net.ipv4.tcp_wmem"} {
			if v := e.Sysctls[k]; v != "" {
				sys = append(sys, e.Name+" "+k+"="+strings.Join(strings.Fields(v), " "))
			}
		}
	}
	if len(sys) > 0 {
		ev += "; " + strings.Join(sys, ", ")
	}
	asked := d.Receiver != nil && d.Receiver.BufAsked > 0 || d.Sender != nil && d.Sender.BufAsked > 0
	fix := fmt.Sprintf("a window of at least %s: ", bytesWords(bdp))
	if asked {
		fix += fmt.Sprintf("-w %s (it was asked smaller), ", sizeFlag(bdp))
	} else {
		fix += "autotuning stopped short: "
	}
	fix += fmt.Sprintf("raise net.core.rmem_max and net.core.wmem_max to %d and the last field of net.ipv4.tcp_rmem and tcp_wmem to %d on both ends; or more streams (-P)", 2*bdp, 2*bdp)
	return []finding.Finding{{Rule: finding.D15, Severity: finding.Warn,
		Summary:  "window-limited: the TCP window over the round trip, not the path, sets the rate",
		Evidence: ev, Fix: fix}}
}

// D16: an MTU that does not fit: the two ends of a link disagree, or UDP
// datagrams are larger than the path carries.
func D16(d Direction) []finding.Finding {
	sm, rm := mtu(d.Sender), mtu(d.Receiver)
	var out []finding.Finding
	if d.UDP && d.Datagram > 0 && d.Sent > 0 {
		path := 0
		for _, m := range []int{sm, rm, d.PMTU} {
			if m > 0 && (path == 0 || m < path) {
				path = m
			}
		}
		frame := d.Datagram + 8 + 20 // UDP and IPv4 headers
		lost := float64(d.Lost) / float64(d.Sent)
		if path > 0 && frame > path {
			ev := fmt.Sprintf("%d-byte datagrams make %d-byte packets; MTU sender %s, receiver %s; %d of %d datagrams lost (%.0f%%)",
				d.Datagram, frame, mtuWords(sm), mtuWords(rm), d.Lost, d.Sent, 100*lost)
			if s := d.Sender; s != nil && s.NIC != nil && s.NIC.Delta != nil {
				if v := s.NIC.Delta.Counters["tx_dropped"]; v > 0 {
					ev += fmt.Sprintf("; sender tx_dropped +%d", v)
				}
			}
			sev, summary := finding.Error, "datagrams larger than the path's MTU are lost"
			if d.Lost == 0 {
				// Through a veth, a GSO train passes whatever the MTU
				// on the far side: a real link drops them.
				sev, summary = finding.Warn, "datagrams larger than the path's MTU (none lost here, but a link that checks the MTU drops them)"
			}
			if s := d.Sender; s != nil && s.Path != nil {
				if n := s.Path.Get("Udp.SndbufErrors") + s.Path.Get("Udp6.SndbufErrors"); n > 0 {
					ev += fmt.Sprintf("; %d sends refused on the sender (SndbufErrors)", n)
				}
			}
			out = append(out, finding.Finding{Rule: finding.D16, Severity: sev, Iface: iface(d.Sender),
				Summary:  summary,
				Evidence: ev,
				Fix:      fmt.Sprintf("send datagrams of at most %d bytes (-l %d), or set the same MTU on both ends of every link (ip link set dev IFACE mtu N)", path-28, path-28)})
		}
	}
	if sm > 0 && rm > 0 && sm != rm && len(out) == 0 && sameLink(d) {
		out = append(out, finding.Finding{Rule: finding.D16, Severity: finding.Warn, Iface: iface(d.Sender),
			Summary:  "the two ends of the link have different MTUs",
			Evidence: fmt.Sprintf("MTU %d on the sender's %s, %d on the receiver's %s", sm, iface(d.Sender), rm, iface(d.Receiver)),
			Fix:      fmt.Sprintf("set one MTU on both ends (ip link set dev IFACE mtu %d): frames over %d bytes from the larger side are dropped, and only TCP's MSS hides it", min(sm, rm), min(sm, rm))})
	}
	return out
}

// D17: TCP that connected (small packets pass) but barely moved data while
// retransmitting: full-size segments vanish on the way, and no ICMP
// "fragmentation needed" came back: a path-MTU black hole.
func D17(d Direction) []finding.Finding {
	if d.UDP || d.Retransmits < 3 || d.Seconds <= 0 {
		return nil
	}
	mss := d.MSS
	if mss == 0 && d.PMTU > 0 {
		mss = d.PMTU - 40
	}
	if mss > 0 && mss <= 1240 {
		return nil // already small: no smaller MTU explains the loss
	}
	if d.Goodput > 1e6 || d.ReceivedBytes > 1<<20 {
		return nil
	}
	if s := d.Sender; s != nil && s.Path != nil {
		for _, q := range s.Path.Qdiscs {
			if q.Drops > 0 {
				return nil // lost in the sender's own queue: D19
			}
		}
	}
	ev := fmt.Sprintf("the connection was made, then %s arrived in %.1f s with %d retransmissions", bytesWords(d.ReceivedBytes), d.Seconds, d.Retransmits)
	if mss > 0 {
		ev += fmt.Sprintf("; segments of %d bytes (path MTU %d as this host knows it)", mss, d.PMTU)
	}
	if s := d.Sender; s != nil && s.Path != nil {
		if t := s.Path.Get("TcpExt.TCPTimeouts"); t > 0 {
			ev += fmt.Sprintf("; %d retransmission timeouts", t)
		}
	}
	probing := ""
	if s := d.Sender; s != nil {
		if v := s.Sysctls["net.ipv4.tcp_mtu_probing"]; v != "" {
			probing = " (now " + v + ")"
		}
	}
	return []finding.Finding{{Rule: finding.D17, Severity: finding.Error, Iface: iface(d.Sender),
		Summary:  "suspected path-MTU black hole: full-size segments are lost after the handshake",
		Evidence: ev,
		Fix:      "a hop with a smaller MTU drops large packets and its ICMP 'fragmentation needed' does not come back: find it with tracepath, let ICMP type 3 code 4 (ICMPv6 type 2) through, or set net.ipv4.tcp_mtu_probing=1" + probing + " on the sender, or lower the MTU"}}
}

// D18: data dropped because a socket buffer was full.
func D18(d Direction) []finding.Finding {
	var out []finding.Finding
	if r := d.Receiver; r != nil && r.Path != nil {
		if d.UDP {
			n := r.Path.Get("Udp.RcvbufErrors") + r.Path.Get("Udp6.RcvbufErrors")
			if n > 0 {
				ev := fmt.Sprintf("%d datagrams dropped in full receive buffers on the receiver (RcvbufErrors; with GRO one can be many)", n)
				if d.Sent > 0 {
					ev += fmt.Sprintf(", %d lost of %d sent", d.Lost, d.Sent)
				}
				if r.RcvBuf > 0 {
					ev += "; SO_RCVBUF " + bytesWords(int64(r.RcvBuf))
				}
				if v := r.Sysctls["net.core.rmem_max"]; v != "" {
					ev += "; net.core.rmem_max=" + v
				}
				out = append(out, finding.Finding{Rule: finding.D18, Severity: finding.Warn, Iface: iface(r),
					Summary:  "the receiving socket's buffer overflowed: the receiver did not read fast enough",
					Evidence: ev,
					Fix:      "a larger receive buffer (-w 4M; raise net.core.rmem_max to match), a batching backend (--backend mmsg, gro), or a lower -b"})
			}
		} else {
			n := r.Path.Get("TcpExt.TCPRcvQDrop") + r.Path.Get("TcpExt.TCPBacklogDrop")
			if n > 0 {
				out = append(out, finding.Finding{Rule: finding.D18, Severity: finding.Warn, Iface: iface(r),
					Summary:  "TCP segments dropped on the receiver because the socket's queue was full",
					Evidence: fmt.Sprintf("TCPRcvQDrop + TCPBacklogDrop +%d on the receiver", n),
					Fix:      "a larger receive buffer (-w; net.core.rmem_max), or a receiver that reads faster (larger -l)"})
			}
		}
	}
	if s := d.Sender; s != nil && s.Path != nil && d.UDP {
		if n := s.Path.Get("Udp.SndbufErrors") + s.Path.Get("Udp6.SndbufErrors"); n > 0 {
			out = append(out, finding.Finding{Rule: finding.D18, Severity: finding.Info, Iface: iface(s),
				Summary:  "the sending socket's buffer was full at times (the sender waited and sent again)",
				Evidence: fmt.Sprintf("%d sends refused for a full send buffer (SndbufErrors) on the sender", n),
				Fix:      "none needed: blast retries; a larger -w smooths it"})
		}
	}
	return out
}

// D19: the sender's egress queue dropped packets: a warning from 1% of
// what it handled (a queue in front of a shaper drops now and then as TCP
// probes for more; a shallow one drops bursts).
func D19(d Direction) []finding.Finding {
	s := d.Sender
	if s == nil || s.Path == nil {
		return nil
	}
	var drops, sent uint64
	var where []string
	for _, q := range s.Path.Qdiscs {
		if q.Class {
			continue
		}
		sent += q.SentPackets
		if q.Drops > 0 {
			drops += q.Drops
			w := fmt.Sprintf("%s %s %d", q.Kind, q.Handle, q.Drops)
			if q.LimitBytes > 0 {
				w += fmt.Sprintf(" (queue limit %s)", bytesWords(int64(q.LimitBytes)))
			} else if q.LimitPackets > 0 {
				w += fmt.Sprintf(" (queue limit %d packets)", q.LimitPackets)
			}
			where = append(where, w)
		}
	}
	if drops == 0 {
		return nil
	}
	// A UDP send the queue refused fails with ENOBUFS, and a blast
	// sender waits for room and sends it again: a drop, and no loss.
	if d.UDP && d.Resent > 0 && int64(drops) <= d.Resent {
		return []finding.Finding{{Rule: finding.D19, Severity: finding.Info, Iface: s.Path.Iface,
			Summary: "the sender's egress queue was full: the sender waited for room and lost nothing there",
			Evidence: fmt.Sprintf("%d packets refused by the sender's qdiscs on %s: %s; the sender had %d sends refused (ENOBUFS), sent each again and waited %v in all",
				drops, s.Path.Iface, strings.Join(where, ", "), d.Resent, d.ResentWait.Round(time.Millisecond)),
			Fix: "none needed; a sender at the queue's rate (-b) would not wait"}}
	}
	lost := drops
	if d.UDP && d.Resent > 0 {
		lost -= uint64(d.Resent)
		// A refused train of datagrams (GSO) is one refusal and many
		// drops: what is lost there is no more than the receiver lost.
		if d.Sent > 0 && d.Lost >= 0 {
			lost = min(lost, uint64(d.Lost))
		}
	}
	pct := 100 * float64(lost) / float64(sent+drops)
	ev := fmt.Sprintf("%d packets dropped by the sender's qdiscs on %s (%.2f%% of what they handled): %s", lost, s.Path.Iface, pct, strings.Join(where, ", "))
	if lost < drops {
		ev = fmt.Sprintf("%d packets dropped by the sender's qdiscs on %s, which refused %d sends to the sender (ENOBUFS) that it sent again: %d lost there (%.2f%% of what they handled): %s",
			drops, s.Path.Iface, d.Resent, lost, pct, strings.Join(where, ", "))
	}
	if !d.UDP && d.Retransmits >= 0 {
		ev += fmt.Sprintf("; %d retransmissions", d.Retransmits)
	}
	sev := finding.Warn
	if pct < lossWarn {
		sev = finding.Info
	}
	return []finding.Finding{{Rule: finding.D19, Severity: sev, Iface: s.Path.Iface,
		Summary:  "the sender's egress queue overflowed: packets were dropped before they left the host",
		Evidence: ev,
		Fix:      "a deeper queue in front of the shaper (tbf limit, or fq_codel/cake, which drop early and fairly), or a sender at the shaper's rate (-b)"}}
}

// D20: loss on the path: retransmissions or lost datagrams that no socket
// buffer explains, with the bytes one end sent and the other received.
func D20(d Direction) []finding.Finding {
	var pct float64
	var ev string
	switch {
	case d.UDP && d.Sent > 0:
		pct = 100 * float64(d.Lost) / float64(d.Sent)
		ev = fmt.Sprintf("%d of %d datagrams lost (%.2f%%)", d.Lost, d.Sent, pct)
		if r := d.Receiver; r != nil && r.Path != nil {
			if r.Path.Get("Udp.RcvbufErrors")+r.Path.Get("Udp6.RcvbufErrors") > 0 {
				// The receiver's socket lost them (D18); with GRO one
				// drop counted there is many datagrams.
				return nil
			}
		}
	case !d.UDP && d.Retransmits > 0 && d.SentBytes > 0:
		mss := d.MSS
		if mss <= 0 {
			mss = 1448
		}
		segs := float64(d.SentBytes) / float64(mss)
		pct = 100 * float64(d.Retransmits) / segs
		ev = fmt.Sprintf("%d retransmissions for about %.0f segments sent (%.2f%%)", d.Retransmits, segs, pct)
		// A retransmission the receiver reports as a duplicate
		// (D-SACK) was not lost: packets that arrived out of order
		// (a busy host's veth or a multipath hop) or late ACKs set
		// TCP resending. Only the rest is loss.
		if s := d.Sender; s != nil && s.Path != nil {
			if dup := min(int64(s.Path.Get("TcpExt.TCPDSACKRecvSegs")), d.Retransmits); dup > 0 {
				lost := d.Retransmits - dup
				lostPct := 100 * float64(lost) / segs
				ev += fmt.Sprintf("; the receiver already had %d of them (D-SACK on the sender's host), so about %d were lost (%.2f%%)", dup, lost, lostPct)
				if r := s.Path.Get("TcpExt.TCPSACKReorder") + s.Path.Get("TcpExt.TCPTSReorder"); r > 0 {
					ev += fmt.Sprintf("; TCP saw reordering %d times", r)
				}
				if lostPct < lossWarn {
					if pct < lossWarn {
						return nil
					}
					return []finding.Finding{{Rule: finding.D20, Severity: finding.Info, Iface: iface(d.Sender),
						Summary:  "TCP resent segments that were not lost: they arrived out of order or their ACKs came late",
						Evidence: ev,
						Fix:      "none needed: nothing was lost; if it persists, look for reordering on the path (a busy receiver's CPUs, multipath hops)"}}
				}
				pct = lostPct
			}
		}
	default:
		return nil
	}
	if pct < lossWarn {
		return nil
	}
	slowStart := int64(0)
	if s := d.Sender; s != nil && s.Path != nil && !d.UDP {
		slowStart = min(int64(s.Path.Get("TcpExt.TCPSlowStartRetrans")), d.Retransmits)
	}
	if q := QueueMs(d); (q >= PolicerQueueMs || d.Retransmits > 0 && 2*slowStart >= d.Retransmits) && pct < PolicerLoss {
		// TCP filled a queue on the way, or overshot it in slow start,
		// and lost a little where it overflowed: the congestion TCP
		// finds a bottleneck by, not a device dropping packets (a 200
		// Mbit/s line with 50 ms of queue on a 20 ms path: 1.02-1.24%
		// resent). More than PolicerLoss is for doctor's probes (D26).
		if q >= 0 {
			ev += fmt.Sprintf("; its RTT stood %.1f ms above the path's %.1f ms while it ran", q, float64(d.MinRTTus)/1000)
		}
		if slowStart > 0 {
			ev += fmt.Sprintf("; %d of the retransmissions in slow start (TCPSlowStartRetrans)", slowStart)
		}
		return []finding.Finding{{Rule: finding.D20, Severity: finding.Info, Iface: iface(d.Sender),
			Summary:  "TCP lost a little where it filled a queue on the way: congestion at a bottleneck, as TCP finds its rate",
			Evidence: ev,
			Fix:      "none needed at this share; a congestion control that paces (-C bbr where the kernel has it) loses less there"}}
	}
	if tx, rx, ok := wireBytes(d); ok && tx > 0 {
		ev += fmt.Sprintf("; the sender's %s sent %s, the receiver's %s received %s (%.0f%% less)", iface(d.Sender), bytesWords(int64(tx)), iface(d.Receiver), bytesWords(int64(rx)), 100*(1-float64(rx)/float64(tx)))
	}
	return []finding.Finding{{Rule: finding.D20, Severity: finding.Warn, Iface: iface(d.Sender),
		Summary:  "packets are lost between the two ends",
		Evidence: ev,
		Fix:      "look at the findings before this one for where (a queue, a shaper, link errors); if none, the loss is in a device between the hosts: check its drop counters"}}
}

// D21: a receiver whose reads were short: either its buffer is small and
// each read is a system call's worth of work (reader-limited), or data came
// slowly (starved, the limit is upstream).
func D21(d Direction) []finding.Finding {
	r := d.Receiver
	if d.UDP || r == nil || r.BufLen <= 0 {
		return nil
	}
	reads := r.IO.Calls - r.IO.Errors - r.IO.Idle
	if reads < 100 || r.IO.Bytes <= 0 {
		return nil
	}
	per := float64(r.IO.Bytes) / float64(reads)
	cpu := perStreamCPU(r)
	ev := fmt.Sprintf("%d reads of %.0f bytes on average into a %d-byte buffer", reads, per, r.BufLen)
	if cpu >= 0 {
		ev += fmt.Sprintf(", receiver CPU %.0f%% of a core per stream", cpu)
	}
	switch {
	case per >= 0.9*float64(r.BufLen) && r.BufLen < smallRead:
		// Full reads: data was always waiting, so the reader, one
		// system call per small buffer, set the pace.
		return []finding.Finding{{Rule: finding.D21, Severity: finding.Warn, Iface: iface(r),
			Summary:  "reader-limited: each read fills the receiver's small buffer: data was always waiting, and the receiver spent itself on system calls",
			Evidence: ev,
			Fix:      "read with a larger buffer on the receiver (-l 128K)"}}
	case per < 0.5*float64(r.BufLen) && (cpu < 0 || cpu < 50):
		return []finding.Finding{{Rule: finding.D21, Severity: finding.Info, Iface: iface(r),
			Summary:  "starved receiver: reads return less than the buffer holds because data arrives slowly (the limit is upstream, not the reader)",
			Evidence: ev,
			Fix:      "none on the receiver: look at the sender and the path"}}
	}
	return nil
}

// D22: an end whose process used a whole core per stream.
func D22(d Direction) []finding.Finding {
	var out []finding.Finding
	for _, e := range []*End{d.Sender, d.Receiver} {
		if e == nil {
			continue
		}
		if cpu, pct := softirqBusiest(e); pct >= busySoftirq {
			role := "sender"
			if e == d.Receiver {
				role = "receiver"
			}
			out = append(out, finding.Finding{Rule: finding.D22, Severity: finding.Info, Iface: iface(e),
				Summary:  "the " + role + "'s host is bound by packet processing: a core spent the test in softirq",
				Evidence: fmt.Sprintf("cpu%d spent %.0f%% of the test in softirq on the %s (%s)", cpu, pct, role, e.Name),
				Fix:      "spread the packet work over more cores: more queues (ethtool -L IFACE combined N) with irqbalance, RPS/RFS, or GRO/GSO to handle fewer, larger packets"})
		}
		if cpu := perStreamCPU(e); cpu >= busyCPU {
			role := "sender"
			if e == d.Receiver {
				role = "receiver"
			}
			out = append(out, finding.Finding{Rule: finding.D22, Severity: finding.Info, Iface: iface(e),
				Summary:  "the " + role + " is CPU-bound: a core per stream was busy the whole test",
				Evidence: fmt.Sprintf("the %s (%s) used %.0f%% of a core per stream (%d stream(s)) for %s", role, e.Name, cpu, max(e.Streams, 1), bits(d.Goodput)),
				Fix:      "more streams (-P) on more cores, a copy-free backend (--backend splice or sendfile to send, larger -l), or a faster CPU"})
		}
	}
	return out
}

// busySoftirq is the share of a CPU in softirq that makes it the limit.
const busySoftirq = 90

// softirqBusiest is the CPU of e's host that spent the most time in
// softirq during the test, and that share in percent (-1: unknown).
func softirqBusiest(e *End) (cpu int, pct float64) {
	cpu, pct = -1, -1
	if e == nil || e.Path == nil {
		return
	}
	for i, p := range e.Path.SoftirqPct {
		if p > pct {
			cpu, pct = i, p
		}
	}
	return
}

// D23: goodput well below what the sender's link carries, when the link
// has a real speed.
func D23(d Direction) []finding.Finding {
	s := speedBps(d.Sender)
	if s <= 0 || d.Goodput <= 0 || d.Rate > 0 && d.Rate < lineRateShare*s {
		return nil
	}
	line := lineRateShare * s
	if d.Goodput >= 0.85*line {
		return nil
	}
	return []finding.Finding{{Rule: finding.D23, Severity: finding.Info, Iface: iface(d.Sender),
		Summary:  "goodput is well below the link's line rate",
		Evidence: fmt.Sprintf("goodput %s is %.0f%% of the %s link's TCP line rate (%s)", bits(d.Goodput), 100*d.Goodput/line, bits(s), bits(line)),
		Fix:      "the other findings say where the rest went; with none, try more streams (-P) and a larger window (-w)"}}
}

// NICBound says whether the sender's NIC, rather than anything the path
// rules found, was the narrowest point: nicinfo's D9 applies only then.
func NICBound(d Direction, found []finding.Finding) bool {
	if speedBps(d.Sender) <= 0 {
		return false
	}
	for _, f := range found {
		switch f.Rule {
		case finding.D14, finding.D15, finding.D18, finding.D19, finding.D21, finding.D22:
			return false
		}
	}
	return d.Rate == 0
}

func perStreamCPU(e *End) float64 {
	if e == nil || e.CPUPct < 0 {
		return -1
	}
	return e.CPUPct / float64(max(e.Streams, 1))
}

func mtu(e *End) int {
	if e == nil || e.NIC == nil || e.NIC.Interface == nil || e.NIC.Interface.MTU == nil {
		return 0
	}
	return *e.NIC.Interface.MTU
}

func iface(e *End) string {
	switch {
	case e == nil:
		return ""
	case e.NIC != nil && e.NIC.Interface != nil:
		return e.NIC.Interface.Name
	case e.Path != nil:
		return e.Path.Iface
	}
	return ""
}

// speedBps is the end's link speed in bit/s when it is a real one: a
// virtual device's (veth says 10000) is not.
func speedBps(e *End) float64 {
	if e == nil || e.NIC == nil || e.NIC.Interface == nil {
		return 0
	}
	ifc := e.NIC.Interface
	if ifc.Virtual || ifc.Link.SpeedMbps == nil || *ifc.Link.SpeedMbps <= 0 {
		return 0
	}
	return float64(*ifc.Link.SpeedMbps) * 1e6
}

// sameLink says whether the two ends' interfaces face each other: a veth
// pair (one's peer index is the other's index) or each the other's only
// neighbour as far as the results tell (both physical, no gateway known).
func sameLink(d Direction) bool {
	if d.Sender == nil || d.Receiver == nil || d.Sender.NIC == nil || d.Receiver.NIC == nil {
		return false
	}
	a, b := d.Sender.NIC.Interface, d.Receiver.NIC.Interface
	if a == nil || b == nil {
		return false
	}
	if a.PeerIndex != nil && b.PeerIndex != nil {
		return *a.PeerIndex == b.Index && *b.PeerIndex == a.Index
	}
	return false
}

// wireBytes are the sender NIC's transmitted and the receiver NIC's
// received bytes over the test, when both are known and face each other.
func wireBytes(d Direction) (tx, rx uint64, ok bool) {
	if !sameLink(d) || d.Sender.NIC.Delta == nil || d.Receiver.NIC.Delta == nil {
		return 0, 0, false
	}
	tx, okT := d.Sender.NIC.Delta.Counters["tx_bytes"]
	rx, okR := d.Receiver.NIC.Delta.Counters["rx_bytes"]
	return tx, rx, okT && okR
}

// bits is a rate in a finding: units.Bits.
func bits(bps float64) string { return units.Bits(bps) }

// sig3 is v with three significant digits: units.Sig3.
func sig3(v float64) string { return units.Sig3(v) }

// bytesWords is a size in a finding: units.Bytes.
func bytesWords(n int64) string { return units.Bytes(n) }

// sizeFlag is n rounded up to a whole K or M, as -w takes it:
// units.SizeFlag.
func sizeFlag(n int64) string { return units.SizeFlag(n) }

func usWords(us float64) string {
	if us >= 1000 {
		return strconv.FormatFloat(us/1000, 'f', 1, 64) + " ms"
	}
	return strconv.FormatFloat(us, 'f', 0, 64) + " µs"
}

func mtuWords(m int) string {
	if m <= 0 {
		return "unknown"
	}
	return strconv.Itoa(m)
}

// outageMin is the shortest stall D27 calls an outage: TCP's first
// retransmission timeouts (200 ms, then 400) end a drop of a few hundred
// milliseconds within that, and a busy host's scheduler can hold a flow
// for a good part of it.
const outageMin = time.Second

// D27: an outage: the direction moved nothing for a second or more
// between its first and last bytes. TCP needs its sender's retransmission
// timer to have fired (a host that stopped running the flow fires none);
// UDP needs a sender that was due at least 10 datagrams meanwhile. Not
// when an end's interface lost its carrier: that is D10's.
func D27(d Direction) []finding.Finding {
	st := d.Stall
	if st.Seconds < outageMin.Seconds() {
		return nil
	}
	for _, e := range []*End{d.Sender, d.Receiver} {
		if e != nil && e.NIC != nil && e.NIC.Delta != nil {
			if c := e.NIC.Delta.CarrierChanges; c != nil && *c > 0 {
				return nil
			}
		}
	}
	ev := fmt.Sprintf("no byte moved from %.1f s to %.1f s into the test (%.1f s)", st.Start, st.Start+st.Seconds, st.Seconds)
	if d.UDP {
		if d.Rate > 0 && d.Datagram > 0 && d.Rate*st.Seconds/8/float64(d.Datagram) < 10 {
			return nil
		}
	} else {
		if d.RTOs <= 0 {
			return nil
		}
		ev += fmt.Sprintf("; the sender's retransmission timer fired %d times, %d ms spent recovering (tcpi_total_rto, tcpi_total_rto_time)", d.RTOs, d.RTOTimeMs)
	}
	var up []string
	for _, e := range []*End{d.Sender, d.Receiver} {
		if e != nil && e.NIC != nil && e.NIC.Delta != nil && e.NIC.Delta.CarrierChanges != nil {
			up = append(up, e.Name+" "+e.NIC.Delta.Name)
		}
	}
	if len(up) > 0 {
		ev += "; no carrier change on " + strings.Join(up, " or ")
	}
	return []finding.Finding{{Rule: finding.D27, Severity: finding.Warn,
		Summary:  fmt.Sprintf("an outage on the path: nothing got through for %.1f s while the links stayed up", st.Seconds),
		Evidence: ev,
		Fix: fmt.Sprintf("look between the hosts for what dropped everything for %.1f s: a switch or router restarting, a routing or spanning-tree change, a firewall or NAT losing its state; "+
			"run with -i 0.1 to see when it starts and ends", st.Seconds)}}
}
