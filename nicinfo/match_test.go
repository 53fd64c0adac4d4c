package nicinfo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func loadPair(t *testing.T, before, after string) *Pairing {
	t.Helper()
	b, err := Load(filepath.Join("testdata", before))
	if err != nil {
		t.Fatal(err)
	}
	a, err := Load(filepath.Join("testdata", after))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Pair(b, a)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The three ports of the kernel-swap fixture are each followed to their new
// name by permanent MAC and bus address, none reported gone or new.
func TestPairKernelSwap(t *testing.T) {
	p := loadPair(t, "rename-eth0-eth2/before", "rename-eth0-eth2/after")
	want := []Match{
		{Before: "eth1", After: "eth0", By: "permanent MAC 00:1b:21:8e:40:aa and bus 0000:03:00.0", BeforeNaming: "enumerated", OldNameNow: "the igb at 0000:03:00.1 (eth2 before)"},
		{Before: "eth2", After: "eth1", By: "permanent MAC 00:1b:21:8e:40:ab and bus 0000:03:00.1", BeforeNaming: "enumerated", OldNameNow: "the e1000e at 0000:00:19.0 (eth0 before)"},
		{Before: "eth0", After: "eth2", By: "permanent MAC 00:25:90:3a:5c:10 and bus 0000:00:19.0", BeforeNaming: "enumerated", OldNameNow: "the igb at 0000:03:00.0 (eth1 before)"},
	}
	if diff := cmp.Diff(want, p.Matches); diff != "" {
		t.Errorf("matches (-want +got):\n%s", diff)
	}
	if len(p.Gone) != 0 || len(p.New) != 0 {
		t.Errorf("gone %v, new %v; want none", p.Gone, p.New)
	}
	// A name is looked up in the first capture, then in the second.
	for _, tc := range []struct{ name, before, after string }{
		{"eth0", "eth0", "eth2"}, {"eth2", "eth2", "eth1"},
	} {
		m, err := p.Find(tc.name)
		if err != nil || m.Before != tc.before || m.After != tc.after {
			t.Errorf("Find(%q) = %+v, %v; want %s → %s", tc.name, m, err, tc.before, tc.after)
		}
	}
	if _, err := p.Find("eth9"); !errors.Is(err, ErrNoInterface) {
		t.Errorf("Find(eth9) = %v, want ErrNoInterface", err)
	}
}

// Two different machines share no card: nothing is matched by name alone
// when the MACs say otherwise.
func TestPairDifferentMachines(t *testing.T) {
	p := loadPair(t, "virtio/before", "tulip-enumerated/before")
	if len(p.Matches) != 0 {
		t.Errorf("matches %+v, want none", p.Matches)
	}
	if diff := cmp.Diff([]string{"lo", "eth0"}, p.Gone); diff != "" {
		t.Errorf("gone (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"eth1"}, p.New); diff != "" {
		t.Errorf("new (-want +got):\n%s", diff)
	}
}

func TestMatchInterfaces(t *testing.T) {
	card := func(name, mac, assign, perm, bus string) *Interface {
		return &Interface{Name: name, MAC: mac, MACAssign: assign, PermMAC: perm, BusInfo: bus, Driver: "igb", Naming: Naming{Kind: "enumerated"}}
	}
	virt := func(name string) *Interface {
		return &Interface{Name: name, Virtual: true, MAC: "02:00:00:00:00:01", MACAssign: "random", Naming: Naming{Kind: "user"}}
	}
	for _, tc := range []struct {
		name        string
		bs, as      []*Interface
		want        []Match
		gone, added []string
	}{
		{"permanent MAC from ethtool, names swapped",
			[]*Interface{card("eth0", "00:1b:21:00:00:01", "set", "00:1b:21:00:00:01", "0000:03:00.0"), card("eth1", "00:1b:21:00:00:02", "set", "00:1b:21:00:00:02", "0000:03:00.1")},
			[]*Interface{card("eth0", "00:1b:21:00:00:02", "set", "00:1b:21:00:00:02", "0000:03:00.1"), card("eth1", "00:1b:21:00:00:01", "set", "00:1b:21:00:00:01", "0000:03:00.0")},
			[]Match{
				{Before: "eth1", After: "eth0", By: "permanent MAC 00:1b:21:00:00:02 and bus 0000:03:00.1", BeforeNaming: "enumerated", OldNameNow: "the igb at 0000:03:00.0 (eth0 before)"},
				{Before: "eth0", After: "eth1", By: "permanent MAC 00:1b:21:00:00:01 and bus 0000:03:00.0", BeforeNaming: "enumerated", OldNameNow: "the igb at 0000:03:00.1 (eth1 before)"},
			}, nil, nil},
		{"no ethtool: a hardware MAC from sysfs, case-insensitive",
			[]*Interface{card("eth0", "00:1B:21:00:00:01", "permanent", "", "0000:03:00.0")},
			[]*Interface{card("lan0", "00:1b:21:00:00:01", "permanent", "", "0000:03:00.0")},
			[]Match{{Before: "eth0", After: "lan0", By: "permanent MAC 00:1b:21:00:00:01 and bus 0000:03:00.0", BeforeNaming: "enumerated"}}, nil, nil},
		{"the card moved to another slot",
			[]*Interface{card("enp3s0", "", "", "00:1b:21:00:00:01", "0000:03:00.0")},
			[]*Interface{card("enp4s0", "", "", "00:1b:21:00:00:01", "0000:04:00.0")},
			[]Match{{Before: "enp3s0", After: "enp4s0", By: "permanent MAC 00:1b:21:00:00:01 (the bus moved from 0000:03:00.0 to 0000:04:00.0: another slot or port)", BeforeNaming: "enumerated"}}, nil, nil},
		{"random MACs: the bus address",
			[]*Interface{card("eth0", "02:11:22:33:44:55", "random", "", "0000:03:00.0")},
			[]*Interface{card("eth1", "02:66:77:88:99:aa", "random", "", "0000:03:00.0")},
			[]Match{{Before: "eth0", After: "eth1", By: "bus 0000:03:00.0 (no permanent MAC in both captures to compare)", BeforeNaming: "enumerated"}}, nil, nil},
		{"another card in the same slot under the same name",
			[]*Interface{card("eth0", "", "", "00:1b:21:00:00:01", "0000:03:00.0")},
			[]*Interface{card("eth0", "", "", "00:1b:21:00:00:99", "0000:03:00.0")},
			nil, []string{"eth0"}, []string{"eth0"}},
		{"virtual interfaces by name",
			[]*Interface{virt("lo"), virt("veth0")},
			[]*Interface{virt("veth0"), virt("br0")},
			[]Match{{Before: "veth0", After: "veth0", By: "name", BeforeNaming: "user"}}, []string{"lo"}, []string{"br0"}},
		{"an interface that could not be read matches by name",
			[]*Interface{{Name: "eth0"}},
			[]*Interface{card("eth0", "", "", "00:1b:21:00:00:01", "0000:03:00.0")},
			[]Match{{Before: "eth0", After: "eth0", By: "name"}}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, gone, added := matchInterfaces(tc.bs, tc.as)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("matches (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.gone, gone); diff != "" {
				t.Errorf("gone (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.added, added); diff != "" {
				t.Errorf("new (-want +got):\n%s", diff)
			}
		})
	}
}

// Counters of two boots, or of a recreated interface, are counted from
// zero, and the reason says why.
func TestRestarted(t *testing.T) {
	src := func(kernel, boot string) *Source { return &Source{kernel: kernel, boot: boot} }
	snap := func(idx int) *Snapshot { return &Snapshot{Index: idx} }
	for _, tc := range []struct {
		name          string
		before, after *Source
		i0, i1        int
		want          string
	}{
		{"same boot", src("6.18.0", "a"), src("6.18.0", "a"), 2, 2, ""},
		{"unknown boot, same kernel and ifindex", src("6.18.0", ""), src("6.18.0", ""), 2, 2, ""},
		{"another boot id", src("6.18.0", "a"), src("6.18.0", "b"), 2, 2, "the machine rebooted between the captures (another boot id)"},
		{"another boot and kernel", src("6.12.0", "a"), src("6.18.0", "b"), 2, 4, "the machine rebooted between the captures (another boot id, kernel 6.12.0 → 6.18.0)"},
		{"another kernel, no boot ids", src("6.12.0", ""), src("6.18.0", ""), 2, 2, "the machine rebooted between the captures (kernel 6.12.0 → 6.18.0)"},
		{"another ifindex", src("", ""), src("", ""), 2, 5, "the interface was recreated between the captures (ifindex 2 → 5: a driver reload or a reboot)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Pairing{before: tc.before, after: tc.after}
			if got := p.restarted(snap(tc.i0), snap(tc.i1)); got != tc.want {
				t.Errorf("restarted = %q, want %q", got, tc.want)
			}
		})
	}
}

// The half-duplex findings tell a forced peer from a hub or half-only
// partner by the partner's modes.
func TestHalfDuplexCause(t *testing.T) {
	half := func(autoneg *bool, known bool, partner ...string) *Interface {
		return &Interface{Name: "x", Carrier: ptr(true), AdminUp: ptr(true), Link: Link{SpeedMbps: ptr(100), Duplex: "half", Autoneg: autoneg,
			ModesKnown: known, Supported: []string{"10baseT_Half", "10baseT_Full", "100baseT_Half", "100baseT_Full"}, Partner: partner}}
	}
	for _, tc := range []struct {
		name     string
		ifc      *Interface
		want     []string
		summary  string // of D2
		evidence string // of D2
	}{
		{"partner advertises nothing: peer forced", half(ptr(true), true), []string{"D1 ERROR", "D2 WARN"},
			"the peer is forced, so parallel detection chose half", "link partner advertises no modes (peer forced: its speed and duplex are hard-set)"},
		{"partner advertises autoneg and pause only: still no mode", half(ptr(true), true, "Autoneg", "Pause"), []string{"D1 ERROR", "D2 WARN"},
			"the peer is forced", "link partner advertises no modes"},
		{"10/half-only partner", half(ptr(true), true, "10baseT_Half", "Autoneg"), []string{"D2 WARN"},
			"the link partner is a hub or a 10/half-only device (it advertises only 10baseT_Half)", "link partner advertises only 10baseT_Half"},
		{"hub advertising half duplex only", half(ptr(true), true, "10baseT_Half", "100baseT_Half"), []string{"D2 WARN"},
			"the link partner is a hub or a half-duplex-only device", "link partner advertises only 10baseT_Half 100baseT_Half"},
		{"partner advertises full duplex", half(ptr(true), true, "100baseT_Half", "100baseT_Full"), []string{"D2 WARN"},
			"although the link partner advertises full duplex", "link partner advertises 100baseT_Full"},
		{"this end forced", half(ptr(false), true), []string{"D2 WARN"},
			"this end is forced to it (autoneg off)", "autoneg off"},
		{"no ethtool data", half(nil, false), []string{"D2 WARN"},
			"running half duplex on a link that can run full duplex", "link partner modes unknown (no ethtool link settings)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := Diagnose(Input{Iface: tc.ifc})
			if diff := cmp.Diff(tc.want, ruleSev(fs)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			wantSummary(t, fs, "D2", tc.summary)
			wantEvidence(t, fs, "D2", tc.evidence)
		})
	}
}

// tx_aborted_errors (excessive collisions) is read as collisions at half
// duplex, or beside counted collisions; alone at full duplex it may be any
// discard of a fast NIC and is left alone.
func TestExcessiveCollisions(t *testing.T) {
	ifc := func(duplex string) *Interface {
		return &Interface{Name: "x", Carrier: ptr(true), AdminUp: ptr(true), Link: Link{SpeedMbps: ptr(100), Duplex: duplex},
			KeySources: map[string]string{ExcessiveCollisions: "tx_aborted_errors"}}
	}
	d := func(coll, xs uint64) *Deltas {
		return &Deltas{Counters: map[string]uint64{"tx_packets": 10000, "rx_packets": 10000}, Key: map[string]uint64{Collisions: coll, ExcessiveCollisions: xs}}
	}
	for _, tc := range []struct {
		name    string
		in      Input
		want    []string
		summary string
	}{
		{"half duplex, few collisions, some excessive", Input{Iface: ifc("half"), Delta: d(100, 5)}, []string{"D2 ERROR", "D5 WARN"}, "excessive collisions at half duplex: frames dropped after 16 tries (tx_aborted_errors)"},
		{"half duplex, heavy and excessive", Input{Iface: ifc("half"), Delta: d(900, 5)}, []string{"D2 ERROR", "D5 WARN"}, "heavy collisions at half duplex, with frames dropped after 16 tries"},
		{"half duplex, no excessive, light collisions", Input{Iface: ifc("half"), Delta: d(100, 0)}, []string{"D2 WARN"}, ""},
		{"duplex unknown, collisions and excessive", Input{Iface: ifc(""), Delta: d(100, 5)}, []string{"D5 WARN"}, "excessive collisions"},
		{"duplex unknown, tx_aborted_errors alone", Input{Iface: ifc(""), Delta: d(0, 5)}, nil, ""},
		{"full duplex, tx_aborted_errors alone", Input{Iface: ifc("full"), Delta: d(0, 5)}, nil, ""},
		{"full duplex, collisions and excessive", Input{Iface: ifc("full"), Delta: d(3, 5)}, []string{"D4 WARN"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := Diagnose(tc.in)
			if diff := cmp.Diff(tc.want, ruleSev(fs)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if tc.summary != "" {
				wantSummary(t, fs, "D5", tc.summary)
				wantEvidence(t, fs, "D5", "Δexcessive_collisions = 5 [tx_aborted_errors]: frames dropped after 16 collisions in a row")
			}
			if len(tc.want) == 1 && tc.want[0] == "D4 WARN" {
				wantEvidence(t, fs, "D4", "Δcollisions = 3, speed 100M, duplex full, autoneg unknown; Δexcessive_collisions = 5 [tx_aborted_errors]")
			}
		})
	}
}

// CRC with alignment errors on a 10/100 full-duplex link names a duplex
// mismatch beside the cable, unless both ends negotiated full duplex.
func TestCRCDuplexSuspect(t *testing.T) {
	full := func(speed int, autoneg *bool, known bool, partner ...string) *Interface {
		return &Interface{Name: "x", Carrier: ptr(true), AdminUp: ptr(true), Link: Link{SpeedMbps: ptr(speed), Duplex: "full", Autoneg: autoneg, ModesKnown: known, Partner: partner}}
	}
	d := func(fcs, align uint64) *Deltas {
		return &Deltas{Counters: map[string]uint64{"tx_packets": 10000, "rx_packets": 100000}, Key: map[string]uint64{FCSErrors: fcs, AlignErrors: align}}
	}
	const (
		suspect = "CRC and alignment errors on a 10/100 full-duplex link: a duplex mismatch (the peer at half duplex) or a bad cable"
		cable   = "receive errors (FCS, alignment, runts): a bad cable, optic or interference"
		forced  = "receive errors on a forced full-duplex link: the peer is probably at half duplex (duplex mismatch)"
	)
	for _, tc := range []struct {
		name string
		in   Input
		want string
	}{
		{"100/full, no ethtool data", Input{Iface: full(100, nil, false), Delta: d(90, 20)}, suspect},
		{"10/full, autoneg on, partner silent", Input{Iface: full(10, ptr(true), true), Delta: d(90, 20)}, suspect},
		{"100/full, both negotiated full", Input{Iface: full(100, ptr(true), true, "100baseT_Full", "Autoneg"), Delta: d(90, 20)}, cable},
		{"100/full, CRC without alignment errors", Input{Iface: full(100, nil, false), Delta: d(110, 0)}, cable},
		{"1G/full: no half duplex at a gigabit", Input{Iface: full(1000, nil, false), Delta: d(90, 20)}, cable},
		{"100/full forced", Input{Iface: full(100, ptr(false), true), Delta: d(90, 20)}, forced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := Diagnose(tc.in)
			if diff := cmp.Diff([]string{"D6 ERROR"}, ruleSev(fs)); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
			if fs[0].Summary != tc.want {
				t.Errorf("summary %q, want %q", fs[0].Summary, tc.want)
			}
			if tc.want == suspect && !strings.Contains(fs[0].Fix, "late collisions") {
				t.Errorf("fix %q does not say how to tell a mismatch from a cable", fs[0].Fix)
			}
		})
	}
}

// Errors reading a tree name the file under the directory the user gave.
func TestTreeErrorPaths(t *testing.T) {
	mk := func(t *testing.T, files map[string]string) string {
		t.Helper()
		dir := t.TempDir()
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(os.MkdirAll(filepath.Join(dir, "sys", "class", "net"), 0o755))
		must(os.Symlink("../../devices/virtual/net/eth0", filepath.Join(dir, "sys", "class", "net", "eth0")))
		for name, v := range files {
			p := filepath.Join(dir, "sys", "devices", "virtual", "net", "eth0", name)
			if strings.HasPrefix(name, "/") {
				p = filepath.Join(dir, name)
			}
			must(os.MkdirAll(filepath.Dir(p), 0o755))
			must(os.WriteFile(p, []byte(v), 0o644))
		}
		return dir
	}
	snapErr := func(t *testing.T, dir string) error {
		t.Helper()
		s, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Snapshot("eth0")
		return err
	}
	t.Run("no statistics", func(t *testing.T) {
		dir := mk(t, map[string]string{"ifindex": "2\n"})
		err := snapErr(t, dir)
		want := "nicinfo: snapshot eth0: read " + filepath.Join(dir, "sys", "class", "net", "eth0", "statistics") + ": no such file or directory"
		if err == nil || err.Error() != want || !errors.Is(err, os.ErrNotExist) {
			t.Errorf("error %v, want %q (and ErrNotExist)", err, want)
		}
	})
	t.Run("ifindex not a number", func(t *testing.T) {
		dir := mk(t, map[string]string{"ifindex": "x\n", "statistics/rx_packets": "1\n"})
		err := snapErr(t, dir)
		want := "nicinfo: snapshot eth0: read " + filepath.Join(dir, "sys", "class", "net", "eth0", "ifindex") + `: "x": not a number`
		if err == nil || err.Error() != want {
			t.Errorf("error %v, want %q", err, want)
		}
	})
	t.Run("device directory not captured", func(t *testing.T) {
		dir := mk(t, map[string]string{"/sys/devices/.keep": ""})
		err := snapErr(t, dir)
		want := "nicinfo: interface \"eth0\": " + filepath.Join(dir, "sys", "class", "net", "eth0") +
			" links to ../../devices/virtual/net/eth0, which the capture does not hold (an incomplete tree: capture it again): no such interface"
		if err == nil || err.Error() != want || !errors.Is(err, ErrNoInterface) {
			t.Errorf("error %v, want %q", err, want)
		}
	})
	t.Run("bad ethtool answers", func(t *testing.T) {
		dir := mk(t, map[string]string{"ifindex": "2\n", "/ethtool/eth0.json": "{"})
		s, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		ifc := mustInspect(t, s, "eth0")
		if got, want := ifc.Errors["capture"], "parse ethtool/eth0.json: unexpected end of JSON input"; got != want {
			t.Errorf("capture error %q, want %q", got, want)
		}
	})
	t.Run("no sys", func(t *testing.T) {
		dir := t.TempDir()
		_, err := Load(dir)
		want := "nicinfo: load: " + filepath.Join(dir, "sys") + ": no such file or directory"
		if err == nil || err.Error() != want || !errors.Is(err, os.ErrNotExist) {
			t.Errorf("error %v, want %q", err, want)
		}
	})
	t.Run("no manifest", func(t *testing.T) {
		dir := mk(t, map[string]string{"ifindex": "2\n", "statistics/rx_packets": "1\n"})
		_, err := ReadManifest(dir)
		want := "nicinfo: read manifest " + filepath.Join(dir, "blast-nic.json") + ": no such file or directory"
		if err == nil || err.Error() != want {
			t.Errorf("error %v, want %q", err, want)
		}
		// Without its time, a capture's interval is unknown, not measured
		// from the clock.
		s, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Analyze(s, s, "eth0")
		if err != nil {
			t.Fatal(err)
		}
		if r.Delta.Interval != 0 {
			t.Errorf("interval %v, want 0 (unknown)", r.Delta.Interval)
		}
	})
}

// At 10 Mb/s a silent partner may also be an old hub that does not
// negotiate: D1 says so in its fix.
func TestD1TenMegabit(t *testing.T) {
	ifc := &Interface{Name: "x", Carrier: ptr(true), AdminUp: ptr(true), Link: Link{SpeedMbps: ptr(10), Duplex: "half", Autoneg: ptr(true), ModesKnown: true, Partner: []string{}}}
	fs := Diagnose(Input{Iface: ifc})
	wantFix(t, fs, "D1", "the far end is probably forced to 10M/full")
	wantFix(t, fs, "D1", "an old 10BASE-T hub that does not negotiate")
}
