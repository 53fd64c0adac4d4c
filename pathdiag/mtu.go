package pathdiag

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/pathmtu"
)

// MTUDirection is one direction's path MTU as doctor's probes measured it
// (pathmtu), beside the MTUs of the interfaces at its ends.
type MTUDirection struct {
	// Name is the direction: "upload" or "download".
	Name string
	pathmtu.Direction
	// SenderIface and ReceiverIface name the interfaces at the ends;
	// SenderIfaceMTU and ReceiverIfaceMTU are their MTUs (0: unknown).
	SenderIface, ReceiverIface       string
	SenderIfaceMTU, ReceiverIfaceMTU int
	// V6: the probes were IPv6 (ICMPv6 "packet too big", 48 bytes of
	// headers in front of a UDP payload).
	V6 bool
}

// ends is the smaller of the two ends' MTUs (0: neither known): the
// largest packet the path would carry if nothing between them were
// smaller.
func (d MTUDirection) ends() int {
	s, r := d.SenderIfaceMTU, d.ReceiverIfaceMTU
	if s == 0 {
		s = d.SenderMTU
	}
	switch {
	case s > 0 && r > 0:
		return min(s, r)
	case s > 0:
		return s
	}
	return r
}

// hop says whether a hop between the ends carries less than both: the
// search found the size exactly (the next one up lost twice), so random
// loss or a policer's drops cannot make one up.
func (d MTUDirection) hop() bool {
	return d.Measured && d.Exact && d.ends() > 0 && d.PMTU < d.ends()
}

// blackHole: the sender's kernel still holds a larger path MTU than what
// passes, after probes that the hop dropped: no ICMP "fragmentation
// needed" came back.
func (d MTUDirection) blackHole() bool {
	return d.Learned > d.PMTU
}

// D29: a hop with a smaller MTU than both ends, between the hosts (a
// jumbo end behind a 1500-byte link), in the direction(s) the probes
// found it: the largest don't-fragment probe that arrived, and the next
// size that did not (twice: random loss does not make a hop), against
// both interfaces' MTUs; a search that did not settle is an INFO note. WARN when the hop
// sends ICMP "fragmentation needed" (TCP adapts, UDP larger than the hop
// is lost), ERROR when none came back (a path-MTU black hole: TCP's
// full-size segments vanish). Two ends with different MTUs and nothing
// smaller between are D16's. A direction not measured (the far end is no
// blast server) is an INFO note.
func D29(dirs ...MTUDirection) []finding.Finding {
	var out []finding.Finding
	var hops []MTUDirection
	// Neither direction measured, for one reason: one note.
	if len(dirs) == 2 && !dirs[0].Measured && !dirs[1].Measured && dirs[0].NotMeasured != "" && dirs[0].NotMeasured == dirs[1].NotMeasured {
		return []finding.Finding{{Rule: finding.D29, Severity: finding.Info,
			Summary:  "path MTU not measured",
			Evidence: dirs[0].NotMeasured,
			Fix:      "run blast server at the far end to measure both directions, or tracepath -n from each end"}}
	}
	for _, d := range dirs {
		switch {
		case d.hop():
			hops = append(hops, d)
		case d.Measured && !d.Exact && d.ends() > 0 && d.PMTU < d.ends():
			out = append(out, finding.Finding{Rule: finding.D29, Severity: finding.Info,
				Summary:  fmt.Sprintf("path MTU in the %s direction: at least %d bytes, not found exactly", d.Name, d.PMTU),
				Evidence: fmt.Sprintf("don't-fragment probes up to %d bytes arrived, the search ended after %d rounds before it settled (loss on the path, or time)", d.PMTU, d.Rounds),
				Fix:      "tracepath -n from this end shows the path MTU hop by hop"})
		case !d.Measured && d.NotMeasured != "":
			out = append(out, finding.Finding{Rule: finding.D29, Severity: finding.Info,
				Summary:  "path MTU not measured in the " + d.Name + " direction",
				Evidence: d.NotMeasured,
				Fix:      "run blast server at the far end to measure both directions, or tracepath -n from each end"})
		}
	}
	// One finding for a hop both ways with the same MTU and ICMP alike.
	if len(hops) == 2 && hops[0].PMTU == hops[1].PMTU && hops[0].blackHole() == hops[1].blackHole() {
		return append(out, hopFinding(hops, "both directions"))
	}
	for _, d := range hops {
		f := hopFinding([]MTUDirection{d}, "the "+d.Name+" direction")
		// The other direction carried the whole MTU: say so.
		for _, o := range dirs {
			if o.Name != d.Name && o.Measured && !o.hop() {
				f.Evidence += fmt.Sprintf("; %s: %d bytes passed, the ends' MTU", o.Name, o.PMTU)
			}
		}
		out = append(out, f)
	}
	return out
}

func hopFinding(ds []MTUDirection, where string) finding.Finding {
	d := ds[0]
	size := fmt.Sprintf("%d-byte", d.PMTU)
	var ev []string
	sev := finding.Warn
	black := false
	for _, x := range ds {
		e := fmt.Sprintf("%s: don't-fragment probes up to %d bytes arrived", x.Name, x.PMTU)
		if x.Lost > 0 {
			e += fmt.Sprintf(", %d did not", x.Lost)
			if x.Exact {
				e += " (twice)"
			}
		}
		e += fmt.Sprintf("; MTU %s on the sender's %s, %s on the receiver's %s",
			mtuWords(cmp.Or(x.SenderIfaceMTU, x.SenderMTU)), orWords(x.SenderIface, "interface"), mtuWords(x.ReceiverIfaceMTU), orWords(x.ReceiverIface, "interface"))
		icmp := "ICMP 'fragmentation needed'"
		if x.V6 {
			icmp = "ICMPv6 'packet too big'"
		}
		switch {
		case x.blackHole():
			black = true
			sev = finding.Error
			e += fmt.Sprintf("; no %s came back (the sender's kernel still holds %d): a path-MTU black hole that way", icmp, x.Learned)
		case x.Learned > 0:
			e += fmt.Sprintf("; %s came back (the sender's kernel learned %d)", icmp, x.Learned)
		}
		ev = append(ev, e)
	}
	ends := d.ends()
	over := 28
	if d.V6 {
		over = 48
	}
	fix := fmt.Sprintf("set the ends' MTU to %d (ip link set dev IFACE mtu %d on both hosts) or raise the hop's to %d; until then UDP datagrams over %d bytes (-l %d) sent in %s are lost",
		d.PMTU, d.PMTU, ends, d.PMTU-over, d.PMTU-over, where)
	if black {
		fix += ", and TCP needs the hop's ICMP back (let ICMP type 3 code 4, ICMPv6 type 2, through) or net.ipv4.tcp_mtu_probing=1 on the sender"
	}
	return finding.Finding{Rule: finding.D29, Severity: sev,
		Summary:  fmt.Sprintf("a %s hop between the hosts in %s: packets up to the ends' %d-byte MTU do not pass", size, where, ends),
		Evidence: strings.Join(ev, "; "),
		Fix:      fix}
}

func orWords(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
