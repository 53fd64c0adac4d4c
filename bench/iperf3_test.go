package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// What iperf3 --version prints: Debian bookworm's 3.12, 3.21 built from
// its release tag, and a build from git after 3.21.
const (
	version312 = `iperf 3.12 (cJSON 1.7.15)
Linux vm 6.18.44-fc-v657 #1 SMP PREEMPT_DYNAMIC @0 x86_64
Optional features available: CPU affinity setting, IPv6 flow label, SCTP, TCP congestion algorithm setting, sendfile / zerocopy, socket pacing, authentication, bind to device, support IPv4 don't fragment
`
	version321 = `iperf 3.21 (cJSON 1.7.15)
Linux vm 6.18.44-fc-v657 #1 SMP PREEMPT_DYNAMIC @0 x86_64
Optional features available: CPU affinity setting, IPv6 flow label, TCP congestion algorithm setting, sendfile / zerocopy, socket pacing, bind to device, support IPv4 don't fragment, POSIX threads, GSO/GRO support
`
	version321git = `iperf 3.21+ (cJSON 1.7.15)
Linux vm 6.18.44-fc-v657 #1 SMP PREEMPT_DYNAMIC @0 x86_64
Optional features available: CPU affinity setting, POSIX threads, GSO/GRO support
`
)

func TestParseIperf3Version(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      Iperf3Version
		str       string
	}{
		{"Debian 3.12", version312, Iperf3Version{Major: 3, Minor: 12}, "3.12"},
		{"3.21 with GSO/GRO", version321, Iperf3Version{Major: 3, Minor: 21, GSRO: true}, "3.21"},
		{"after 3.21, from git", version321git, Iperf3Version{Major: 3, Minor: 21, Suffix: "+", GSRO: true}, "3.21+"},
		{"3.21 built without GSO/GRO", "iperf 3.21 (cJSON 1.7.15)\nOptional features available: POSIX threads\n",
			Iperf3Version{Major: 3, Minor: 21}, "3.21"},
		{"patch release", "iperf 3.17.1 (cJSON 1.7.15)\n", Iperf3Version{Major: 3, Minor: 17, Patch: 1}, "3.17.1"},
		{"beta", "iperf 3.15-mt-beta1 (cJSON 1.7.15)\n", Iperf3Version{Major: 3, Minor: 15, Suffix: "-mt-beta1"}, "3.15-mt-beta1"},
		{"old, no cJSON", "iperf 3.1.3\n", Iperf3Version{Major: 3, Minor: 1, Patch: 3}, "3.1.3"},
		// GSO/GRO support claimed by a version before 3.21 is not --gsro.
		{"claim before 3.21", "iperf 3.20 (cJSON 1.7.15)\nOptional features available: GSO/GRO support\n", Iperf3Version{Major: 3, Minor: 20}, "3.20"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseIperf3Version(tc.out)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseIperf3Version (-want +got):\n%s", diff)
			}
			if got.String() != tc.str {
				t.Errorf("String() = %q, want %q", got.String(), tc.str)
			}
		})
	}
	for _, bad := range []string{"", "iperf version 2.1.9 (14 March 2023) pthreads\n", "sh: iperf3: not found", "iperf 3.99999999999999999999\n"} {
		if v, err := ParseIperf3Version(bad); err == nil {
			t.Errorf("ParseIperf3Version(%q) = %v, want an error", bad, v)
		}
	}
}

func TestIperf3VersionCompare(t *testing.T) {
	parse := func(s string) Iperf3Version {
		v, err := ParseIperf3Version("iperf " + s + " (cJSON 1.7.15)\n")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// Oldest first.
	order := []string{"3.1.3", "3.9", "3.12", "3.15-mt-beta1", "3.16", "3.17", "3.17.1", "3.21", "3.21+", "4.0"}
	for i := range order {
		for j := range order {
			want := 0
			switch {
			case i < j:
				want = -1
			case i > j:
				want = 1
			}
			if got := parse(order[i]).Compare(parse(order[j])); got != want {
				t.Errorf("%s vs %s: %d, want %d", order[i], order[j], got, want)
			}
		}
	}
	for s, modern := range map[string]bool{"3.12": false, "3.15-mt-beta1": false, "3.16": true, "3.21": true, "3.21+": true} {
		if got := parse(s).AtLeast(ModernIperf3); got != modern {
			t.Errorf("%s modern: %v, want %v", s, got, modern)
		}
	}
}

// fakeIperf3 writes an executable script at dir/name that prints out as
// its version.
func fakeIperf3(t *testing.T, dir, name, out string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	script := "#!/bin/sh\ncat <<'EOF'\n" + out + "EOF\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFindModernIperf3(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh to run the fake iperf3s")
	}
	ctx := context.Background()
	usr, local, home := t.TempDir(), t.TempDir(), t.TempDir()
	debian := fakeIperf3(t, usr, "iperf3", version312)
	fakeIperf3(t, local, "iperf3-3.17", "iperf 3.17 (cJSON 1.7.15)\n")
	want := fakeIperf3(t, home, "iperf3-3.21", version321)
	fakeIperf3(t, home, "iperf3-broken", "Segmentation fault\n")
	fakeIperf3(t, home, "iperf3.conf", version321git) // not iperf3 or iperf3-*: not looked at
	if err := os.WriteFile(filepath.Join(home, "iperf3-3.99"), []byte("#!/bin/sh\necho 'iperf 3.99'\n"), 0o644); err != nil {
		t.Fatal(err) // not executable: not looked at
	}
	path := strings.Join([]string{usr, "relative/dir", local, "", home}, string(os.PathListSeparator))

	got := FindModernIperf3(ctx, path, debian)
	if got == nil {
		t.Fatal("no modern iperf3 found")
	}
	if got.Path != want || got.Version.String() != "3.21" || !got.Version.GSRO || got.Key != PeerIperf3Modern {
		t.Errorf("found %+v, want %s, 3.21 with --gsro", got, want)
	}
	if got.VersionLine != "iperf 3.21 (cJSON 1.7.15)" {
		t.Errorf("version line %q", got.VersionLine)
	}

	t.Run("Debian's own iperf3 is not the modern one", func(t *testing.T) {
		modernDebian := fakeIperf3(t, t.TempDir(), "iperf3", version321)
		if got := FindModernIperf3(ctx, filepath.Dir(modernDebian), modernDebian); got != nil {
			t.Errorf("found %s, the excluded binary", got.Path)
		}
		// A link to it is the same binary.
		links := t.TempDir()
		if err := os.Symlink(modernDebian, filepath.Join(links, "iperf3-3.21")); err != nil {
			t.Fatal(err)
		}
		if got := FindModernIperf3(ctx, links, modernDebian); got != nil {
			t.Errorf("found %s, a link to the excluded binary", got.Path)
		}
	})
	t.Run("only old ones", func(t *testing.T) {
		if got := FindModernIperf3(ctx, usr, ""); got != nil {
			t.Errorf("found %s (%s), want none before 3.16", got.Path, got.Version)
		}
	})
	t.Run("named with --iperf3", func(t *testing.T) {
		ip, err := ModernIperf3Path(ctx, want)
		if err != nil || ip.Path != want || ip.Version.String() != "3.21" {
			t.Errorf("ModernIperf3Path(%s) = %+v, %v", want, ip, err)
		}
		if _, err := ModernIperf3Path(ctx, debian); err == nil || !strings.Contains(err.Error(), "3.12") {
			t.Errorf("ModernIperf3Path of 3.12: %v, want an error naming its version", err)
		}
		if _, err := ModernIperf3Path(ctx, filepath.Join(home, "iperf3-broken")); err == nil {
			t.Error("ModernIperf3Path of a binary that is no iperf3: no error")
		}
		if _, err := ModernIperf3Path(ctx, filepath.Join(home, "no-such-iperf3")); err == nil {
			t.Error("ModernIperf3Path of a missing file: no error")
		}
	})
}

func FuzzParseIperf3Version(f *testing.F) {
	for _, s := range []string{version312, version321, version321git, "iperf 3.1.3", "iperf 3.15-mt-beta1 (cJSON", "", "iperf 9999999999999999999.1", "iperf 3.1.0.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, out string) {
		v, err := ParseIperf3Version(out)
		if err != nil {
			return
		}
		if v.Compare(v) != 0 || !v.AtLeast(v) {
			t.Errorf("%v does not equal itself", v)
		}
		w, err := ParseIperf3Version("iperf " + v.String() + "\n")
		if err != nil || w.Compare(v) != 0 {
			t.Errorf("%v: String %q reads back as %v, %v", v, v.String(), w, err)
		}
	})
}

func FuzzParseIperf3(f *testing.F) {
	for _, name := range []string{"iperf3-tcp.json", "iperf3-udp.json", "iperf3-gsro-master.json", "iperf3-3.21-gsro-l64.json", "blast-client-p4.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"error":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseIperf3(data)
		if err != nil || !r.UDP {
			return
		}
		if d := r.Delivered(); d < 0 || d > r.Packets {
			t.Errorf("delivered %d of %d sent", d, r.Packets)
		}
	})
}
