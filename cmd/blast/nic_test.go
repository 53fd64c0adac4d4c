package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/internal/golden"
	"github.com/blastnet/blast/nicinfo"
)

// fx is the path of a nicinfo fixture tree.
func fx(scenario, tree string) string {
	return filepath.Join("..", "..", "nicinfo", "testdata", scenario, tree)
}

// runNicArgs runs `blast nic ARGS` and returns the exit status and outputs.
func runNicArgs(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{ctx: context.Background(), argv0: "blast", stdout: &out, stderr: &errb, stdin: strings.NewReader("")}
	code = dispatch(e, append([]string{"nic"}, args...))
	return code, out.String(), errb.String()
}

func TestNicGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		args   []string
		stderr string
		code   int // exitFailure when it reports an ERROR
	}{
		{"nic-help.txt", []string{"--help"}, "", exitOK},
		{"nic-virtio-all.txt", []string{"--sysfs", fx("virtio", "before")}, "", exitOK},
		{"nic-tulip-eth1.txt", []string{"--sysfs", fx("tulip-enumerated", "before"), "eth1"}, "", exitOK},
		{"nic-e1000-pair.txt", []string{"--sysfs", fx("e1000-100half-latecoll", "before"), "--after", fx("e1000-100half-latecoll", "after"), "enp0s11"}, "", exitFailure},
		{"nic-e1000e-pair-all.txt", []string{"--sysfs", fx("e1000e-full-crc", "before"), "--after", fx("e1000e-full-crc", "after")}, "", exitOK},
		{"nic-counter-reset.txt", []string{"--sysfs", fx("counter-reset", "before"), "--after", fx("counter-reset", "after"), "enp4s0"}, "", exitOK},
		{"nic-pin-tulip.txt", []string{"--sysfs", fx("tulip-enumerated", "before"), "eth1", "--pin", "lan0"}, "", exitOK},
		{"nic-rename-eth0-eth2.txt", []string{"--sysfs", fx("rename-eth0-eth2", "before"), "--after", fx("rename-eth0-eth2", "after"), "eth0"}, "", exitOK},
		{"nic-rename-eth0-eth2-all.txt", []string{"--sysfs", fx("rename-eth0-eth2", "before"), "--after", fx("rename-eth0-eth2", "after")}, "", exitOK},
		{"nic-rename-pinned-lan0.txt", []string{"--sysfs", fx("rename-pinned-lan0", "before"), "--after", fx("rename-pinned-lan0", "after"), "lan0"}, "", exitFailure},
		{"nic-e1000e-10half-partner.txt", []string{"--sysfs", fx("e1000e-10half-partner", "before"), "--after", fx("e1000e-10half-partner", "after"), "enp0s25"}, "", exitOK},
		{"nic-tulip-hub-excessive.txt", []string{"--sysfs", fx("tulip-hub-excessive", "before"), "--after", fx("tulip-hub-excessive", "after"), "eth0"}, "", exitOK},
		{"nic-e1000e-100full-crc-noethtool.txt", []string{"--sysfs", fx("e1000e-100full-crc-noethtool", "before"), "--after", fx("e1000e-100full-crc-noethtool", "after"), "enp3s0"}, "", exitFailure},
	} {
		t.Run(strings.TrimSuffix(tc.golden, ".txt"), func(t *testing.T) {
			code, out, errs := runNicArgs(t, tc.args...)
			if code != tc.code || errs != tc.stderr {
				t.Fatalf("blast nic %s: exit %d, stderr %q; want %d, %q", strings.Join(tc.args, " "), code, errs, tc.code, tc.stderr)
			}
			golden.Check(t, "testdata/"+tc.golden, out)
		})
	}
}

// The duplex-mismatch pair must be diagnosed as such, whatever the golden says.
func TestNicPairFindings(t *testing.T) {
	code, out, _ := runNicArgs(t, "--sysfs", fx("e1000-100half-latecoll", "before"), "--after", fx("e1000-100half-latecoll", "after"), "enp0s11")
	if code != exitFailure {
		t.Fatalf("exit %d, want 1 (it reports an ERROR)", code)
	}
	for _, want := range []string{
		"enp0s11: counter changes over 10s",
		"ERROR D1 enp0s11: duplex mismatch",
		"ERROR D3 enp0s11: late collisions",
		"WARN  D5 enp0s11: heavy collisions",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// A card renamed between two captures is followed by its permanent MAC and
// bus address: reported as a rename with the pin advice, its counters
// compared under both names, not listed as one gone and one new.
func TestNicRename(t *testing.T) {
	before, after := fx("rename-eth0-eth2", "before"), fx("rename-eth0-eth2", "after")
	t.Run("by its first name", func(t *testing.T) {
		code, out, errs := runNicArgs(t, "--sysfs", before, "--after", after, "eth0")
		if code != exitOK || errs != "" {
			t.Fatalf("exit %d, stderr %q", code, errs)
		}
		first, _, _ := strings.Cut(out, "\n")
		if want := "eth0 before is eth2 after: same permanent MAC 00:25:90:3a:5c:10 and bus 0000:00:19.0"; first != want {
			t.Errorf("first line %q, want %q", first, want)
		}
		for _, want := range []string{
			"\neth2 (ifindex 4)\n",
			"\neth2: counts since its counters restarted from zero: the machine rebooted between the captures (another boot id, kernel 6.12.0 → 6.18.0)\n",
			"\n    rx_packets          +1204331\n",
			"\nWARN  D25 eth2: renamed between the captures (eth0 → eth2): ",
			"      evidence: eth0 before is eth2 after: same permanent MAC 00:25:90:3a:5c:10 and bus 0000:00:19.0; eth0 is now the igb at 0000:03:00.0 (eth1 before)\n",
			"[Match] PermanentMACAddress=00:25:90:3a:5c:10 and [Link] Name=lan0 ('blast nic eth2 --pin lan0' on that machine",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q", want)
			}
		}
	})
	t.Run("json", func(t *testing.T) {
		code, out, errs := runNicArgs(t, "-J", "--sysfs", before, "--after", after, "eth0")
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var r nicinfo.Result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		want := &nicinfo.Match{Before: "eth0", After: "eth2", By: "permanent MAC 00:25:90:3a:5c:10 and bus 0000:00:19.0",
			BeforeNaming: "enumerated", OldNameNow: "the igb at 0000:03:00.0 (eth1 before)"}
		if diff := cmp.Diff(want, r.Renamed); diff != "" {
			t.Errorf("renamed (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"WARN D25"}, findingRules(r.Findings)); diff != "" {
			t.Errorf("findings (-want +got):\n%s", diff)
		}
		if r.Delta == nil || r.Delta.Restarted == "" || r.Delta.Counters["tx_packets"] != 987_120 {
			t.Errorf("delta %+v: want counted from zero since the reboot, tx_packets 987120", r.Delta)
		}
	})
	t.Run("a name of the first capture wins", func(t *testing.T) {
		// eth2 is the second igb port in the first capture (eth1 now), not
		// the e1000e that is eth2 now.
		code, out, errs := runNicArgs(t, "--sysfs", before, "--after", after, "eth2")
		if code != exitOK || !strings.HasPrefix(out, "eth2 before is eth1 after: same permanent MAC 00:1b:21:8e:40:ab and bus 0000:03:00.1\n") {
			t.Errorf("exit %d, stderr %q, output starts %q", code, errs, out[:min(len(out), 100)])
		}
	})
	t.Run("all", func(t *testing.T) {
		code, out, errs := runNicArgs(t, "-J", "--sysfs", before, "--after", after)
		if code != exitOK || errs != "" {
			t.Fatalf("exit %d, stderr %q: want no interface noted gone or new", code, errs)
		}
		var rs []nicinfo.Result
		if err := json.Unmarshal([]byte(out), &rs); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rs {
			got = append(got, r.Renamed.Before+" → "+r.Interface.Name+" "+r.Interface.BusInfo)
		}
		want := []string{"eth1 → eth0 0000:03:00.0", "eth2 → eth1 0000:03:00.1", "eth0 → eth2 0000:00:19.0"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("renames (-want +got):\n%s", diff)
		}
	})
	t.Run("by its new name", func(t *testing.T) {
		// lan0 is only in the second capture: found there, followed back to eth0.
		code, out, errs := runNicArgs(t, "--sysfs", fx("rename-pinned-lan0", "before"), "--after", fx("rename-pinned-lan0", "after"), "lan0")
		if code != exitFailure || !strings.HasPrefix(out, "eth0 before is lan0 after: same permanent MAC 74:d4:35:9b:20:4e and bus 0000:02:00.0\n") ||
			!strings.Contains(out, "\nlan0: counter changes over 5m12s\n") || !strings.Contains(out, "\nINFO  D25 lan0: renamed between the captures (eth0 → lan0): the new name is pinned by /etc/systemd/network/10-lan0.link\n") {
			t.Errorf("exit %d, stderr %q, output:\n%s", code, errs, out)
		}
	})
}

// The offline findings of the new scenarios, by rule, severity and the
// words that carry the diagnosis.
func TestNicOfflineFindings(t *testing.T) {
	for _, tc := range []struct {
		scenario, iface string
		want            []string // rule and severity, in order
		lines           []string // in the text output
	}{
		{"e1000e-10half-partner", "enp0s25", []string{"WARN D2"}, []string{
			"WARN  D2 enp0s25: running half duplex: the link partner is a hub or a 10/half-only device (it advertises only 10baseT_Half)\n",
			"evidence: speed 10M, duplex half, autoneg on, the NIC supports full duplex, link partner advertises only 10baseT_Half; Δlate_collisions = 0",
		}},
		{"e1000-100half-latecoll", "enp0s11", []string{"ERROR D1", "ERROR D2", "ERROR D3", "WARN D5"}, []string{
			"ERROR D2 enp0s11: running half duplex on a link that can run full duplex: the peer is forced, so parallel detection chose half\n",
			"link partner advertises no modes (peer forced: its speed and duplex are hard-set)",
		}},
		{"tulip-hub-excessive", "eth0", []string{"WARN D5"}, []string{
			"WARN  D5 eth0: a busy shared segment (hub): heavy collisions at half duplex, with frames dropped after 16 tries (excessive collisions, tx_aborted_errors), none of them late, no CRC error: not a duplex mismatch\n",
			"Δexcessive_collisions = 212 [tx_aborted_errors]: frames dropped after 16 collisions in a row",
		}},
		{"e1000e-10half-hub", "enp0s25", []string{"WARN D2", "WARN D5"}, []string{
			"WARN  D2 enp0s25: a busy shared segment (hub): running half duplex because the link partner is a hub that does not negotiate (it collides, never late)\n",
			"Δlate_collisions = 0 [tx_abort_late_coll (-S)] and Δfcs_errors = 0 in 9000 collisions: every station listens before it sends, so a shared segment, not a duplex mismatch",
		}},
		{"e1000e-100full-crc-noethtool", "enp3s0", []string{"ERROR D6"}, []string{
			"ERROR D6 enp3s0: CRC and alignment errors on a 10/100 full-duplex link: a duplex mismatch (the peer at half duplex) or a bad cable\n",
			"fix: tell them apart at the far end: a peer at half duplex counts collisions and late collisions on that port",
		}},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			args := []string{"--sysfs", fx(tc.scenario, "before"), "--after", fx(tc.scenario, "after"), tc.iface}
			// An ERROR among the findings fails the command.
			want := exitOK
			if slices.ContainsFunc(tc.want, func(r string) bool { return strings.HasPrefix(r, "ERROR ") }) {
				want = exitFailure
			}
			code, out, errs := runNicArgs(t, args...)
			if code != want || errs != "" {
				t.Fatalf("exit %d, stderr %q; want %d", code, errs, want)
			}
			for _, l := range tc.lines {
				if !strings.Contains(out, l) {
					t.Errorf("output lacks %q", l)
				}
			}
			code, out, errs = runNicArgs(t, append([]string{"-J"}, args...)...)
			var r nicinfo.Result
			if err := json.Unmarshal([]byte(out), &r); code != want || err != nil {
				t.Fatalf("-J: exit %d, %v, stderr %q", code, err, errs)
			}
			if diff := cmp.Diff(tc.want, findingRules(r.Findings)); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

func findingRules(fs []finding.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Severity.String()+" "+string(f.Rule))
	}
	return out
}

func TestNicJSON(t *testing.T) {
	t.Run("pair", func(t *testing.T) {
		code, out, errs := runNicArgs(t, "-J", "--sysfs", fx("e1000-100half-latecoll", "before"), "--after", fx("e1000-100half-latecoll", "after"), "enp0s11")
		if code != exitFailure { // its findings hold an ERROR
			t.Fatalf("exit %d: %s", code, errs)
		}
		var r nicinfo.Result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("output is not a Result: %v\n%s", err, out)
		}
		if r.Interface == nil || r.Interface.Name != "enp0s11" || r.Interface.Driver != "e1000" || r.Interface.Link.Duplex != "half" {
			t.Errorf("interface = %+v, want enp0s11, e1000, half duplex", r.Interface)
		}
		if r.Interface.Link.SpeedMbps == nil || *r.Interface.Link.SpeedMbps != 100 {
			t.Errorf("speed = %v, want 100", r.Interface.Link.SpeedMbps)
		}
		if r.Delta == nil || r.Delta.Counters["collisions"] != 4213 || r.Delta.DriverStats["tx_abort_late_coll"] != 377 {
			t.Errorf("delta = %+v, want collisions +4213, tx_abort_late_coll +377", r.Delta)
		}
		want := []string{"ERROR D1", "ERROR D2", "ERROR D3", "WARN D5"}
		if diff := cmp.Diff(want, findingRules(r.Findings)); diff != "" {
			t.Errorf("findings (-want +got):\n%s", diff)
		}
	})
	t.Run("all", func(t *testing.T) {
		code, out, errs := runNicArgs(t, "--json", "--sysfs", fx("virtio", "before"))
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var rs []nicinfo.Result
		if err := json.Unmarshal([]byte(out), &rs); err != nil {
			t.Fatalf("output is not a list of Results: %v\n%s", err, out)
		}
		var names []string
		for _, r := range rs {
			names = append(names, r.Interface.Name)
			if r.Delta != nil {
				t.Errorf("%s: delta from one tree", r.Interface.Name)
			}
		}
		if diff := cmp.Diff([]string{"lo", "eth0"}, names); diff != "" {
			t.Errorf("interfaces (-want +got):\n%s", diff)
		}
	})
	t.Run("pin", func(t *testing.T) {
		code, out, errs := runNicArgs(t, "-J", "--sysfs", fx("tulip-enumerated", "before"), "eth1", "--pin", "lan0")
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var a nicinfo.NamingAdvice
		if err := json.Unmarshal([]byte(out), &a); err != nil {
			t.Fatalf("output is not NamingAdvice: %v\n%s", err, out)
		}
		if a.Name != "lan0" || a.Match != "PermanentMACAddress=00:00:f8:21:33:44" || a.LinkPath != "/etc/systemd/network/10-lan0.link" {
			t.Errorf("advice = %+v", a)
		}
	})
}

func TestNicErrors(t *testing.T) {
	virtio := fx("virtio", "before")
	scenario := filepath.Join("..", "..", "nicinfo", "testdata", "e1000-100half-latecoll")
	missing := filepath.Join(t.TempDir(), "nope")
	empty := t.TempDir()
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A directory holding only before/; a bare copy of sysfs (class/net
	// without sys/); a tree whose device directory was not captured.
	onlyBefore := t.TempDir()
	if abs, err := filepath.Abs(virtio); err != nil {
		t.Fatal(err)
	} else if err := os.Symlink(abs, filepath.Join(onlyBefore, "before")); err != nil {
		t.Fatal(err)
	}
	bare := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bare, "class", "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	incomplete := t.TempDir()
	if err := os.MkdirAll(filepath.Join(incomplete, "sys", "class", "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../devices/pci0000:00/0000:00:03.0/net/eth0", filepath.Join(incomplete, "sys", "class", "net", "eth0")); err != nil {
		t.Fatal(err)
	}
	renameB, renameA := fx("rename-eth0-eth2", "before"), fx("rename-eth0-eth2", "after")
	tulip := fx("tulip-enumerated", "before")
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"unknown interface in a tree", []string{"--sysfs", virtio, "x"}, exitUsage,
			`blast: nic: no interface "x" in ` + virtio + `: see 'blast nic --sysfs ` + virtio + `' for the list`},
		{"interface only in before", []string{"--sysfs", fx("virtio", "before"), "--after", fx("tulip-enumerated", "before"), "lo"}, exitUsage,
			`blast: nic: no interface "lo" in ` + fx("tulip-enumerated", "before") + `: see 'blast nic --sysfs ` + virtio + `' for the list`},
		{"missing sysfs dir", []string{"--sysfs", missing}, exitUsage,
			"blast: nic: --sysfs " + missing + ": cannot read it (no such file or directory): give a tree made by 'blast nic --capture DIR'"},
		{"not a tree", []string{"--sysfs", empty}, exitUsage,
			"blast: nic: --sysfs " + empty + ": not a captured tree (no readable sys/class/net): give a tree made by 'blast nic --capture DIR'"},
		{"scenario dir", []string{"--sysfs", scenario}, exitUsage,
			"blast: nic: --sysfs " + scenario + ": holds before/ (and after/), not a tree: use --sysfs " + scenario + "/before --after " + scenario + "/after"},
		{"scenario dir given to --after", []string{"--sysfs", virtio, "--after", scenario}, exitUsage,
			"blast: nic: --after " + scenario + ": holds after/, not a tree: use --after " + scenario + "/after"},
		{"dir holding before/ only", []string{"--sysfs", onlyBefore}, exitUsage,
			"blast: nic: --sysfs " + onlyBefore + ": holds before/, not a tree: use --sysfs " + onlyBefore + "/before"},
		{"the sys/ of a tree", []string{"--sysfs", virtio + "/sys"}, exitUsage,
			"blast: nic: --sysfs " + virtio + "/sys: holds class/net, not sys/class/net: it is the sys/ of the captured tree " + virtio + ": use --sysfs " + virtio},
		{"class/net of a tree", []string{"--sysfs", virtio, "--after", virtio + "/sys/class/net"}, exitUsage,
			"blast: nic: --after " + virtio + "/sys/class/net: lies inside the captured tree " + virtio + ": use --after " + virtio},
		{"a bare copy of sysfs", []string{"--sysfs", bare}, exitUsage,
			"blast: nic: --sysfs " + bare + ": holds class/net, not sys/class/net: a captured tree keeps sysfs under sys/ (move it to T/sys and give --sysfs T), or make one with 'blast nic --capture DIR'"},
		{"captures the wrong way round", []string{"--sysfs", renameA, "--after", renameB, "eth2"}, exitUsage,
			"blast: nic: --after " + renameB + " was captured (2026-03-14 09:26:53 UTC) before --sysfs " + renameA + " (2026-03-15 07:02:11 UTC): give the earlier capture to --sysfs: blast nic --sysfs " + renameB + " --after " + renameA},
		{"a card gone, its name taken by another", []string{"--sysfs", renameB, "--after", tulip, "eth1"}, exitUsage,
			`blast: nic: no interface "eth1" in ` + tulip + " (eth1 there is another card, not in " + renameB + "): see 'blast nic --sysfs " + renameB + "' for the list"},
		{"a card only in the second capture", []string{"--sysfs", tulip, "--after", renameA, "eth0"}, exitUsage,
			`blast: nic: no interface "eth0" in ` + tulip + " (it is new in " + renameA + ": 'blast nic --sysfs " + renameA + " eth0' shows its state): see 'blast nic --sysfs " + tulip + "' for the list"},
		{"incomplete tree", []string{"--sysfs", incomplete, "eth0"}, exitFailure,
			`blast: nic: interface "eth0": ` + incomplete + "/sys/class/net/eth0 links to ../../devices/pci0000:00/0000:00:03.0/net/eth0, which the capture does not hold (an incomplete tree: capture it again): no such interface"},
		{"bad after dir", []string{"--sysfs", virtio, "--after", missing}, exitUsage,
			"blast: nic: --after " + missing + ": cannot read it (no such file or directory): give a tree made by 'blast nic --capture DIR'"},
		{"after without sysfs", []string{"--after", virtio}, exitUsage,
			"blast: nic: --after needs --sysfs: blast nic --sysfs BEFORE --after AFTER [IFACE]"},
		{"pin without interface", []string{"--pin", "lan0"}, exitUsage,
			"blast: nic: --pin needs an interface: blast nic IFACE --pin NAME"},
		{"pin ethN", []string{"--sysfs", fx("tulip-enumerated", "before"), "eth1", "--pin", "eth7"}, exitUsage,
			`blast: nic: --pin eth7: pin eth1: "eth7" is in the kernel's ethN namespace and would race with its enumeration; pick another name (e.g. lan0)`},
		{"pin loopback", []string{"--sysfs", virtio, "lo", "--pin", "lan0"}, exitUsage,
			"blast: nic: --pin lan0: pin lo: a virtual interface has no card to match; it gets its name from whatever creates it (ip link add, a container runtime, systemd-networkd .netdev)"},
		{"pin with after", []string{"--sysfs", virtio, "--after", virtio, "eth0", "--pin", "lan0"}, exitUsage,
			"blast: nic: --pin and --after conflict: the advice is made from one tree; drop --after"},
		{"to with interface", []string{"--to", "127.0.0.1", "lo"}, exitUsage,
			`blast: nic: --to and "lo" conflict: --to finds the interface itself; drop one`},
		{"to with sysfs", []string{"--to", "127.0.0.1", "--sysfs", virtio}, exitUsage,
			"blast: nic: --to and --sysfs conflict: the route lookup asks this machine's kernel, not a capture"},
		{"capture with others", []string{"--capture", empty, "-J"}, exitUsage,
			"blast: nic: --capture takes no other option: blast nic --capture DIR [IFACE]"},
		{"capture into a full dir", []string{"--capture", full}, exitUsage,
			"blast: nic: --capture " + full + ": directory not empty: give a new or empty directory"},
		{"two interfaces", []string{"a", "b"}, exitUsage,
			`blast: nic: too many arguments: "a b": give one interface, or none for the table`},
		{"unknown flag", []string{"--bogus"}, exitUsage,
			"blast: nic: unknown flag: --bogus: run 'blast nic -h' for the options"},
		{"flag without value", []string{"--sysfs"}, exitUsage,
			"blast: nic: flag needs an argument: --sysfs: run 'blast nic -h' for the options"},
		{"empty value", []string{"--sysfs="}, exitUsage,
			"blast: nic: --sysfs needs a value: run 'blast nic -h' for the options"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runNicArgs(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			if out != "" {
				t.Errorf("stdout = %q, want nothing", out)
			}
			if diff := cmp.Diff(tc.stderr+"\n", errs); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

// The live sysfs given to --sysfs is named as such.
func TestNicLiveSysfsHint(t *testing.T) {
	if st, err := os.Stat("/sys/class/net"); err != nil || !st.IsDir() {
		t.Skip("no /sys/class/net here")
	}
	for _, dir := range []string{"/sys", "/sys/class/net"} {
		code, out, errs := runNicArgs(t, "--sysfs", dir)
		want := "blast: nic: --sysfs " + dir + ": that is this machine's live sysfs, not a capture: run blast nic without --sysfs, or save it with 'blast nic --capture DIR'\n"
		if code != exitUsage || out != "" || errs != want {
			t.Errorf("exit %d, stdout %q, stderr %q; want %d, nothing, %q", code, out, errs, exitUsage, want)
		}
	}
}

// The resolver's reason varies (no such host, no DNS server), so only the
// frame of the message is checked.
func TestNicUnresolvable(t *testing.T) {
	code, out, errs := runNicArgs(t, "--to", "no-such-host.invalid")
	const pre, post = "blast: nic: --to no-such-host.invalid: cannot resolve the name (", "): give an address or a name that resolves\n"
	if code != exitFailure || out != "" || !strings.HasPrefix(errs, pre) || !strings.HasSuffix(errs, post) || strings.Count(errs, "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q; want %d, nothing, %q...%q", code, out, errs, exitFailure, pre, post)
	}
}

// A tree captured by `blast nic --capture` is read back by --sysfs.
func TestNicCaptureLive(t *testing.T) {
	nicNeedRoot(t)
	dir := filepath.Join(t.TempDir(), "cap")
	code, out, errs := runNicArgs(t, "--capture", dir, "lo")
	if code != exitOK {
		t.Fatalf("capture: exit %d: %s", code, errs)
	}
	if want := "captured lo to " + dir + "; analyze it with: blast nic --sysfs " + dir + "\n"; out != want {
		t.Errorf("capture said %q, want %q", out, want)
	}
	code, out, errs = runNicArgs(t, "--sysfs", dir, "lo")
	if code != exitOK || !strings.HasPrefix(out, "lo (ifindex ") {
		t.Errorf("--sysfs of the capture: exit %d, stderr %q, output:\n%s", code, errs, out)
	}
}

func TestNicLive(t *testing.T) {
	nicNeedRoot(t)
	t.Run("table", func(t *testing.T) {
		code, out, errs := runNicArgs(t)
		if code != exitOK || !strings.HasPrefix(out, "IFACE ") || !strings.Contains(out, "\nlo ") {
			t.Errorf("exit %d, stderr %q, output:\n%s", code, errs, out)
		}
	})
	t.Run("lo", func(t *testing.T) {
		code, out, errs := runNicArgs(t, "lo")
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errs)
		}
		for _, want := range []string{"lo (ifindex ", "\n  mtu ", "\n  counters: "} {
			if !strings.Contains(out, want) {
				t.Errorf("report lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("lo json", func(t *testing.T) {
		code, out, errs := runNicArgs(t, "-J", "lo")
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var r nicinfo.Result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if i := r.Interface; i == nil || i.Name != "lo" || !i.Virtual || i.Type == nil || *i.Type != 772 {
			t.Errorf("interface = %+v, want lo, virtual, type 772", r.Interface)
		}
	})
	t.Run("to 127.0.0.1", func(t *testing.T) {
		code, out, errs := runNicArgs(t, "--to", "127.0.0.1")
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errs)
		}
		first, rest, _ := strings.Cut(out, "\n")
		if !strings.HasPrefix(first, "route to 127.0.0.1: interface lo (ifindex ") || !strings.Contains(first, "gateway none (on-link)") {
			t.Errorf("route line = %q", first)
		}
		if !strings.HasPrefix(rest, "\nlo (ifindex ") {
			t.Errorf("report after the route line does not start with lo:\n%s", rest)
		}
	})
	t.Run("to json", func(t *testing.T) {
		code, out, errs := runNicArgs(t, "-J", "--to", "127.0.0.1")
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var v struct {
			Host      string             `json:"host"`
			Route     nicinfo.Route      `json:"route"`
			Interface *nicinfo.Interface `json:"interface"`
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatal(err)
		}
		if v.Host != "127.0.0.1" || v.Route.Iface != "lo" || v.Interface == nil || v.Interface.Name != "lo" {
			t.Errorf("got host %q route %+v interface %v", v.Host, v.Route, v.Interface)
		}
	})
	t.Run("unknown interface", func(t *testing.T) {
		code, out, errs := runNicArgs(t, "x")
		want := `blast: nic: no interface "x": see 'blast nic' for the list` + "\n"
		if code != exitUsage || out != "" || errs != want {
			t.Errorf("exit %d, stdout %q, stderr %q; want %d, nothing, %q", code, out, errs, exitUsage, want)
		}
	})
}

// nicNeedRoot skips tests that read the live system's ethtool answers.
func nicNeedRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: reads this machine's interfaces through ethtool ioctls")
	}
}
