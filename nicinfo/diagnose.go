package nicinfo

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/units"
)

// Input is what the per-interface rules look at.
type Input struct {
	// Iface is the interface's state (required); at the end of the test when
	// there was one.
	Iface *Interface
	// Delta is the counter change over the test; nil runs the state rules only
	// (D1, D2, D8, D12).
	Delta *Deltas
	// GoodputBps is the measured goodput through this NIC in bit/s, 0 when
	// unknown; D9 needs it.
	GoodputBps float64
	// NICBound says the NIC was the narrowest point of the path (D9 only applies
	// then: a slow far end or a rate limit is not the NIC's fault).
	NICBound bool
	// Renamed is set when Iface had another name in an earlier capture
	// (Pair matched it by identity); D25 reports it.
	Renamed *Match
}

// Rule is one diagnosis rule.
type Rule struct {
	ID    finding.ID
	Check func(Input) []finding.Finding
}

// Rules are the per-interface rules D1-D6 and D8-D13, in
// order, and D25 (a card renamed between two captures). D7 compares two
// results and is DiagnosePath.
var Rules = []Rule{
	{finding.D1, D1}, {finding.D2, D2}, {finding.D3, D3}, {finding.D4, D4}, {finding.D5, D5}, {finding.D6, D6},
	{finding.D8, D8}, {finding.D9, D9}, {finding.D10, D10}, {finding.D11, D11}, {finding.D12, D12}, {finding.D13, D13},
	{finding.D25, D25},
}

// Diagnose runs every per-interface rule, most serious findings first (stable
// in rule order otherwise). A counter reset adds a WARN finding "reset".
func Diagnose(in Input) []finding.Finding {
	if in.Iface == nil {
		return nil
	}
	var out []finding.Finding
	if in.Delta != nil && len(in.Delta.Resets) > 0 {
		out = append(out, finding.Finding{
			Rule: finding.Reset, Severity: finding.Warn, Iface: in.Iface.Name,
			Summary:  "counters went backwards during the test (driver reload or device reset): rules using them were skipped",
			Evidence: strings.Join(in.Delta.Resets, ", "),
			Fix:      "repeat the test; if it recurs, look for driver resets (tx timeouts) in the kernel log",
		})
	}
	for _, r := range Rules {
		out = append(out, r.Check(in)...)
	}
	slices.SortStableFunc(out, func(a, b finding.Finding) int { return int(b.Severity) - int(a.Severity) })
	return out
}

// ratioMinPackets: ratio rules need this many packets in the test.
const ratioMinPackets = 1000

func (in Input) carrierUp() bool { return in.Iface.Carrier != nil && *in.Iface.Carrier }

// packets returns tx and rx packets of the test and whether ratio rules apply.
func (in Input) packets() (txp, rxp uint64, ok bool) {
	if in.Delta == nil {
		return 0, 0, false
	}
	tx, okT := in.Delta.Counters["tx_packets"]
	rx, okR := in.Delta.Counters["rx_packets"]
	return tx, rx, okT && okR && tx+rx >= ratioMinPackets
}

// key returns a key counter delta; ok is false when it is absent or reset.
func (in Input) key(name string) (uint64, bool) {
	if in.Delta == nil {
		return 0, false
	}
	v, ok := in.Delta.Key[name]
	return v, ok
}

func (in Input) finding(rule finding.ID, sev finding.Severity, summary, evidence, fix string) finding.Finding {
	return finding.Finding{Rule: rule, Severity: sev, Iface: in.Iface.Name, Summary: summary, Evidence: evidence, Fix: fix}
}

func (in Input) linkWords() string {
	l := in.Iface.Link
	s := "speed " + speedWords(l.SpeedMbps) + ", duplex " + orUnknown(l.Duplex) + ", autoneg " + boolWords(l.Autoneg, "on", "off")
	return s
}

// halfCause is why a link runs half duplex, as the link partner's modes
// tell it.
type halfCause int

const (
	// causeUnknown: no link modes (no ethtool data): a forced peer and a
	// hub look the same.
	causeUnknown halfCause = iota
	// causeThisEnd: this end's autonegotiation is off, its duplex forced.
	causeThisEnd
	// causePeerForced: this end negotiates and the partner advertises
	// nothing: its speed and duplex are hard-set (autonegotiation off), and
	// parallel detection, which finds the speed but not the duplex, fell
	// back to half duplex.
	causePeerForced
	// causeHalfOnly: the partner negotiates but advertises only
	// half-duplex modes: a hub, or a 10/half-only device.
	causeHalfOnly
	// causePartnerFull: the partner advertises full duplex, and the link
	// still runs half.
	causePartnerFull
)

// partnerSpeedModes are the link partner's speed modes (not Autoneg,
// Pause, TP, ...).
func partnerSpeedModes(l Link) []string {
	var out []string
	for _, m := range l.Partner {
		if modeSpeed(m) > 0 {
			out = append(out, m)
		}
	}
	return out
}

// halfCause tells why the interface runs half duplex, with the words of
// the evidence ("link partner advertises only 10baseT_Half").
func (in Input) halfCause() (halfCause, string) {
	l := in.Iface.Link
	switch {
	case l.Autoneg != nil && !*l.Autoneg:
		return causeThisEnd, "this end's autonegotiation is off"
	case !l.ModesKnown || l.Autoneg == nil:
		return causeUnknown, "link partner modes unknown (no ethtool link settings)"
	}
	pm := partnerSpeedModes(l)
	if len(pm) == 0 {
		return causePeerForced, "link partner advertises no modes (peer forced: its speed and duplex are hard-set)"
	}
	var full []string
	for _, m := range pm {
		if strings.HasSuffix(m, "_Full") {
			full = append(full, m)
		}
	}
	if len(full) == 0 {
		return causeHalfOnly, "link partner advertises only " + strings.Join(pm, " ")
	}
	return causePartnerFull, "link partner advertises " + strings.Join(full, " ")
}

// D1: carrier up, autoneg on, duplex half, and the partner advertises
// nothing: the peer is forced.
func D1(in Input) []finding.Finding {
	l := in.Iface.Link
	if !in.carrierUp() || l.Autoneg == nil || !*l.Autoneg || l.Duplex != "half" || !l.ModesKnown || len(partnerSpeedModes(l)) > 0 {
		return nil
	}
	if v, _ := in.collisions(); v == verdictHub {
		// A partner that does not negotiate and collides early only:
		// a hub (an old 10BASE-T one sends link pulses, no modes);
		// D2 and D5 say so.
		return nil
	}
	fix := "the far end is probably forced to " + speedWords(l.SpeedMbps) + "/full while this end autonegotiates: set both to autonegotiate, or force both to the same speed and duplex"
	if l.SpeedMbps != nil && *l.SpeedMbps == 10 {
		fix += " (at 10M the partner may also be an old 10BASE-T hub that does not negotiate: then half duplex is right, and a switch is the fix)"
	}
	return []finding.Finding{in.finding(finding.D1, finding.Error,
		"duplex mismatch: the peer does not negotiate (its speed and duplex are forced), so parallel detection chose half duplex",
		in.linkWords()+", link partner advertises no modes",
		fix)}
}

// D2: half duplex on a link that could run full. The partner's modes say
// why: a forced peer (a mismatch), a hub or half-only device, or this end
// forced.
func D2(in Input) []finding.Finding {
	l := in.Iface.Link
	if l.Duplex != "half" || !in.carrierUp() {
		return nil
	}
	fullCapable := false
	for _, m := range l.Supported {
		if strings.HasSuffix(m, "_Full") {
			fullCapable = true
		}
	}
	if !(fullCapable || (l.SpeedMbps != nil && *l.SpeedMbps >= 100)) {
		return nil
	}
	sev := finding.Warn
	ev := in.linkWords()
	if fullCapable {
		ev += ", the NIC supports full duplex"
	}
	cause, words := in.halfCause()
	verdict, vwords := in.collisions()
	if cause == causePeerForced && verdict == verdictHub {
		words = "link partner advertises no modes (a forced peer, or a hub that does not negotiate)"
	}
	if cause != causeThisEnd {
		ev += ", " + words
	}
	if verdict != verdictHub && (len(D3(in)) > 0 || len(D5(in)) > 0) {
		sev = finding.Error
		ev += "; with collision errors (D3/D5)"
	}
	name := in.Iface.Name
	summary := "running half duplex on a link that can run full duplex"
	fix := "make both ends autonegotiate (ethtool -s " + name + " autoneg on, and the same on the switch port); half duplex belongs to hubs"
	switch cause {
	case causeUnknown:
		fix += "; 'ethtool " + name + "' on that machine shows the link partner's modes: none means the peer is forced (a duplex mismatch), half-duplex ones only a hub"
	case causeThisEnd:
		summary = "running half duplex because this end is forced to it (autoneg off)"
		fix = "set this end to autonegotiate (ethtool -s " + name + " autoneg on), and the switch port too; a forced half-duplex end against a full-duplex port is a duplex mismatch"
	case causePeerForced:
		summary = "running half duplex on a link that can run full duplex: the peer is forced, so parallel detection chose half"
		fix = "this end autonegotiates and the peer (the switch port) has its speed and duplex hard-set: set the peer to autonegotiate, or force both ends to the same speed at full duplex"
	case causeHalfOnly:
		summary = "running half duplex: the link partner is a hub or a half-duplex-only device (it advertises no full-duplex mode)"
		if pm := partnerSpeedModes(l); len(pm) == 1 && pm[0] == "10baseT_Half" {
			summary = "running half duplex: the link partner is a hub or a 10/half-only device (it advertises only 10baseT_Half)"
		}
		fix = "nothing to set on this end (autonegotiation chose the best the partner offers): replace the hub with a switch, or give the device its own switch port; collisions are normal on a hub, late collisions are not"
	case causePartnerFull:
		summary = "running half duplex although the link partner advertises full duplex"
		fix = "renegotiate (ethtool -r " + name + "); if it comes back half, compare the modes both ends advertise (ethtool " + name + ") and check the driver"
	}
	switch {
	case verdict == verdictHub && cause == causeHalfOnly:
		ev += "; " + vwords
	case verdict == verdictHub && (cause == causeUnknown || cause == causePeerForced):
		summary = hubSummary + ": running half duplex because the link partner is a hub that does not negotiate (it collides, never late)"
		ev += "; " + vwords
		fix = "nothing to set on this end: half duplex is right on a hub; replace the hub with a switch, or give this host its own switch port"
	}
	return []finding.Finding{in.finding(finding.D2, sev, summary, ev, fix)}
}

// D3: any late collision.
func D3(in Input) []finding.Finding {
	late, ok := in.key(LateCollisions)
	if !ok || late == 0 {
		return nil
	}
	ev := fmt.Sprintf("Δ%s = %d", LateCollisions, late)
	sev := finding.Warn
	if txp, _, ratioOK := in.packets(); ratioOK && txp > 0 {
		r := float64(late) / float64(txp)
		ev += fmt.Sprintf(" in %d tx packets (%.2g)", txp, r)
		if r >= 1e-3 {
			sev = finding.Error
		}
	}
	if late >= 100 {
		sev = finding.Error
	}
	if src := keySource(in.Iface, LateCollisions); src != "" {
		ev += " [" + src + "]"
	}
	return []finding.Finding{in.finding(finding.D3, sev,
		"late collisions: duplex mismatch with this end at half duplex, or a cable longer than 100 m",
		ev,
		"set both ends to autonegotiate (or force both to full duplex); if duplex matches, check the cable length and the patch panel")}
}

// D4: collisions while reporting full duplex.
func D4(in Input) []finding.Finding {
	if in.Iface.Link.Duplex != "full" {
		return nil
	}
	c, ok := in.key(Collisions)
	if !ok || c == 0 {
		return nil
	}
	ev := fmt.Sprintf("Δcollisions = %d, %s", c, in.linkWords())
	if x := in.excessive(); x != "" {
		ev += "; " + x
	}
	return []finding.Finding{in.finding(finding.D4, finding.Warn,
		"collisions on a full-duplex link: the MAC behaves as half duplex, the reported duplex is wrong",
		ev,
		"check the driver's duplex setting (module options, ethtool -s) against the switch port; reload the driver or renegotiate (ethtool -r "+in.Iface.Name+")")}
}

// excessive is the evidence of excessive collisions ("" when none): frames
// the MAC gave up after 16 collisions in a row, which tx_aborted_errors
// counts at half duplex.
func (in Input) excessive() string {
	x, ok := in.key(ExcessiveCollisions)
	if !ok || x == 0 {
		return ""
	}
	src := keySource(in.Iface, ExcessiveCollisions)
	if src == "" {
		src = "tx_aborted_errors"
	}
	return fmt.Sprintf("Δ%s = %d [%s]: frames dropped after 16 collisions in a row", ExcessiveCollisions, x, src)
}

// D5: heavy or excessive collisions at half duplex. A MAC that counts
// collisions runs half duplex, so D5 also fires when the driver does not
// report the duplex (tulip) but collisions are counted.
func D5(in Input) []finding.Finding {
	duplex := in.Iface.Link.Duplex
	c, okC := in.key(Collisions)
	if duplex != "half" && !(duplex == "" && okC && c > 0) {
		return nil
	}
	var parts []string
	txp, _, ratioOK := in.packets()
	heavy := false
	if okC && ratioOK && txp > 0 {
		r := float64(c) / float64(txp)
		heavy = r > 0.05
		if heavy || c > 0 {
			parts = append(parts, fmt.Sprintf("Δcollisions = %d in %d tx packets (%.1f%%)", c, txp, 100*r))
		}
	}
	x := in.excessive()
	if !heavy && x == "" {
		return nil
	}
	if x != "" {
		if len(parts) == 0 && okC {
			parts = append(parts, fmt.Sprintf("Δcollisions = %d", c))
		}
		parts = append(parts, x)
	}
	if duplex == "" {
		parts = append(parts, "duplex not reported by the driver, but only a half-duplex MAC counts collisions")
	}
	verdict, vwords := in.collisions()
	if vwords != "" {
		parts = append(parts, vwords)
	}
	what := "heavy collisions at half duplex"
	switch {
	case x != "" && heavy:
		what = "heavy collisions at half duplex, with frames dropped after 16 tries (excessive collisions, tx_aborted_errors)"
	case x != "":
		what = "excessive collisions at half duplex: frames dropped after 16 tries (tx_aborted_errors)"
	}
	summary := what
	if x != "" {
		summary += ": a busy shared segment or a duplex mismatch"
	}
	fix := "if the far end is a switch, it is probably forced to full duplex: make both ends autonegotiate; on a real hub, move to a switch"
	cause, _ := in.halfCause()
	switch cause {
	case causePeerForced:
		fix = "the peer is forced (it advertises no modes), probably to full duplex: set it to autonegotiate, or force both ends to full duplex"
	case causeHalfOnly:
		fix = "the partner is a hub or a half-duplex-only device: the segment is busy; move this host (or the heavy talkers) to a switch port"
	case causeThisEnd:
		fix = "this end is forced to half duplex: set both ends to autonegotiate (ethtool -s " + in.Iface.Name + " autoneg on)"
	}
	switch verdict {
	case verdictHub:
		summary = hubSummary + ": " + what + ", none of them late, no CRC error: not a duplex mismatch"
		fix = "nothing is misconfigured (on a hub half duplex is right): the segment is shared and busy; move this host (or the heavy talkers) to a switch port"
	case verdictMismatch:
		summary = what + ", and late collisions: a duplex mismatch, not a busy hub"
		if cause != causeThisEnd {
			fix = "the far end runs full duplex (probably forced): set both ends to autonegotiate, or force both to the same speed at full duplex"
		}
	}
	return []finding.Finding{in.finding(finding.D5, finding.Warn, summary, strings.Join(parts, "; "), fix)}
}

// D6: receive-side frame errors.
func D6(in Input) []finding.Finding {
	_, rxp, ratioOK := in.packets()
	if !ratioOK || rxp == 0 {
		return nil
	}
	var sum uint64
	var parts []string
	any := false
	for _, k := range []string{FCSErrors, AlignErrors, Runts} {
		if v, ok := in.key(k); ok {
			any = true
			sum += v
			parts = append(parts, fmt.Sprintf("Δ%s = %d", k, v))
		}
	}
	if !any {
		return nil
	}
	r := float64(sum) / float64(rxp)
	if r < 1e-4 {
		return nil
	}
	sev := finding.Warn
	if r >= 1e-3 {
		sev = finding.Error
	}
	ev := strings.Join(parts, ", ") + fmt.Sprintf(" in %d rx packets (%.2g)", rxp, r)
	l := in.Iface.Link
	summary := "receive errors (FCS, alignment, runts): a bad cable, optic or interference"
	fix := "replace the cable (or optic), check the patch panel and the distance, keep it away from power cables"
	fcs, _ := in.key(FCSErrors)
	align, _ := in.key(AlignErrors)
	switch {
	case l.Duplex == "full" && l.Autoneg != nil && !*l.Autoneg:
		summary = "receive errors on a forced full-duplex link: the peer is probably at half duplex (duplex mismatch)"
		fix = "this end is forced to full duplex and the peer, autonegotiating, fell back to half: set both ends to autonegotiate, or force both"
		ev += ", " + in.linkWords()
	case l.Duplex == "full" && l.SpeedMbps != nil && *l.SpeedMbps <= 100 && fcs > 0 && align > 0 && !in.negotiatedFull():
		// A half-duplex peer aborts the frames it sends when it hears
		// this end as a collision: the stubs arrive as CRC errors and,
		// cut off mid-octet, as alignment errors. A bad cable gives CRC
		// errors too; only the far end's counters tell them apart.
		summary = "CRC and alignment errors on a 10/100 full-duplex link: a duplex mismatch (the peer at half duplex) or a bad cable"
		fix = "tell them apart at the far end: a peer at half duplex counts collisions and late collisions on that port (ethtool -S, or the switch's show interfaces), a bad cable does not; or set both ends to autonegotiate and see whether the CRC errors stop. If the peer runs full duplex, replace the cable"
		ev += ", " + in.linkWords()
		if !l.ModesKnown {
			ev += ", no ethtool link settings (whether either end is forced is unknown)"
		}
	}
	return []finding.Finding{in.finding(finding.D6, sev, summary, ev, fix)}
}

// negotiatedFull says both ends autonegotiated full duplex at the current
// speed: the partner advertises it, so it cannot be at half duplex.
func (in Input) negotiatedFull() bool {
	l := in.Iface.Link
	if l.Autoneg == nil || !*l.Autoneg || !l.ModesKnown || l.SpeedMbps == nil {
		return false
	}
	for _, m := range l.Partner {
		if modeSpeed(m) == *l.SpeedMbps && strings.HasSuffix(m, "_Full") {
			return true
		}
	}
	return false
}

// D8: running below the best speed both ends advertise.
func D8(in Input) []finding.Finding {
	l := in.Iface.Link
	if !in.carrierUp() || l.SpeedMbps == nil || !l.ModesKnown || l.Autoneg == nil || !*l.Autoneg {
		return nil
	}
	cur := *l.SpeedMbps
	if len(l.Partner) > 0 {
		best := 0
		for _, m := range l.Advertised {
			if slices.Contains(l.Partner, m) {
				best = max(best, modeSpeed(m))
			}
		}
		if best <= cur {
			return nil
		}
		return []finding.Finding{in.finding(finding.D8, finding.Warn,
			fmt.Sprintf("speed downshift: running %s although both ends advertise %s", speedWords(&cur), speedWords(&best)),
			fmt.Sprintf("%s; common modes: %s", in.linkWords(), strings.Join(common(l.Advertised, l.Partner), " ")),
			"1000BASE-T needs all four pairs: replace the cable (a broken pair makes the PHY downshift) or check the patch panel")}
	}
	if l.Duplex != "full" {
		return nil // half duplex with a silent peer is D1
	}
	best := 0
	for _, m := range l.Advertised {
		best = max(best, modeSpeed(m))
	}
	if best <= cur {
		return nil
	}
	return []finding.Finding{in.finding(finding.D8, finding.Warn,
		fmt.Sprintf("running %s although this end advertises up to %s, and the peer advertises nothing", speedWords(&cur), speedWords(&best)),
		in.linkWords()+", no link-partner modes",
		"the peer is probably forced to "+speedWords(&cur)+": set it to autonegotiate")}
}

// D9: goodput far below line rate with the NIC as the bottleneck.
func D9(in Input) []finding.Finding {
	l := in.Iface.Link
	if in.GoodputBps <= 0 || !in.NICBound || in.Iface.Virtual || l.SpeedMbps == nil || !in.carrierUp() {
		return nil
	}
	ceiling := 0.94 * float64(*l.SpeedMbps) * 1e6
	if in.GoodputBps >= 0.5*ceiling {
		return nil
	}
	return []finding.Finding{in.finding(finding.D9, finding.Warn,
		"goodput far below line rate",
		fmt.Sprintf("%s is %.0f%% of the %s a %s link carries", rateWords(in.GoodputBps), 100*in.GoodputBps/ceiling, rateWords(ceiling), speedWords(l.SpeedMbps)),
		"look at the other findings (duplex, errors, drops); if none, check the far end and the TCP window")}
}

// D10: the link flapped during the test.
func D10(in Input) []finding.Finding {
	if in.Delta == nil {
		return nil
	}
	var parts []string
	if c := in.Delta.CarrierChanges; c != nil && *c > 0 {
		parts = append(parts, fmt.Sprintf("Δcarrier_changes = %d", *c))
	}
	if v, ok := in.key(LinkDownEvents); ok && v > 0 {
		parts = append(parts, fmt.Sprintf("Δ%s = %d", LinkDownEvents, v))
	}
	if len(parts) == 0 {
		return nil
	}
	ev := strings.Join(parts, ", ")
	fix := "check the cable, connectors and the switch port's log; power saving (EEE) or a flapping autonegotiation can also bounce the link"
	if m := in.Renamed; m != nil && in.Delta.Restarted == "" {
		ev += "; it was renamed (" + m.Before + " → " + m.After + ") between the captures, which takes an interface down"
		fix = "if the rename is all that happened, capture again for a valid interval; otherwise " + fix
	}
	f := in.finding(finding.D10, finding.Error,
		"the link went down during the test: this result is not valid",
		ev, fix)
	f.Invalid = true
	return []finding.Finding{f}
}

// D11: the host dropped received frames.
func D11(in Input) []finding.Finding {
	_, rxp, ratioOK := in.packets()
	v, ok := in.key(HostDrops)
	if !ratioOK || !ok || rxp == 0 || v == 0 {
		return nil
	}
	r := float64(v) / float64(rxp)
	if r < 1e-3 {
		return nil
	}
	sev := finding.Warn
	if r >= 1e-2 {
		sev = finding.Error
	}
	ev := fmt.Sprintf("Δ%s = %d in %d rx packets (%.2g)", HostDrops, v, rxp, r)
	if src := keySource(in.Iface, HostDrops); src != "" {
		ev += " [" + src + "]"
	}
	return []finding.Finding{in.finding(finding.D11, sev,
		"the host cannot keep up with receiving (not a wire problem)",
		ev,
		"grow the RX ring (ethtool -G "+in.Iface.Name+" rx N), spread interrupts over more queues/CPUs (ethtool -L, irqbalance), or lower the CPU load")}
}

// D12: no link although the interface is up.
func D12(in Input) []finding.Finding {
	ifc := in.Iface
	if ifc.AdminUp != nil && !*ifc.AdminUp {
		return []finding.Finding{in.finding(finding.D12, finding.Info,
			"the interface is administratively down",
			"IFF_UP not set, operstate "+orUnknown(ifc.OperState),
			"ip link set "+ifc.Name+" up")}
	}
	if ifc.Carrier == nil || *ifc.Carrier || ifc.AdminUp == nil {
		return nil
	}
	ev := "admin up, carrier 0, operstate " + orUnknown(ifc.OperState)
	if ifc.PeerIndex != nil && (ifc.OperState == "lowerlayerdown" || ifc.Driver == "veth") {
		return []finding.Finding{in.finding(finding.D12, finding.Error,
			"no carrier: the lower layer or the peer (ifindex "+strconv.Itoa(*ifc.PeerIndex)+") is down",
			ev,
			"bring the peer or the parent interface up")}
	}
	fix := "check the cable and the far end; a forced speed mismatch gives no link at all (not a slow one): set both ends to autonegotiate"
	if ifc.Link.Autoneg != nil && *ifc.Link.Autoneg {
		ev += ", autoneg on"
	}
	return []finding.Finding{in.finding(finding.D12, finding.Error,
		"no link: cable, far end down, or an autonegotiation failure / speed mismatch",
		ev, fix)}
}

// D13: deferred transmissions on a full-duplex link.
func D13(in Input) []finding.Finding {
	if in.Iface.Link.Duplex != "full" {
		return nil
	}
	v, ok := in.key(Deferrals)
	if !ok || v == 0 {
		return nil
	}
	return []finding.Finding{in.finding(finding.D13, finding.Info,
		"deferred transmissions on a full-duplex link point to half-duplex operation",
		fmt.Sprintf("Δ%s = %d", Deferrals, v),
		"compare the duplex of both ends; a full-duplex MAC never defers")}
}

// D25: the interface has another name than in an earlier capture of the
// same machine (matched by permanent MAC and bus address).
func D25(in Input) []finding.Finding {
	m := in.Renamed
	if m == nil || !m.Renamed() {
		return nil
	}
	ifc := in.Iface
	ev := m.Before + " before is " + m.After + " after: same " + m.By
	if m.OldNameNow != "" {
		ev += "; " + m.Before + " is now " + m.OldNameNow
	}
	sev := finding.Info
	if m.OldNameNow != "" {
		sev = finding.Warn // what configures the old name now configures another card
	}
	summary := "renamed between the captures (" + m.Before + " → " + m.After + ")"
	fix := "update what still names " + m.Before + " (netplan, ifupdown, NetworkManager, firewall rules)"
	if f := pinnedBy(ifc.Name, ifc.Naming.Udev); f != "" {
		summary += ": the new name is pinned by " + f
		return []finding.Finding{in.finding(finding.D25, sev, summary, ev, fix)}
	}
	if m.BeforeNaming == "enumerated" && ifc.Naming.Kind == "enumerated" {
		sev = finding.Warn
		summary += ": the kernel hands out ethN names in probe order, and the order changed (another kernel, module load order or card)"
	}
	pin, err := pinMatch(ifc)
	if err != nil {
		fix = "this card has no permanent MAC and no PCI path to pin a name to: " + fix
	} else {
		fix = "pin a name outside ethN to this card with a systemd .link file, e.g. /etc/systemd/network/10-lan0.link holding [Match] " + pin.link +
			" and [Link] Name=lan0 ('blast nic " + ifc.Name + " --pin lan0' on that machine prints it, the udev rule and the steps after); then use that name wherever " + m.Before + " was configured"
	}
	return []finding.Finding{in.finding(finding.D25, sev, summary, ev, fix)}
}

// Direction is one direction of a test over a path.
type Direction struct {
	// Bps is the goodput in bit/s.
	Bps float64 `json:"bps"`
	// RetransPct is TCP's lost segments per 100 sent (retransmissions,
	// less those the receiver reports it already had when that is
	// known); negative when unknown.
	RetransPct float64 `json:"retrans_pct"`
	// QueueMs is how far TCP's smoothed RTT stood above the path's own
	// (the smallest the kernel measured) while the test ran, in
	// milliseconds: the queue the flow built at its bottleneck; negative
	// when unknown.
	QueueMs float64 `json:"queue_ms"`
}

// Path is two results over the same path, one per direction, with the findings
// of both ends' interfaces over those tests.
type Path struct {
	Forward, Reverse Direction
	// SamePath says both directions crossed the same interfaces.
	SamePath bool
	// Findings are the per-interface findings of both tests (from Diagnose).
	Findings []finding.Finding
	// Ends are the interfaces at the two ends as far as they are known
	// (nil: unknown): D7 reads their duplex.
	Ends []*Interface
}

// D7's thresholds.
const (
	// collapseRatio: a direction this many times slower than the other
	// has collapsed (a duplex mismatch does that to the data flowing
	// from the full-duplex end).
	collapseRatio = 10
	// asymRatio: directions whose rates differ by more than this are
	// asymmetric.
	asymRatio = 1.5
	// heavyLoss: the slow direction lost this many segments per 100: it
	// met a drop on the path, not a busy host's noise (which moves the
	// rates of two runs but loses nothing). Below collapseRatio, only
	// this tells a path's asymmetry from a busy host's.
	heavyLoss = 2
	// standingQueue: a slow direction whose TCP stood this many
	// milliseconds above the path's RTT, and queueFactor times more than
	// the fast direction's, filled a queue at its bottleneck: a shaper or
	// a slower link that way (a busy host delays both directions alike,
	// and by less).
	standingQueue = 2.0
	queueFactor   = 4
)

// queued says whether the slow direction built a standing queue the fast
// one did not.
func queued(slow, fast Direction) bool {
	return slow.QueueMs >= standingQueue && fast.QueueMs >= 0 && slow.QueueMs >= queueFactor*max(fast.QueueMs, standingQueue/queueFactor)
}

// duplexEvidence is the link evidence of a duplex mismatch in p: an end
// running half duplex (the end's own state, or D1, D2, D5), a MAC that
// behaves half duplex while it reports full (D4 collisions, D13
// deferrals), late collisions (D3, the half side's counter), and receive
// errors (D6: CRC errors and runts, the full side's counter). A
// half-duplex end whose partner advertises no full-duplex mode is on a
// hub, where half duplex is right: no evidence.
func duplexEvidence(p Path) (half, counters []string) {
	add := func(l *[]string, s string) {
		if !slices.Contains(*l, s) {
			*l = append(*l, s)
		}
	}
	for _, ifc := range p.Ends {
		if ifc == nil || ifc.Link.Duplex != "half" {
			continue
		}
		if c, _ := (Input{Iface: ifc}).halfCause(); c != causeHalfOnly && !onHub(p.Findings, ifc.Name) {
			add(&half, ifc.Name+" runs half duplex")
		}
	}
	for _, f := range p.Findings {
		if onHub(p.Findings, f.Iface) && f.Rule != finding.D3 && f.Rule != finding.D6 {
			continue
		}
		switch f.Rule {
		case finding.D1, finding.D2, finding.D5:
			add(&half, string(f.Rule)+" on "+f.Iface)
		case finding.D4, finding.D13:
			add(&half, string(f.Rule)+" on "+f.Iface+" (a half-duplex MAC)")
		case finding.D3:
			add(&counters, "late collisions (D3) on "+f.Iface)
		case finding.D6:
			add(&counters, "receive errors (D6) on "+f.Iface)
		}
	}
	return half, counters
}

// DiagnosePath is rule D7: the two directions of a path compared.
//
// A duplex mismatch (ERROR) needs link evidence (see duplexEvidence)
// besides a collapse: one direction more than 10 times slower, with its
// own retransmits or the evidence's error counters. Both ends at full
// duplex with no late collisions, CRC errors or runts rule it out,
// whatever the retransmits: then a rate limit, a queue or a slower link
// on the way is as likely, and D7 reports the asymmetry (WARN), with each
// direction's rate. It does so for a ratio over 1.5 when the slow
// direction lost at least 2% of its segments, and for any ratio of 10 or
// more.
func DiagnosePath(p Path) []finding.Finding {
	if !p.SamePath || p.Forward.Bps <= 0 || p.Reverse.Bps <= 0 {
		return nil
	}
	fast, slow, fastName, slowName := p.Forward, p.Reverse, "forward", "reverse"
	if slow.Bps > fast.Bps {
		fast, slow, fastName, slowName = slow, fast, slowName, fastName
	}
	ratio := fast.Bps / slow.Bps
	if ratio <= asymRatio {
		return nil
	}
	half, counters := duplexEvidence(p)
	ev := fmt.Sprintf("forward %s, reverse %s: the %s direction is %s slower", rateWords(p.Forward.Bps), rateWords(p.Reverse.Bps), slowName, ratioWords(ratio))
	// A duplex mismatch collapses the slow direction with its own
	// retransmits: those of the fast direction (a busy host's, a queue's)
	// are no evidence of it.
	lossy := slow.RetransPct > 1
	if slow.RetransPct >= 0 {
		ev += fmt.Sprintf(", %.1f%% of its segments lost", slow.RetransPct)
	}
	if fast.RetransPct >= 0 {
		ev += fmt.Sprintf(" (the %s direction %.1f%%)", fastName, fast.RetransPct)
	}
	link := append(append([]string(nil), half...), counters...)
	if ratio >= collapseRatio && len(link) > 0 && (lossy || len(counters) > 0) {
		ev += "; link evidence: " + strings.Join(link, ", ")
		summary := fmt.Sprintf("asymmetric collapse: the %s direction is %s slower, with an end at half duplex or its counters (late collisions, CRC errors): a duplex mismatch", slowName, ratioWords(ratio))
		fix := "data flowing from the full-duplex end to the half-duplex end collapses: find the end running half duplex and make both ends autonegotiate (or force both to full duplex)"
		if len(half) == 0 {
			// Receive errors alone: a bad cable makes them too.
			summary = fmt.Sprintf("asymmetric collapse: the %s direction is %s slower, with receive errors: a duplex mismatch (the far end at half duplex) or a bad cable", slowName, ratioWords(ratio))
			fix = "tell them apart at the far end of the link counting the errors: at half duplex it counts late collisions (ethtool -S, or the switch's interface counters), a bad cable does not; then make both ends autonegotiate, or replace the cable"
		}
		return []finding.Finding{{Rule: finding.D7, Severity: finding.Error, Summary: summary, Evidence: ev, Fix: fix}}
	}
	queue := queued(slow, fast)
	if ratio < collapseRatio && slow.RetransPct < heavyLoss && !queue {
		return nil
	}
	if queue {
		ev += fmt.Sprintf("; TCP's RTT stood %s above the path's own in the %s direction (a queue at its bottleneck), %s in the %s", msWords(slow.QueueMs), slowName, msWords(fast.QueueMs), fastName)
	}
	switch {
	case len(link) > 0:
		ev += "; link evidence (" + strings.Join(link, ", ") + ") but no collapse with losses: not the signature of a duplex mismatch"
	case fullBoth(p.Ends):
		ev += "; no link errors counted (no late collisions, CRC errors or runts) and both ends at full duplex: not a duplex mismatch"
	default:
		ev += "; no link errors counted (no late collisions, CRC errors or runts) and no end at half duplex: not a duplex mismatch"
	}
	summary := fmt.Sprintf("asymmetric path: the %s direction is %s slower than the %s (%s against %s)", slowName, ratioWords(ratio), fastName, rateWords(slow.Bps), rateWords(fast.Bps))
	if queue && slow.RetransPct < heavyLoss {
		summary += fmt.Sprintf(", behind a queue: a shaper or a slower link that way, at about %s", rateWords(slow.Bps))
	}
	return []finding.Finding{{Rule: finding.D7, Severity: finding.Warn,
		Summary:  summary,
		Evidence: ev,
		Fix:      fmt.Sprintf("the %s direction stops at %s: look that way for a rate limit (a shaper or a policer on a router), a slower link, or a busy end receiving it; the findings beside this one may name it", slowName, rateWords(slow.Bps))}}
}

// fullBoth says both ends are known and run full duplex.
func fullBoth(ends []*Interface) bool {
	n := 0
	for _, ifc := range ends {
		if ifc == nil || ifc.Link.Duplex != "full" {
			return false
		}
		n++
	}
	return n == 2
}

// rateWords is a rate in a finding: units.Bits.
func rateWords(bps float64) string { return units.Bits(bps) }

// ratioWords is a ratio with at most 3 significant digits and ×: 1.6×,
// 12×, 340×; larger ones in thousands (the rates say the rest).
func ratioWords(r float64) string {
	if r >= 1000 {
		return "over 1000×"
	}
	return units.Sig3Short(r) + "×"
}

// keySource says which raw counters a key counter came from.
func keySource(ifc *Interface, name string) string {
	if ifc.KeySources != nil {
		return ifc.KeySources[name]
	}
	return ""
}

func common(a, b []string) []string {
	var out []string
	for _, m := range a {
		if slices.Contains(b, m) {
			out = append(out, m)
		}
	}
	return out
}

// modeSpeed returns the speed in Mb/s of a link-mode name ("1000baseT_Full"),
// 0 for non-speed bits (Autoneg, TP, Pause, FEC).
func modeSpeed(mode string) int {
	i := strings.Index(mode, "base")
	if i <= 0 {
		return 0
	}
	v, err := strconv.Atoi(mode[:i])
	if err != nil {
		return 0
	}
	return v
}

func speedWords(mbps *int) string {
	if mbps == nil {
		return "unknown"
	}
	v := *mbps
	switch {
	case v >= 1000 && v%1000 == 0:
		return strconv.Itoa(v/1000) + "G"
	default:
		return strconv.Itoa(v) + "M"
	}
}

func boolWords(b *bool, yes, no string) string {
	if b == nil {
		return "unknown"
	}
	if *b {
		return yes
	}
	return no
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// msWords is a time in milliseconds with at most 3 significant digits.
func msWords(ms float64) string {
	switch {
	case ms >= 100:
		return fmt.Sprintf("%.0f ms", ms)
	case ms >= 10:
		return fmt.Sprintf("%.1f ms", ms)
	case ms >= 1:
		return fmt.Sprintf("%.2f ms", ms)
	}
	return fmt.Sprintf("%.0f µs", ms*1000)
}
