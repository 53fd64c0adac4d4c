package nicinfo

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/internal/safetext"
)

// WriteTable writes one line per interface: name, driver, bus, speed, duplex,
// autonegotiation, link and naming.
func WriteTable(w io.Writer, ifcs []*Interface) error {
	tw := tabwriter.NewWriter(safetext.Writer(w), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IFACE\tIDX\tDRIVER\tBUS\tSPEED\tDUPLEX\tAUTONEG\tLINK\tNAMING")
	for _, i := range ifcs {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			i.Name, i.Index, orDash(i.Driver), orDash(i.BusInfo),
			speedCell(i.Link.SpeedMbps), orDash(i.Link.Duplex), boolWords(i.Link.Autoneg, "on", "off"),
			LinkState(i), i.Naming.Kind)
	}
	return tw.Flush()
}

// LinkState is a one-word link state: up, no-carrier, admin-down or the operstate.
func LinkState(i *Interface) string {
	switch {
	case i.AdminUp != nil && !*i.AdminUp:
		return "admin-down"
	case i.Carrier != nil && !*i.Carrier:
		return "no-carrier"
	case i.Carrier != nil && *i.Carrier:
		if i.OperState != "" && i.OperState != "up" && i.OperState != "unknown" {
			return i.OperState
		}
		return "up"
	}
	return orUnknown(i.OperState)
}

func speedCell(mbps *int) string {
	if mbps == nil {
		return "-"
	}
	return speedWords(mbps)
}

// Summary is the one-line NIC description printed with every result:
// "eth0: e1000 at 0000:00:0b.0, 100M/half, autoneg on, link up, mtu 1500, name enumerated".
func Summary(i *Interface) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", i.Name, orDash(i.Driver))
	if i.BusInfo != "" {
		fmt.Fprintf(&b, " at %s", i.BusInfo)
	}
	if i.Link.SpeedMbps == nil && i.Link.Duplex == "" {
		b.WriteString(", speed/duplex unknown")
	} else {
		fmt.Fprintf(&b, ", %s/%s", speedWords(i.Link.SpeedMbps), orUnknown(i.Link.Duplex))
	}
	fmt.Fprintf(&b, ", autoneg %s, link %s", boolWords(i.Link.Autoneg, "on", "off"), LinkState(i))
	if i.MTU != nil {
		fmt.Fprintf(&b, ", mtu %d", *i.MTU)
	}
	fmt.Fprintf(&b, ", name %s", i.Naming.Kind)
	if !i.Naming.Stable && i.Naming.Kind == "enumerated" {
		b.WriteString(" (may change between boots)")
	}
	return safetext.Escape(b.String())
}

// WriteReport writes the full report of one interface. Counters that are zero
// are summarised, not listed, when there are many of them.
func WriteReport(w io.Writer, i *Interface) error {
	w = safetext.Writer(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, format string, a ...any) { fmt.Fprintf(tw, "  %s\t"+format+"\n", append([]any{k}, a...)...) }
	fmt.Fprintf(tw, "%s (ifindex %d)\n", i.Name, i.Index)
	at := "unknown"
	if i.Naming.AssignType != nil {
		at = strconv.Itoa(*i.Naming.AssignType)
	}
	row("naming", "%s [name_assign_type %s]", i.Naming.Words, at)
	if len(i.AltNames) > 0 {
		row("altnames", "%s", strings.Join(i.AltNames, " "))
	}
	for _, k := range slices.Sorted(maps.Keys(i.Naming.Udev)) {
		row("udev", "%s=%s", k, i.Naming.Udev[k])
	}
	mac := orUnknown(i.MAC)
	if i.MACAssign != "" {
		mac += " (" + i.MACAssign + ")"
	}
	switch {
	case i.PermMAC == "":
		mac += ", permanent MAC unknown"
	case i.PermMAC != i.MAC:
		mac += ", permanent " + i.PermMAC + " (differs)"
	default:
		mac += ", permanent " + i.PermMAC
	}
	row("mac", "%s", mac)
	drv := orUnknown(i.Driver)
	if i.DriverVersion != "" {
		drv += " version " + i.DriverVersion
	}
	if i.Firmware != "" {
		drv += ", firmware " + i.Firmware
	}
	row("driver", "%s", drv)
	bus := orDash(i.BusInfo)
	if i.Bus != "" {
		bus += " (" + i.Bus + ")"
	}
	if i.Virtual {
		bus += " virtual"
	}
	if i.PeerIndex != nil {
		bus += ", peer/parent ifindex " + strconv.Itoa(*i.PeerIndex)
	}
	row("bus", "%s", bus)
	if p := i.PCI; p != nil {
		s := fmt.Sprintf("%s:%s", strings.TrimPrefix(p.Vendor, "0x"), strings.TrimPrefix(p.Device, "0x"))
		if p.SubsystemVendor != "" {
			s += fmt.Sprintf(" subsystem %s:%s", strings.TrimPrefix(p.SubsystemVendor, "0x"), strings.TrimPrefix(p.SubsystemDevice, "0x"))
		}
		if p.Class != "" {
			s += " class " + p.Class
		}
		row("pci", "%s at %s", s, p.Address)
	}
	state := LinkState(i) + ", operstate " + orUnknown(i.OperState)
	if i.Link.Detected != nil {
		state += ", link detected " + boolWords(i.Link.Detected, "yes", "no")
	}
	row("link", "%s", state)
	if i.CarrierChanges != nil {
		s := strconv.FormatUint(*i.CarrierChanges, 10)
		if i.CarrierUp != nil && i.CarrierDown != nil {
			s += fmt.Sprintf(" (up %d, down %d)", *i.CarrierUp, *i.CarrierDown)
		}
		row("carrier changes", "%s", s)
	}
	sp := fmt.Sprintf("%s, duplex %s, autoneg %s", speedWords(i.Link.SpeedMbps), orUnknown(i.Link.Duplex), boolWords(i.Link.Autoneg, "on", "off"))
	if i.Link.Port != "" {
		sp += ", port " + i.Link.Port
	}
	if i.Link.Source != "" {
		sp += " [" + i.Link.Source + "]"
	}
	row("speed", "%s", sp)
	if i.Link.ModesKnown {
		row("supported", "%s", modesCell(i.Link.Supported))
		row("advertised", "%s", modesCell(i.Link.Advertised))
		row("partner", "%s", modesCell(i.Link.Partner))
	} else {
		row("link modes", "unknown (no ethtool link settings)")
	}
	if i.MTU != nil {
		row("mtu", "%d", *i.MTU)
	}
	q := fmt.Sprintf("rx %s, tx %s", intCell(i.Queues.RX), intCell(i.Queues.TX))
	if c := i.Queues.Channels; c != nil {
		q += fmt.Sprintf("; channels rx %d/%d tx %d/%d other %d/%d combined %d/%d", c.RX, c.MaxRX, c.TX, c.MaxTX, c.Other, c.MaxOther, c.Combined, c.MaxCombined)
	}
	row("queues", "%s", q)
	if r := i.Rings; r != nil {
		row("rings", "rx %d (max %d), tx %d (max %d)", r.RX, r.MaxRX, r.TX, r.MaxTX)
	}
	if len(i.Offloads) > 0 {
		var on, off []string
		for _, k := range keyOffloads {
			if v, ok := i.Offloads[k]; ok {
				if v {
					on = append(on, k)
				} else {
					off = append(off, k)
				}
			}
		}
		row("offloads on", "%s", strings.Join(on, " "))
		if len(off) > 0 {
			row("offloads off", "%s", strings.Join(off, " "))
		}
	}
	if x := i.XDP; x != nil {
		if x.Attached {
			row("xdp", "attached, mode %s, prog id %d", orUnknown(x.Mode), x.ProgID)
		} else {
			row("xdp", "none")
		}
	}
	for _, k := range keyNames {
		if v, ok := i.Key[k]; ok {
			row("key "+k, "%d\t[%s]", v, i.KeySources[k])
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := writeCounters(w, "counters", i.Counters); err != nil {
		return err
	}
	if err := writeCounters(w, "driver stats (ethtool -S)", i.DriverStats); err != nil {
		return err
	}
	if len(i.Errors) > 0 {
		// Group by reason: "operation not supported: channels, ring".
		byReason := map[string][]string{}
		for _, k := range slices.Sorted(maps.Keys(i.Errors)) {
			r := i.Errors[k]
			if _, after, ok := strings.Cut(r, "SIOCETHTOOL: "); ok {
				r = after
			}
			byReason[r] = append(byReason[r], k)
		}
		fmt.Fprintln(w, "  not available:")
		for _, r := range slices.Sorted(maps.Keys(byReason)) {
			fmt.Fprintf(w, "    %s: %s\n", r, strings.Join(byReason[r], ", "))
		}
	}
	return nil
}

// listAllMax: counter sets larger than this list only their nonzero entries.
const listAllMax = 64

func writeCounters(w io.Writer, title string, m map[string]uint64) error {
	if m == nil {
		_, err := fmt.Fprintf(w, "  %s: none\n", title)
		return err
	}
	keys := slices.Sorted(maps.Keys(m))
	shown := keys
	note := ""
	if len(keys) > listAllMax {
		shown = nil
		for _, k := range keys {
			if m[k] != 0 {
				shown = append(shown, k)
			}
		}
		note = fmt.Sprintf(", %d zero not shown (-J lists all)", len(keys)-len(shown))
	}
	fmt.Fprintf(w, "  %s: %d%s\n", title, len(keys), note)
	return writeAligned(w, shown, func(k string) string { return strconv.FormatUint(m[k], 10) })
}

// writeAligned writes "    name   value" lines, names left, values right.
func writeAligned(w io.Writer, keys []string, val func(string) string) error {
	nw, vw := 0, 0
	for _, k := range keys {
		nw = max(nw, len(k))
		vw = max(vw, len(val(k)))
	}
	for _, k := range keys {
		if _, err := fmt.Fprintf(w, "    %-*s  %*s\n", nw, k, vw, val(k)); err != nil {
			return err
		}
	}
	return nil
}

func modesCell(m []string) string {
	if len(m) == 0 {
		return "none"
	}
	return strings.Join(m, " ")
}

func intCell(p *int) string {
	if p == nil {
		return "-"
	}
	return strconv.Itoa(*p)
}

// WriteDelta writes the nonzero counter changes and any resets.
func WriteDelta(w io.Writer, d *Deltas) error {
	w = safetext.Writer(w)
	switch {
	case d.Restarted != "":
		fmt.Fprintf(w, "%s: counts since its counters restarted from zero: %s\n", d.Name, d.Restarted)
	case d.Interval <= 0:
		fmt.Fprintf(w, "%s: counter changes (over an unknown time: a capture without its time)\n", d.Name)
	default:
		fmt.Fprintf(w, "%s: counter changes over %s\n", d.Name, d.Interval.Round(1e6))
	}
	nz := d.NonZero()
	vals := map[string]string{}
	var labels []string
	for _, k := range nz {
		src, name, _ := strings.Cut(k, "/")
		v := d.Counters[name]
		label := name
		if src == "driver" {
			v = d.DriverStats[name]
			label += " (-S)"
		}
		labels = append(labels, label)
		vals[label] = "+" + strconv.FormatUint(v, 10)
	}
	if c := d.CarrierChanges; c != nil && *c > 0 {
		labels = append(labels, "carrier_changes")
		vals["carrier_changes"] = "+" + strconv.FormatUint(*c, 10)
	}
	if err := writeAligned(w, labels, func(k string) string { return vals[k] }); err != nil {
		return err
	}
	if len(nz) == 0 {
		fmt.Fprintln(w, "    no counter changed")
	}
	if len(d.Resets) > 0 {
		fmt.Fprintf(w, "    reset (went backwards, not subtracted): %s\n", strings.Join(d.Resets, ", "))
	}
	return nil
}

// WriteFindings writes findings, most serious first as Diagnose orders them.
func WriteFindings(w io.Writer, fs []finding.Finding) error {
	w = safetext.Writer(w)
	if len(fs) == 0 {
		_, err := fmt.Fprintln(w, "diagnosis: no rule fired")
		return err
	}
	for _, f := range fs {
		who := string(f.Rule)
		if f.Iface != "" {
			who += " " + f.Iface
		}
		if _, err := fmt.Fprintf(w, "%-5s %s: %s\n      evidence: %s\n      fix: %s\n", f.Severity, who, f.Summary, f.Evidence, f.Fix); err != nil {
			return err
		}
	}
	return nil
}

// WriteAdvice writes naming advice: the .link file, the legacy rule and notes.
func WriteAdvice(w io.Writer, a *NamingAdvice) error {
	w = safetext.Writer(w)
	_, err := fmt.Fprintf(w, "Put this in %s:\n\n%s\nLegacy udev equivalent (%s):\n\n%s\n", a.LinkPath, a.LinkFile, a.UdevPath, a.UdevRule)
	if err != nil {
		return err
	}
	for _, n := range a.Notes {
		if _, err := fmt.Fprintf(w, "  * %s\n", n); err != nil {
			return err
		}
	}
	return nil
}
