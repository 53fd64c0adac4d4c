package nicinfo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/internal/golden"
)

func ptr[T any](v T) *T { return &v }

func mustInspect(t testing.TB, s *Source, name string) *Interface {
	t.Helper()
	ifc, err := s.Inspect(name)
	if err != nil {
		t.Fatal(err)
	}
	return ifc
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

func ruleSev(fs []finding.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, string(f.Rule)+" "+f.Severity.String())
	}
	return out
}

// analysis is what `blast nic --sysfs before --after after IFACE -J` shows.
type analysis = Result

// analyze loads a fixture scenario the way the CLI does.
func analyze(t *testing.T, dir, iface string) analysis {
	t.Helper()
	before, err := Load(filepath.Join(dir, "before"))
	if err != nil {
		t.Fatal(err)
	}
	var after *Source
	if _, err := os.Stat(filepath.Join(dir, "after")); err == nil {
		if after, err = Load(filepath.Join(dir, "after")); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Analyze(before, after, iface)
	if err != nil {
		t.Fatal(err)
	}
	return *r
}

func (a analysis) text(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteResult(&b, &a); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

var scenarios = []struct {
	dir, iface string
	want       []string // rule and severity of every finding, in Diagnose's order
	check      func(t *testing.T, a analysis)
}{
	{"e1000-100half-latecoll", "enp0s11", []string{"D1 ERROR", "D2 ERROR", "D3 ERROR", "D5 WARN"}, func(t *testing.T, a analysis) {
		wantKey(t, a.Delta.Key, LateCollisions, 377)
		wantKey(t, a.Delta.Key, Deferrals, 9000)
		if a.Interface.KeySources[LateCollisions] != "tx_abort_late_coll (-S)" {
			t.Errorf("late collisions from %q, want the driver's tx_abort_late_coll", a.Interface.KeySources[LateCollisions])
		}
		wantEvidence(t, a.Findings, finding.D3, "Δlate_collisions = 377 in 60000 tx packets")
		wantEvidence(t, a.Findings, finding.D1, "link partner advertises no modes")
		// The partner advertises nothing: the peer is forced, not a hub.
		wantEvidence(t, a.Findings, finding.D2, "link partner advertises no modes (peer forced")
		wantSummary(t, a.Findings, finding.D2, "the peer is forced")
		// tx_aborted_errors (excessive collisions) is named beside the collisions.
		wantKey(t, a.Delta.Key, ExcessiveCollisions, 377)
		wantEvidence(t, a.Findings, finding.D5, "Δexcessive_collisions = 377 [tx_aborted_errors]: frames dropped after 16 collisions in a row")
		// Late collisions on the half side decide it: a mismatch, not a hub.
		wantSummary(t, a.Findings, finding.D5, "and late collisions: a duplex mismatch, not a busy hub")
		wantEvidence(t, a.Findings, finding.D5, "Δlate_collisions = 377 [tx_abort_late_coll (-S)]: the far end sends without listening (full duplex)")
		wantFix(t, a.Findings, finding.D5, "the far end runs full duplex (probably forced)")
	}},
	{"e1000e-full-crc", "enp2s0", []string{"D6 ERROR"}, func(t *testing.T, a analysis) {
		wantKey(t, a.Delta.Key, FCSErrors, 812)
		wantKey(t, a.Delta.Key, AlignErrors, 95)
		wantKey(t, a.Delta.Key, Runts, 40)
		if !strings.Contains(a.Findings[0].Summary, "peer is probably at half duplex") {
			t.Errorf("D6 does not point at the duplex mismatch: %q", a.Findings[0].Summary)
		}
	}},
	{"tulip-enumerated", "eth1", nil, func(t *testing.T, a analysis) {
		if a.Interface.Link.SpeedMbps != nil || a.Interface.Link.Duplex != "" || a.Interface.Link.ModesKnown {
			t.Errorf("tulip link = %+v, want everything unknown", a.Interface.Link)
		}
		if a.Interface.Errors["speed"] != "invalid argument" {
			t.Errorf("speed error = %q, want the recorded EINVAL", a.Interface.Errors["speed"])
		}
		if a.Interface.DriverStats != nil {
			t.Errorf("tulip has no -S, got %v", a.Interface.DriverStats)
		}
		if a.Interface.Naming.Kind != "enumerated" || a.Interface.Naming.Stable {
			t.Errorf("naming = %+v, want enumerated, unstable", a.Interface.Naming)
		}
	}},
	{"3c59x-halfdup", "eth0", []string{"D2 WARN", "D5 WARN"}, func(t *testing.T, a analysis) {
		// On a hub collisions are normal: no late one, no CRC error.
		wantSummary(t, a.Findings, finding.D5, "a busy shared segment (hub)")
		wantKey(t, a.Delta.Key, Deferrals, 8000)
		// The partner advertises 10 and 100 at half duplex only: a hub.
		wantSummary(t, a.Findings, finding.D2, "the link partner is a hub or a half-duplex-only device")
		wantEvidence(t, a.Findings, finding.D2, "link partner advertises only 10baseT_Half 100baseT_Half")
		wantKey(t, a.Delta.Key, ExcessiveCollisions, 0) // tx_max_collisions (-S)
		if src := a.Interface.KeySources[ExcessiveCollisions]; src != "tx_max_collisions (-S)" {
			t.Errorf("3c59x excessive collisions from %q, want tx_max_collisions (-S)", src)
		}
		if _, ok := a.Delta.Key[Runts]; ok {
			t.Errorf("3c59x has no runt counter, got one")
		}
	}},
	{"down-cable", "enp3s0", []string{"D10 ERROR", "D12 ERROR"}, func(t *testing.T, a analysis) {
		// The link went down during the test: the result is not valid.
		f := finding.FirstInvalid(a.Findings)
		if f == nil || f.Rule != finding.D10 {
			t.Fatalf("invalid finding %v, want D10", f)
		}
		if want := "D10 the link went down during the test: this result is not valid (Δcarrier_changes = 2)"; f.String() != want {
			t.Errorf("%q, want %q", f.String(), want)
		}
		for _, g := range a.Findings {
			if g.Invalid != (g.Rule == finding.D10) {
				t.Errorf("%s invalid = %v", g.Rule, g.Invalid)
			}
		}
	}},
	{"admin-down", "enp3s0", []string{"D12 INFO"}, func(t *testing.T, a analysis) {
		if a.Interface.Carrier != nil {
			t.Errorf("carrier = %v, want unknown (EINVAL)", *a.Interface.Carrier)
		}
	}},
	{"gig-downshift", "enp1s0", []string{"D8 WARN"}, func(t *testing.T, a analysis) {
		wantEvidence(t, a.Findings, finding.D8, "1000baseT_Full")
	}},
	{"mlx5-big", "ens1f0np0", []string{"D11 WARN"}, func(t *testing.T, a analysis) {
		if n := len(a.Interface.DriverStats); n < 20000 {
			t.Errorf("mlx5 -S has %d keys, want >= 20000", n)
		}
		wantKey(t, a.Delta.Key, HostDrops, 5000)
		if nz := a.Delta.NonZero(); len(nz) > 20 {
			t.Errorf("%d nonzero deltas, want only the few that moved", len(nz))
		}
	}},
	{"counter-reset", "enp4s0", []string{"reset WARN"}, func(t *testing.T, a analysis) {
		want := []string{"counters/rx_packets", "counters/tx_packets", "counters/tx_window_errors",
			"driver/rx_packets", "driver/tx_abort_late_coll", "driver/tx_packets", "driver/tx_window_errors", "key/late_collisions"}
		if diff := cmp.Diff(want, a.Delta.Resets); diff != "" {
			t.Errorf("resets (-want +got):\n%s", diff)
		}
		if _, ok := a.Delta.Counters["tx_packets"]; ok {
			t.Errorf("a reset counter must not have a delta")
		}
	}},
	{"virtio", "eth0", nil, func(t *testing.T, a analysis) {
		if a.Interface.Driver != "virtio_net" || a.Interface.Link.SpeedMbps != nil {
			t.Errorf("virtio: driver %q speed %v, want virtio_net, unknown", a.Interface.Driver, a.Interface.Link.SpeedMbps)
		}
		if a.Interface.PCI == nil || a.Interface.PCI.Vendor != "0x1af4" {
			t.Errorf("virtio PCI parent = %+v, want vendor 0x1af4", a.Interface.PCI)
		}
		if f := Diagnose(Input{Iface: a.Interface, GoodputBps: 1e6, NICBound: true}); len(f) != 0 {
			t.Errorf("line-rate rule fired without a known speed: %+v", f)
		}
	}},
	{"veth-peerdown", "vethpd0", []string{"D12 ERROR"}, func(t *testing.T, a analysis) {
		if a.Interface.Link.SpeedMbps == nil || *a.Interface.Link.SpeedMbps != 10000 || a.Interface.OperState != "down" {
			t.Errorf("veth peer down: speed %v operstate %q, want 10000 down", a.Interface.Link.SpeedMbps, a.Interface.OperState)
		}
	}},
	{"rename-eth0-eth2", "eth0", []string{"D25 WARN"}, func(t *testing.T, a analysis) {
		// eth0 of the first capture is the e1000e, eth2 in the second.
		if a.Interface.Name != "eth2" || a.Interface.Driver != "e1000e" {
			t.Errorf("analyzed %s (%s), want eth2, the e1000e", a.Interface.Name, a.Interface.Driver)
		}
		want := &Match{Before: "eth0", After: "eth2", By: "permanent MAC 00:25:90:3a:5c:10 and bus 0000:00:19.0",
			BeforeNaming: "enumerated", OldNameNow: "the igb at 0000:03:00.0 (eth1 before)"}
		if diff := cmp.Diff(want, a.Renamed); diff != "" {
			t.Errorf("renamed (-want +got):\n%s", diff)
		}
		wantEvidence(t, a.Findings, finding.D25, "eth0 before is eth2 after: same permanent MAC 00:25:90:3a:5c:10 and bus 0000:00:19.0; eth0 is now the igb at 0000:03:00.0 (eth1 before)")
		wantSummary(t, a.Findings, finding.D25, "renamed between the captures (eth0 → eth2): the kernel hands out ethN names in probe order")
		wantFix(t, a.Findings, finding.D25, "[Match] PermanentMACAddress=00:25:90:3a:5c:10")
		wantFix(t, a.Findings, finding.D25, "'blast nic eth2 --pin lan0'")
		// A reboot between the captures: counted from zero, not subtracted.
		if want := "the machine rebooted between the captures (another boot id, kernel 6.12.0 → 6.18.0)"; a.Delta.Restarted != want {
			t.Errorf("restarted = %q, want %q", a.Delta.Restarted, want)
		}
		if a.Delta.Counters["rx_packets"] != 1_204_331 || a.Delta.DriverStats["tx_packets"] != 987_120 || len(a.Delta.Resets) != 0 {
			t.Errorf("delta rx_packets %d, -S tx_packets %d, resets %v; want the counts since the reboot, no reset",
				a.Delta.Counters["rx_packets"], a.Delta.DriverStats["tx_packets"], a.Delta.Resets)
		}
		if a.Delta.Interval != 0 || a.Delta.CarrierChanges != nil {
			t.Errorf("interval %v, carrier changes %v: want both unknown across a reboot", a.Delta.Interval, a.Delta.CarrierChanges)
		}
	}},
	{"rename-pinned-lan0", "eth0", []string{"D10 ERROR", "D25 INFO"}, func(t *testing.T, a analysis) {
		// Renamed at run time: same boot, same ifindex, counters go on.
		if a.Interface.Name != "lan0" || a.Renamed == nil || a.Renamed.Before != "eth0" || a.Renamed.OldNameNow != "" {
			t.Errorf("interface %s, renamed %+v; want lan0, from eth0, the old name free", a.Interface.Name, a.Renamed)
		}
		if a.Delta.Restarted != "" || a.Delta.Counters["rx_packets"] != 412_877 || a.Delta.Interval != 5*time.Minute+12*time.Second {
			t.Errorf("delta restarted %q, rx_packets %d, interval %v; want a plain delta of 412877 over 5m12s", a.Delta.Restarted, a.Delta.Counters["rx_packets"], a.Delta.Interval)
		}
		wantSummary(t, a.Findings, finding.D25, "renamed between the captures (eth0 → lan0): the new name is pinned by /etc/systemd/network/10-lan0.link")
		wantEvidence(t, a.Findings, finding.D25, "eth0 before is lan0 after: same permanent MAC 74:d4:35:9b:20:4e and bus 0000:02:00.0")
		wantEvidence(t, a.Findings, finding.D10, "Δcarrier_changes = 2; it was renamed (eth0 → lan0) between the captures, which takes an interface down")
	}},
	{"e1000e-10half-partner", "enp0s25", []string{"D2 WARN"}, func(t *testing.T, a analysis) {
		// The partner negotiates and offers only 10baseT_Half: not a forced peer (no D1).
		wantSummary(t, a.Findings, finding.D2, "running half duplex: the link partner is a hub or a 10/half-only device (it advertises only 10baseT_Half)")
		wantEvidence(t, a.Findings, finding.D2, "speed 10M, duplex half, autoneg on, the NIC supports full duplex, link partner advertises only 10baseT_Half")
		wantFix(t, a.Findings, finding.D2, "replace the hub with a switch")
		wantKey(t, a.Delta.Key, Collisions, 240)
	}},
	{"tulip-hub-excessive", "eth0", []string{"D5 WARN"}, func(t *testing.T, a analysis) {
		// No duplex from the driver, but collisions and tx_aborted_errors.
		if a.Interface.Link.Duplex != "" {
			t.Errorf("duplex %q, want unknown", a.Interface.Link.Duplex)
		}
		wantKey(t, a.Delta.Key, ExcessiveCollisions, 212)
		wantSummary(t, a.Findings, finding.D5, "a busy shared segment (hub): heavy collisions at half duplex, with frames dropped after 16 tries (excessive collisions, tx_aborted_errors), none of them late, no CRC error: not a duplex mismatch")
		wantEvidence(t, a.Findings, finding.D5, "Δcollisions = 9600 in 80000 tx packets (12.0%); Δexcessive_collisions = 212 [tx_aborted_errors]: frames dropped after 16 collisions in a row; duplex not reported by the driver, but only a half-duplex MAC counts collisions; Δlate_collisions = 0 [tx_window_errors] and Δfcs_errors = 0 in 9600 collisions")
		wantFix(t, a.Findings, finding.D5, "nothing is misconfigured (on a hub half duplex is right)")
	}},
	{"e1000e-10half-hub", "enp0s25", []string{"D2 WARN", "D5 WARN"}, func(t *testing.T, a analysis) {
		// An old 10BASE-T hub advertises nothing, as a forced switch
		// port does; 45% collisions and excessive ones, but none late
		// and no CRC error: a busy hub, not a duplex mismatch (no D1).
		wantKey(t, a.Delta.Key, LateCollisions, 0)
		wantKey(t, a.Delta.Key, FCSErrors, 0)
		wantSummary(t, a.Findings, finding.D2, "a busy shared segment (hub): running half duplex because the link partner is a hub that does not negotiate")
		wantFix(t, a.Findings, finding.D2, "half duplex is right on a hub")
		wantSummary(t, a.Findings, finding.D5, "a busy shared segment (hub): heavy collisions at half duplex, with frames dropped after 16 tries")
		wantEvidence(t, a.Findings, finding.D5, "Δcollisions = 9000 in 20000 tx packets (45.0%); Δexcessive_collisions = 310 [tx_aborted_errors]")
		wantEvidence(t, a.Findings, finding.D5, "Δlate_collisions = 0 [tx_abort_late_coll (-S)] and Δfcs_errors = 0 in 9000 collisions: every station listens before it sends, so a shared segment, not a duplex mismatch")
		for _, f := range a.Findings {
			if strings.Contains(f.Fix, "forced to full duplex") || strings.Contains(f.Summary, "mismatch:") {
				t.Errorf("%s claims a duplex mismatch on a hub: %s / %s", f.Rule, f.Summary, f.Fix)
			}
		}
	}},
	{"e1000e-100full-crc-noethtool", "enp3s0", []string{"D6 ERROR"}, func(t *testing.T, a analysis) {
		if a.Interface.Link.ModesKnown || a.Interface.Link.Autoneg != nil || a.Interface.DriverStats != nil || a.Interface.PermMAC != "" {
			t.Errorf("link %+v, driver stats %v, permanent MAC %q: want no ethtool data", a.Interface.Link, a.Interface.DriverStats != nil, a.Interface.PermMAC)
		}
		wantKey(t, a.Delta.Key, FCSErrors, 655)
		wantKey(t, a.Delta.Key, AlignErrors, 71)
		wantSummary(t, a.Findings, finding.D6, "CRC and alignment errors on a 10/100 full-duplex link: a duplex mismatch (the peer at half duplex) or a bad cable")
		wantEvidence(t, a.Findings, finding.D6, "Δfcs_errors = 655, Δalign_errors = 71 in 50000 rx packets (0.015), speed 100M, duplex full, autoneg unknown, no ethtool link settings")
		wantFix(t, a.Findings, finding.D6, "a peer at half duplex counts collisions and late collisions on that port")
		wantFix(t, a.Findings, finding.D6, "set both ends to autonegotiate and see whether the CRC errors stop")
	}},
}

func wantKey(t *testing.T, m map[string]uint64, k string, v uint64) {
	t.Helper()
	got, ok := m[k]
	if !ok || got != v {
		t.Errorf("key counter %s = %d (present %v), want %d", k, got, ok, v)
	}
}

func wantEvidence(t *testing.T, fs []finding.Finding, rule finding.ID, sub string) {
	t.Helper()
	for _, f := range fs {
		if f.Rule == rule {
			if !strings.Contains(f.Evidence, sub) {
				t.Errorf("%s evidence %q lacks %q", rule, f.Evidence, sub)
			}
			return
		}
	}
	t.Errorf("no %s finding", rule)
}

// findingOf is the finding of rule rule, failing the test when there is none.
func findingOf(t *testing.T, fs []finding.Finding, rule finding.ID) finding.Finding {
	t.Helper()
	for _, f := range fs {
		if f.Rule == rule {
			return f
		}
	}
	t.Errorf("no %s finding in %v", rule, ruleSev(fs))
	return finding.Finding{}
}

func wantSummary(t *testing.T, fs []finding.Finding, rule finding.ID, sub string) {
	t.Helper()
	if f := findingOf(t, fs, rule); f.Rule != "" && !strings.Contains(f.Summary, sub) {
		t.Errorf("%s summary %q lacks %q", rule, f.Summary, sub)
	}
}

func wantFix(t *testing.T, fs []finding.Finding, rule finding.ID, sub string) {
	t.Helper()
	if f := findingOf(t, fs, rule); f.Rule != "" && !strings.Contains(f.Fix, sub) {
		t.Errorf("%s fix %q lacks %q", rule, f.Fix, sub)
	}
}

func TestScenarios(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.dir, func(t *testing.T) {
			a := analyze(t, filepath.Join("testdata", sc.dir), sc.iface)
			if diff := cmp.Diff(sc.want, ruleSev(a.Findings)); diff != "" {
				t.Errorf("findings (-want +got):\n%s\n%s", diff, a.text(t))
			}
			if sc.check != nil {
				sc.check(t, a)
			}
			golden.Check(t, "testdata/golden/"+sc.dir+".txt", a.text(t))
			var brief bytes.Buffer
			if err := WriteBrief(&brief, "blast-t: ", &a); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "testdata/golden/"+sc.dir+".brief", brief.Bytes())
			js, err := json.MarshalIndent(a, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if sc.dir == "mlx5-big" {
				return // 20 000 counters: the text golden is enough
			}
			golden.Check(t, "testdata/golden/"+sc.dir+".json", append(js, '\n'))
		})
	}
}

// TestJSONRoundTrip checks that the JSON of a report decodes to the same value,
// so `blast nic -J` output can be read back.
func TestJSONRoundTrip(t *testing.T) {
	a := analyze(t, filepath.Join("testdata", "e1000-100half-latecoll"), "enp0s11")
	js, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var back analysis
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, back); diff != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", diff)
	}
}

func TestTable(t *testing.T) {
	var all []*Interface
	for _, sc := range scenarios {
		dir := filepath.Join("testdata", sc.dir, "before")
		s, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		ifcs, err := s.All()
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range ifcs {
			if i.Name == sc.iface {
				all = append(all, i)
			}
		}
	}
	if len(all) != len(scenarios) {
		t.Fatalf("found %d of %d scenario interfaces", len(all), len(scenarios))
	}
	var b bytes.Buffer
	if err := WriteTable(&b, all); err != nil {
		t.Fatal(err)
	}
	for _, i := range all {
		b.WriteString(Summary(i) + "\n")
	}
	golden.Check(t, "testdata/golden/table.txt", b.Bytes())
}

// TestCaptureRoundTrip re-captures a fixture and checks nothing is lost.
func TestCaptureRoundTrip(t *testing.T) {
	for _, sc := range []struct{ dir, iface string }{{"e1000-100half-latecoll", "enp0s11"}, {"tulip-enumerated", "eth1"}, {"virtio", "eth0"}} {
		t.Run(sc.dir, func(t *testing.T) {
			src, err := Load(filepath.Join("testdata", sc.dir, "before"))
			if err != nil {
				t.Fatal(err)
			}
			want := mustInspect(t, src, sc.iface)
			out := t.TempDir()
			if err := src.Capture(out); err != nil {
				t.Fatal(err)
			}
			again, err := Load(out)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, mustInspect(t, again, sc.iface)); diff != "" {
				t.Errorf("after capture and load (-want +got):\n%s", diff)
			}
			if err := src.Capture(out); err == nil {
				t.Errorf("capture into a non-empty directory succeeded")
			}
		})
	}
}

func TestAdvise(t *testing.T) {
	tulip := analyze(t, filepath.Join("testdata", "tulip-enumerated"), "eth1").Interface
	a, err := Advise(tulip, "lan0")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteAdvice(&b, a); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/golden/advise-tulip.txt", b.Bytes())

	for _, tc := range []struct {
		name    string
		ifc     *Interface
		newName string
		match   string // "" = error expected
	}{
		{"perm mac", tulip, "lan0", "PermanentMACAddress=00:00:f8:21:33:44"},
		{"ethN refused", tulip, "eth7", ""},
		{"too long", tulip, "averyveryverylongname", ""},
		{"slash", tulip, "a/b", ""},
		{"hardware mac", &Interface{Name: "x", MAC: "02:00:00:00:00:01", MACAssign: "permanent"}, "lan1", "MACAddress=02:00:00:00:00:01"},
		{"random mac, pci path", &Interface{Name: "x", MAC: "02:00:00:00:00:01", MACAssign: "random", PCI: &PCIID{Address: "0000:02:00.0"}}, "lan1", "Path=pci-0000:02:00.0"},
		{"virtual", &Interface{Name: "veth0", MAC: "02:00:00:00:00:01", MACAssign: "random"}, "lan1", ""},
		{"virtual with a permanent mac", &Interface{Name: "veth0", Virtual: true, MAC: "02:00:00:00:00:01", MACAssign: "permanent"}, "lan1", ""},
		{"loopback", &Interface{Name: "lo", Virtual: true, MAC: "00:00:00:00:00:00", MACAssign: "permanent"}, "lan1", ""},
		{"zero mac", &Interface{Name: "x", MAC: "00:00:00:00:00:00", MACAssign: "permanent"}, "lan1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Advise(tc.ifc, tc.newName)
			if tc.match == "" {
				if err == nil {
					t.Errorf("Advise(%q) = %+v, want an error", tc.newName, a)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.Match != tc.match || !strings.Contains(a.LinkFile, tc.match) || !strings.Contains(a.LinkFile, "Name="+tc.newName) {
				t.Errorf("match %q, link file:\n%s\nwant %q", a.Match, a.LinkFile, tc.match)
			}
		})
	}
}

func TestDelta(t *testing.T) {
	t0 := time.Unix(1000, 0)
	snap := func(at time.Duration, gen, drv map[string]uint64, cc uint64) *Snapshot {
		return &Snapshot{Name: "x", Index: 2, Driver: "e1000e", Time: t0.Add(at), Counters: gen, DriverStats: drv, CarrierChanges: &cc}
	}
	for _, tc := range []struct {
		name          string
		before, after *Snapshot
		want          *Deltas
	}{
		{"plain",
			snap(0, map[string]uint64{"rx_packets": 10, "collisions": 1}, map[string]uint64{"tx_abort_late_coll": 3}, 2),
			snap(time.Second, map[string]uint64{"rx_packets": 25, "collisions": 4, "new": 9}, map[string]uint64{"tx_abort_late_coll": 5}, 2),
			&Deltas{Name: "x", Interval: time.Second,
				Counters: map[string]uint64{"rx_packets": 15, "collisions": 3}, DriverStats: map[string]uint64{"tx_abort_late_coll": 2},
				Key: map[string]uint64{Collisions: 3, LateCollisions: 2}, CarrierChanges: ptr(uint64(0))}},
		{"reset propagates to the key counter",
			snap(0, map[string]uint64{"tx_window_errors": 7}, map[string]uint64{"tx_abort_late_coll": 7}, 5),
			snap(time.Second, map[string]uint64{"tx_window_errors": 1}, map[string]uint64{"tx_abort_late_coll": 1}, 1),
			&Deltas{Name: "x", Interval: time.Second, Counters: map[string]uint64{}, DriverStats: map[string]uint64{},
				Resets: []string{"carrier_changes", "counters/tx_window_errors", "driver/tx_abort_late_coll", "key/late_collisions"}}},
		{"no driver stats: absent, not zero",
			snap(0, map[string]uint64{"rx_crc_errors": 1}, nil, 0),
			snap(time.Second, map[string]uint64{"rx_crc_errors": 4}, nil, 1),
			&Deltas{Name: "x", Interval: time.Second, Counters: map[string]uint64{"rx_crc_errors": 3},
				Key: map[string]uint64{FCSErrors: 3}, CarrierChanges: ptr(uint64(1))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Delta(tc.before, tc.after)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	other := snap(0, nil, nil, 0)
	other.Index = 9
	if _, err := Delta(snap(0, nil, nil, 0), other); err == nil {
		t.Errorf("delta across a recreated interface succeeded")
	}
}

func TestMaskModes(t *testing.T) {
	words := []uint32{1<<5 | 1<<6, 0, 1 << (92 - 64), 1<<(103-96) | 1<<31}
	want := []string{"1000baseT_Full", "Autoneg", "10baseT1L_Full", "200000baseCR_Full", "bit127"}
	if diff := cmp.Diff(want, maskModes(words)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := maskModes(nil); got == nil || len(got) != 0 {
		t.Errorf("maskModes(nil) = %#v, want empty and non-nil (known to be empty)", got)
	}
}

func TestModeSpeed(t *testing.T) {
	for mode, want := range map[string]int{"1000baseT_Full": 1000, "100000baseCR4_Full": 100000, "Autoneg": 0, "FEC_RS": 0, "10baseT1S_P2MP_Half": 10} {
		if got := modeSpeed(mode); got != want {
			t.Errorf("modeSpeed(%q) = %d, want %d", mode, got, want)
		}
	}
}

func TestNaming(t *testing.T) {
	for _, tc := range []struct {
		name   string
		assign *int
		udev   map[string]string
		kind   string
		stable bool
		words  string
	}{
		{"eth0", ptr(1), nil, "enumerated", false, "probe order"},
		{"lo", ptr(2), nil, "predictable", true, "stable"},
		{"veth1", ptr(3), nil, "user", true, "userspace"},
		{"enp3s0", ptr(4), map[string]string{"ID_NET_NAME_PATH": "enp3s0"}, "renamed", true, "bus path"},
		{"lan0", ptr(4), map[string]string{"ID_NET_NAME": "lan0", "ID_NET_LINK_FILE": "/etc/systemd/network/10-lan0.link"}, "renamed", true, "10-lan0.link"},
		{"ifb0", nil, nil, "unknown", false, "did not record"},
	} {
		n := describeNaming(tc.name, tc.assign, tc.udev)
		if n.Kind != tc.kind || n.Stable != tc.stable || !strings.Contains(n.Words, tc.words) {
			t.Errorf("%s: %+v, want kind %s stable %v words containing %q", tc.name, n, tc.kind, tc.stable, tc.words)
		}
	}
}

// TestRuleThresholds exercises the ratio thresholds of the rules around their edges.
func TestRuleThresholds(t *testing.T) {
	half := &Interface{Name: "x", Carrier: ptr(true), AdminUp: ptr(true), Link: Link{SpeedMbps: ptr(100), Duplex: "half", Autoneg: ptr(true), ModesKnown: true, Partner: []string{"100baseT_Half"}}}
	full := &Interface{Name: "x", Carrier: ptr(true), AdminUp: ptr(true), Link: Link{SpeedMbps: ptr(1000), Duplex: "full", Autoneg: ptr(true)}}
	d := func(tx, rx uint64, key map[string]uint64) *Deltas {
		return &Deltas{Counters: map[string]uint64{"tx_packets": tx, "rx_packets": rx}, Key: key}
	}
	for _, tc := range []struct {
		name string
		in   Input
		want []string
	}{
		{"one late collision is a warning", Input{Iface: full, Delta: d(100000, 0, map[string]uint64{LateCollisions: 1})}, []string{"D3 WARN"}},
		{"late ratio 1e-3 is an error", Input{Iface: full, Delta: d(10000, 0, map[string]uint64{LateCollisions: 10})}, []string{"D3 ERROR"}},
		{"100 late collisions is an error even without a ratio", Input{Iface: full, Delta: d(10, 10, map[string]uint64{LateCollisions: 100})}, []string{"D3 ERROR"}},
		{"few packets: no ratio rules", Input{Iface: full, Delta: d(100, 100, map[string]uint64{FCSErrors: 50, HostDrops: 50})}, nil},
		{"fcs 1e-4 warns", Input{Iface: full, Delta: d(0, 100000, map[string]uint64{FCSErrors: 10})}, []string{"D6 WARN"}},
		{"fcs just below 1e-4 is quiet", Input{Iface: full, Delta: d(0, 100000, map[string]uint64{FCSErrors: 9})}, nil},
		{"host drops 1e-2 is an error", Input{Iface: full, Delta: d(0, 10000, map[string]uint64{HostDrops: 100})}, []string{"D11 ERROR"}},
		{"collisions on full duplex", Input{Iface: full, Delta: d(10, 10, map[string]uint64{Collisions: 1})}, []string{"D4 WARN"}},
		{"deferrals on full duplex", Input{Iface: full, Delta: d(10, 10, map[string]uint64{Deferrals: 3})}, []string{"D13 INFO"}},
		{"half duplex, 5% collisions is not heavy", Input{Iface: half, Delta: d(10000, 0, map[string]uint64{Collisions: 500})}, []string{"D2 WARN"}},
		{"half duplex, 6% collisions", Input{Iface: half, Delta: d(10000, 0, map[string]uint64{Collisions: 600})}, []string{"D2 ERROR", "D5 WARN"}},
		{"goodput far below line rate", Input{Iface: full, GoodputBps: 400e6, NICBound: true}, []string{"D9 WARN"}},
		{"goodput fine", Input{Iface: full, GoodputBps: 900e6, NICBound: true}, nil},
		{"goodput low but not the NIC", Input{Iface: full, GoodputBps: 100e6}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ruleSev(Diagnose(tc.in))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestDiagnosePath(t *testing.T) {
	d3 := []finding.Finding{{Rule: finding.D3, Iface: "eth0"}}
	d6 := []finding.Finding{{Rule: finding.D6, Iface: "eth1"}}
	link := func(name, duplex string, partner ...string) *Interface {
		return &Interface{Name: name, Carrier: ptr(true), AdminUp: ptr(true),
			Link: Link{SpeedMbps: ptr(100), Duplex: duplex, Autoneg: ptr(true), ModesKnown: true, Partner: partner}}
	}
	fullEnds := []*Interface{link("eth0", "full", "100baseT_Full"), link("eth1", "full", "100baseT_Full")}
	halfEnd := []*Interface{link("eth0", "half"), link("eth1", "full", "100baseT_Full")}
	hubEnd := []*Interface{link("eth0", "half", "10baseT_Half", "100baseT_Half"), link("eth1", "full", "100baseT_Full")}
	// 12 times slower with 5% of the slow direction's segments lost: a
	// policer does that as well as a duplex mismatch.
	fwd, rev := Direction{Bps: 96e6, RetransPct: 0.1}, Direction{Bps: 8e6, RetransPct: 5}
	for _, tc := range []struct {
		name string
		p    Path
		want []string
		// duplex: the finding claims a duplex mismatch.
		duplex bool
	}{
		{"seed: 7.8 MB/s vs 250 KB/s with late collisions", Path{Forward: Direction{Bps: 62.4e6, RetransPct: -1}, Reverse: Direction{Bps: 2e6, RetransPct: -1}, SamePath: true, Findings: d3}, []string{"D7 ERROR"}, true},
		{"12x with losses, both ends full duplex", Path{Forward: fwd, Reverse: rev, SamePath: true, Ends: fullEnds}, []string{"D7 WARN"}, false},
		{"12x with losses, ends unknown, no link errors", Path{Forward: fwd, Reverse: rev, SamePath: true}, []string{"D7 WARN"}, false},
		{"12x with losses, an end at half duplex", Path{Forward: fwd, Reverse: rev, SamePath: true, Ends: halfEnd}, []string{"D7 ERROR"}, true},
		{"12x with losses, late collisions", Path{Forward: fwd, Reverse: rev, SamePath: true, Ends: fullEnds, Findings: d3}, []string{"D7 ERROR"}, true},
		{"12x with losses, D2 half duplex", Path{Forward: fwd, Reverse: rev, SamePath: true, Findings: []finding.Finding{{Rule: finding.D2, Iface: "eth0"}}}, []string{"D7 ERROR"}, true},
		// CRC errors alone: a mismatch or a bad cable, said so.
		{"12x with losses, receive errors", Path{Forward: fwd, Reverse: rev, SamePath: true, Ends: fullEnds, Findings: d6}, []string{"D7 ERROR"}, true},
		// Half duplex on a hub is right, and no mismatch.
		{"12x with losses, half duplex on a hub", Path{Forward: fwd, Reverse: rev, SamePath: true, Ends: hubEnd}, []string{"D7 WARN"}, false},
		// An end its counters put on a hub (collisions, none late, no
		// CRC error): its half duplex and D2/D5 are no mismatch's.
		{"12x with losses, half duplex on a hub its counters tell", Path{Forward: fwd, Reverse: rev, SamePath: true, Ends: []*Interface{link("eth0", "half"), link("eth1", "full", "100baseT_Full")},
			Findings: []finding.Finding{{Rule: finding.D2, Iface: "eth0", Summary: hubSummary + ": running half duplex"}, {Rule: finding.D5, Iface: "eth0", Summary: hubSummary + ": heavy collisions"}}}, []string{"D7 WARN"}, false},
		{"12x, an end at half duplex, nothing lost", Path{Forward: fwd, Reverse: Direction{Bps: 8e6, RetransPct: 0}, SamePath: true, Ends: halfEnd}, []string{"D7 WARN"}, false},
		// A shaped forward direction beside a busy host's fast reverse one
		// that retransmitted (seen in make test-stress): no collapse.
		{"retransmits only in the fast direction", Path{Forward: Direction{Bps: 96.7e6, RetransPct: 0}, Reverse: Direction{Bps: 8.33e9, RetransPct: 1.06}, SamePath: true}, []string{"D7 WARN"}, false},
		{"asymmetric, clean counters", Path{Forward: Direction{Bps: 2e6, RetransPct: 0}, Reverse: Direction{Bps: 90e6, RetransPct: 0}, SamePath: true}, []string{"D7 WARN"}, false},
		{"3x with losses", Path{Forward: Direction{Bps: 30e6, RetransPct: 3}, Reverse: Direction{Bps: 90e6}, SamePath: true}, []string{"D7 WARN"}, false},
		// Below 10 times, only losses or a queue the slow direction
		// built (and the fast did not) tell a path from a busy host.
		{"3x without losses", Path{Forward: Direction{Bps: 30e6, RetransPct: 0.5}, Reverse: Direction{Bps: 90e6}, SamePath: true}, nil, false},
		{"3x without losses, behind a queue", Path{Forward: Direction{Bps: 30e6, RetransPct: 0.5, QueueMs: 12}, Reverse: Direction{Bps: 90e6, QueueMs: 0.2}, SamePath: true}, []string{"D7 WARN"}, false},
		{"3x without losses, a queue both ways (a busy host)", Path{Forward: Direction{Bps: 30e6, RetransPct: 0.5, QueueMs: 3}, Reverse: Direction{Bps: 90e6, QueueMs: 1.5}, SamePath: true}, nil, false},
		{"3x without losses, a queue under 2 ms", Path{Forward: Direction{Bps: 30e6, RetransPct: 0.5, QueueMs: 1.5}, Reverse: Direction{Bps: 90e6, QueueMs: 0}, SamePath: true}, nil, false},
		{"3x without losses, the fast direction's queue unknown", Path{Forward: Direction{Bps: 30e6, RetransPct: 0.5, QueueMs: 12}, Reverse: Direction{Bps: 90e6, QueueMs: -1}, SamePath: true}, nil, false},
		{"1.4x with losses", Path{Forward: Direction{Bps: 64e6, RetransPct: 10}, Reverse: Direction{Bps: 90e6}, SamePath: true}, nil, false},
		{"9x with late collisions, nothing lost", Path{Forward: Direction{Bps: 10e6}, Reverse: Direction{Bps: 90e6}, SamePath: true, Findings: d3}, nil, false},
		{"different paths", Path{Forward: Direction{Bps: 1e6}, Reverse: Direction{Bps: 90e6}, Findings: d3}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := DiagnosePath(tc.p)
			if diff := cmp.Diff(tc.want, ruleSev(fs)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			for _, f := range fs {
				claims := strings.Contains(f.Summary, "duplex mismatch") || strings.Contains(f.Fix, "duplex")
				if claims != tc.duplex {
					t.Errorf("claims a duplex mismatch: %v, want %v: %s; fix %s", claims, tc.duplex, f, f.Fix)
				}
			}
		})
	}
}

// D7's words: both rates with units and 3 significant digits, the ratio,
// and what rules a duplex mismatch out.
func TestDiagnosePathWords(t *testing.T) {
	ends := []*Interface{{Name: "a", Link: Link{Duplex: "full"}}, {Name: "b", Link: Link{Duplex: "full"}}}
	fs := DiagnosePath(Path{Forward: Direction{Bps: 11.49e9, RetransPct: 0}, Reverse: Direction{Bps: 97.54e6, RetransPct: 16.2}, SamePath: true, Ends: ends})
	want := []finding.Finding{{Rule: finding.D7, Severity: finding.Warn,
		Summary:  "asymmetric path: the reverse direction is 118× slower than the forward (97.5 Mbit/s against 11.5 Gbit/s)",
		Evidence: "forward 11.5 Gbit/s, reverse 97.5 Mbit/s: the reverse direction is 118× slower, 16.2% of its segments lost (the forward direction 0.0%); no link errors counted (no late collisions, CRC errors or runts) and both ends at full duplex: not a duplex mismatch",
		Fix:      "the reverse direction stops at 97.5 Mbit/s: look that way for a rate limit (a shaper or a policer on a router), a slower link, or a busy end receiving it; the findings beside this one may name it"}}
	if diff := cmp.Diff(want, fs); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestErrNotSupportedIsStandard(t *testing.T) {
	err := fmt.Errorf("nicinfo: open: %w", ErrNotSupported)
	if !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("errors.Is(%v, errors.ErrUnsupported) = false, want true", err)
	}
}

func TestNoInterface(t *testing.T) {
	s, err := Load(filepath.Join("testdata", "tulip-enumerated", "before"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"eth9", "", "../x", ".."} {
		if _, err := s.Inspect(n); !errors.Is(err, ErrNoInterface) {
			t.Errorf("Inspect(%q) = %v, want ErrNoInterface", n, err)
		}
		if _, err := s.Snapshot(n); !errors.Is(err, ErrNoInterface) {
			t.Errorf("Snapshot(%q) = %v, want ErrNoInterface", n, err)
		}
	}
	if _, err := Load(t.TempDir()); err == nil {
		t.Errorf("Load of an empty directory succeeded")
	}
}

// The queue a slow direction built is in D7's summary and evidence.
func TestD7Queue(t *testing.T) {
	fs := DiagnosePath(Path{Forward: Direction{Bps: 30e6, RetransPct: 0, QueueMs: 12.34}, Reverse: Direction{Bps: 90e6, RetransPct: 0, QueueMs: 0.2}, SamePath: true})
	if len(fs) != 1 {
		t.Fatalf("findings %v, want one D7", fs)
	}
	f := fs[0]
	if want := "asymmetric path: the forward direction is 3× slower than the reverse (30.0 Mbit/s against 90.0 Mbit/s), behind a queue: a shaper or a slower link that way, at about 30.0 Mbit/s"; f.Summary != want {
		t.Errorf("summary %q, want %q", f.Summary, want)
	}
	if want := "TCP's RTT stood 12.3 ms above the path's own in the forward direction (a queue at its bottleneck), 200 µs in the reverse"; !strings.Contains(f.Evidence, want) {
		t.Errorf("evidence %q lacks %q", f.Evidence, want)
	}
}
