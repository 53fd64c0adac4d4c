package nicinfo

import (
	"fmt"
	"slices"
	"strings"
)

// Match is one interface found in two captures of the same machine, under
// its name in each. A card keeps its permanent MAC and its bus address
// across boots while its name may not (the kernel hands out ethN in probe
// order, which a new kernel or module order changes), so captures are
// matched by those, and by name only for interfaces without them.
type Match struct {
	Before string `json:"before"`
	After  string `json:"after"`
	// By is what the two share: "permanent MAC 00:1b:21:aa:bb:cc and bus
	// 0000:00:19.0", "bus 0000:03:00.0 (...)", or "name" for an interface
	// with no hardware identity (lo, veth, bridges).
	By string `json:"by"`
	// BeforeNaming is how the first capture's name had been assigned
	// (Naming.Kind: enumerated, renamed, ...).
	BeforeNaming string `json:"before_naming,omitempty"`
	// OldNameNow says which interface has the first capture's name in the
	// second ("the igb at 0000:03:00.0 (eth1 before)"), when one has: a
	// configuration naming it now configures another card.
	OldNameNow string `json:"old_name_now,omitempty"`
}

// Renamed says the interface has another name in the second capture.
func (m Match) Renamed() bool { return m.Before != m.After }

// Pairing is the interfaces of two captures of one machine, matched.
type Pairing struct {
	before, after *Source
	// Matches are the interfaces found in both, in the second capture's
	// ifindex order.
	Matches []Match
	// Gone are the first capture's interfaces not in the second; New the
	// second's not in the first.
	Gone, New []string

	beforeNames, afterNames []string
	ifcs                    map[string]*Interface // "b/NAME" and "a/NAME"
}

// Pair matches the interfaces of two captures of the same machine: by
// permanent MAC (or a MAC the hardware owns), then by bus address where
// one capture lacks the MAC, then by name for what has neither.
func Pair(before, after *Source) (*Pairing, error) {
	bs, err := inspectAll(before)
	if err != nil {
		return nil, err
	}
	as, err := inspectAll(after)
	if err != nil {
		return nil, err
	}
	p := &Pairing{before: before, after: after, ifcs: map[string]*Interface{}}
	for _, b := range bs {
		p.beforeNames = append(p.beforeNames, b.Name)
		p.ifcs["b/"+b.Name] = b
	}
	for _, a := range as {
		p.afterNames = append(p.afterNames, a.Name)
		p.ifcs["a/"+a.Name] = a
	}
	p.Matches, p.Gone, p.New = matchInterfaces(bs, as)
	return p, nil
}

// matchInterfaces pairs the interfaces of two captures (bs, the first;
// as, the second), as Pair does.
func matchInterfaces(bs, as []*Interface) (matches []Match, gone, added []string) {
	of := make([]int, len(as)) // the before index each after interface matched, or -1
	by := make([]string, len(as))
	for j := range of {
		of[j] = -1
	}
	used := make([]bool, len(bs))
	try := func(same func(b, a *Interface) string) {
		for j, a := range as {
			if of[j] >= 0 {
				continue
			}
			for i, b := range bs {
				if used[i] {
					continue
				}
				if w := same(b, a); w != "" {
					of[j], by[j], used[i] = i, w, true
					break
				}
			}
		}
	}
	try(func(b, a *Interface) string { // the same MAC burnt into the card
		mb, ma := hwMAC(b), hwMAC(a)
		if mb == "" || mb != ma {
			return ""
		}
		switch {
		case b.BusInfo != "" && b.BusInfo == a.BusInfo:
			return "permanent MAC " + ma + " and bus " + a.BusInfo
		case b.BusInfo != "" && a.BusInfo != "":
			return "permanent MAC " + ma + " (the bus moved from " + b.BusInfo + " to " + a.BusInfo + ": another slot or port)"
		}
		return "permanent MAC " + ma
	})
	try(func(b, a *Interface) string { // the same slot, where a capture lacks the MAC
		if b.Virtual || a.Virtual || a.BusInfo == "" || b.BusInfo != a.BusInfo || (hwMAC(b) != "" && hwMAC(a) != "") {
			return ""
		}
		return "bus " + a.BusInfo + " (no permanent MAC in both captures to compare)"
	})
	try(func(b, a *Interface) string { // no identity that tells them apart
		if b.Name != a.Name || (hwMAC(b) != "" && hwMAC(a) != "") || (!b.Virtual && !a.Virtual && b.BusInfo != "" && a.BusInfo != "") {
			return ""
		}
		return "name"
	})
	for j, a := range as {
		if of[j] < 0 {
			added = append(added, a.Name)
			continue
		}
		b := bs[of[j]]
		m := Match{Before: b.Name, After: a.Name, By: by[j], BeforeNaming: b.Naming.Kind}
		if m.Renamed() {
			for k, o := range as {
				if o.Name != b.Name {
					continue
				}
				m.OldNameNow = describeCard(o)
				if of[k] >= 0 {
					m.OldNameNow += " (" + bs[of[k]].Name + " before)"
				} else {
					m.OldNameNow += " (not in the first capture)"
				}
			}
		}
		matches = append(matches, m)
	}
	for i, b := range bs {
		if !used[i] {
			gone = append(gone, b.Name)
		}
	}
	return matches, gone, added
}

// inspectAll inspects every interface of s; one that cannot be read is
// kept by name only (it then matches by name), so that one bad interface
// does not stop the analysis of the others.
func inspectAll(s *Source) ([]*Interface, error) {
	names, err := s.Names()
	if err != nil {
		return nil, err
	}
	out := make([]*Interface, 0, len(names))
	for _, n := range names {
		ifc, err := s.Inspect(n)
		if err != nil {
			ifc = &Interface{Name: n}
		}
		out = append(out, ifc)
	}
	return out, nil
}

// hwMAC is the MAC the card owns: the permanent one the driver reports, or
// the current one when the kernel says it is permanent; "" when neither.
func hwMAC(i *Interface) string {
	if i.Virtual {
		return ""
	}
	owned := func(m string) bool { return m != "" && m != "00:00:00:00:00:00" }
	switch {
	case owned(i.PermMAC):
		return strings.ToLower(i.PermMAC)
	case i.MACAssign == "permanent" && owned(i.MAC):
		return strings.ToLower(i.MAC)
	}
	return ""
}

// describeCard names an interface's hardware: "the igb at 0000:03:00.0".
func describeCard(i *Interface) string {
	s := "the " + orDash(i.Driver)
	if i.Driver == "" {
		s = "an interface"
	}
	if i.BusInfo != "" {
		s += " at " + i.BusInfo
	}
	return s
}

// Find returns the match of the interface named name in the first capture
// or, when the first capture has no interface of that name, in the second.
// It fails with an error wrapping ErrNoInterface that says which capture
// lacks it.
func (p *Pairing) Find(name string) (Match, error) {
	if slices.Contains(p.beforeNames, name) {
		for _, m := range p.Matches {
			if m.Before == name {
				return m, nil
			}
		}
		why := ""
		if slices.Contains(p.afterNames, name) {
			why = " (" + name + " there is another card: " + describeCard(p.ifcs["a/"+name]) + ")"
		}
		return Match{}, lineError{fmt.Errorf("nicinfo: interface %q of %s is not in %s%s: %w", name, p.before.desc, p.after.desc, why, ErrNoInterface)}
	}
	for _, m := range p.Matches {
		if m.After == name {
			return m, nil
		}
	}
	if slices.Contains(p.afterNames, name) {
		return Match{}, lineError{fmt.Errorf("nicinfo: interface %q of %s is not in %s: %w", name, p.after.desc, p.before.desc, ErrNoInterface)}
	}
	return Match{}, lineError{fmt.Errorf("nicinfo: interface %q in %s: %w", name, p.before.desc, ErrNoInterface)}
}

// Analyze diagnoses one matched interface: its state in the second
// capture, its counter changes between the two, and the findings, with
// D25 when it was renamed.
func (p *Pairing) Analyze(m Match) (*Result, error) {
	s0, err := p.before.Snapshot(m.Before)
	if err != nil {
		return nil, err
	}
	s1, err := p.after.Snapshot(m.After)
	if err != nil {
		return nil, err
	}
	restarted := p.restarted(s0, s1)
	if restarted != "" {
		s0 = fromZero(s1)
	}
	s0.Name = s1.Name // the same card, matched by identity
	d, err := Delta(s0, s1)
	if err != nil {
		return nil, err
	}
	d.Restarted = restarted
	ifc, err := p.after.Inspect(m.After)
	if err != nil {
		return nil, err
	}
	in := Input{Iface: ifc, Delta: d}
	r := &Result{Interface: ifc, Delta: d}
	if m.Renamed() {
		in.Renamed = &m
		r.Renamed = &m
	}
	r.Findings = Diagnose(in)
	return r, nil
}

// restarted says why the counters of the second snapshot cannot be
// subtracted from the first's ("" when they can): a reboot between the
// captures (another boot id or kernel), or another ifindex (the interface
// was recreated: a driver reload).
func (p *Pairing) restarted(s0, s1 *Snapshot) string {
	b, a := p.before, p.after
	kernel := ""
	if b.kernel != "" && a.kernel != "" && b.kernel != a.kernel {
		kernel = "kernel " + b.kernel + " → " + a.kernel
	}
	switch {
	case b.boot != "" && a.boot != "" && b.boot != a.boot:
		if kernel != "" {
			return "the machine rebooted between the captures (another boot id, " + kernel + ")"
		}
		return "the machine rebooted between the captures (another boot id)"
	case kernel != "":
		return "the machine rebooted between the captures (" + kernel + ")"
	case s0.Index != 0 && s1.Index != 0 && s0.Index != s1.Index:
		return fmt.Sprintf("the interface was recreated between the captures (ifindex %d → %d: a driver reload or a reboot)", s0.Index, s1.Index)
	}
	return ""
}

// fromZero is the snapshot an interface started from when it was created:
// every counter of s at zero, carrier changes unknown.
func fromZero(s *Snapshot) *Snapshot {
	z := &Snapshot{Name: s.Name, Index: s.Index, Driver: s.Driver, Time: s.Time}
	zero := func(m map[string]uint64) map[string]uint64 {
		if m == nil {
			return nil
		}
		out := make(map[string]uint64, len(m))
		for k := range m {
			out[k] = 0
		}
		return out
	}
	z.Counters, z.DriverStats = zero(s.Counters), zero(s.DriverStats)
	return z
}

// Analyze compares two views of the same system (two captures, for
// `--sysfs DIR --after DIR2`). With after nil only the state rules run on
// before. With after, name is the interface's name in before (or, when
// before has none of that name, in after), and the card is followed to its
// name in after by Pair: a renamed card is analyzed across the rename.
func Analyze(before, after *Source, name string) (*Result, error) {
	if after == nil {
		ifc, err := before.Inspect(name)
		if err != nil {
			return nil, err
		}
		return &Result{Interface: ifc, Findings: Diagnose(Input{Iface: ifc})}, nil
	}
	p, err := Pair(before, after)
	if err != nil {
		return nil, err
	}
	m, err := p.Find(name)
	if err != nil {
		return nil, err
	}
	return p.Analyze(m)
}
