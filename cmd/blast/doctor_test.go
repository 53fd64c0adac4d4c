package main

import (
	"strings"
	"testing"
)

// doctor --offline ranks a capture's findings into one verdict: the
// duplex mismatch of the late-collision capture comes first, and a
// verdict with a cause exits 1.
func TestDoctorOffline(t *testing.T) {
	dir := "../../nicinfo/testdata/e1000-100half-latecoll/"
	code, out, errOut := runArgs(t, "blast", "doctor", "--offline", dir+"before", "--after", dir+"after")
	if code != exitFailure || errOut != "" {
		t.Fatalf("exit %d, stderr %q: want 1 and nothing", code, errOut)
	}
	lines := strings.Split(out, "\n")
	if want := "verdict: ERROR D1: duplex mismatch: the peer does not negotiate (its speed and duplex are forced), so parallel detection chose half duplex"; len(lines) < 3 || lines[2] != want {
		t.Errorf("got\n%s\nwant line 3 %q", out, want)
	}
	if !strings.Contains(out, "  1. ERROR D1 enp0s11: ") || !strings.Contains(out, "     fix: ") {
		t.Errorf("no ranked findings with their fix:\n%s", out)
	}
}

// Mistakes on doctor's command line are usage errors, in one line.
func TestDoctorUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "blast doctor: no host: blast doctor HOST (a blast server runs there: blast server), or --offline DIR\n"},
		{[]string{"a", "b"}, "blast doctor: too many arguments: \"a b\": give one host\n"},
		{[]string{"h", "-t", "0"}, "blast doctor: -t 0: give whole seconds from 1 to 3600 for each test\n"},
		{[]string{"h", "-b", "fast"}, "blast doctor: -b fast: give a positive rate in bits per second (100M, 1G)\n"},
		{[]string{"h", "-4", "-6"}, "blast doctor: -4 and -6 conflict: pick one address family, or neither\n"},
		{[]string{"h", "--after", "x"}, "blast doctor: --after needs --offline: blast doctor --offline BEFORE --after AFTER\n"},
		{[]string{"--offline", "x", "-t", "3"}, "blast doctor: --time is for a run against a server: --offline runs no tests\n"},
	} {
		code, out, errOut := runArgs(t, "blast", append([]string{"doctor"}, tc.args...)...)
		if code != exitUsage || out != "" || errOut != tc.want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, nothing, %q", tc.args, code, out, errOut, tc.want)
		}
	}
}
