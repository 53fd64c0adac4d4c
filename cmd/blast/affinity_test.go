package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestClientAffinityForms: -A takes every value iperf3 3.12's parser
// takes, with iperf3's meaning (checked against iperf3 3.12's
// send_parameters: "1,x" sends server_affinity 0, "1/1" none), and
// warns where iperf3 silently reads past text or wraps a number.
func TestClientAffinityForms(t *testing.T) {
	for _, tc := range []struct {
		arg, want, warn string // want: "cpu server"; warn: a part of the warning, "" for none
	}{
		{"1", "[1] <nil>", ""},
		{"1,0", "[1] 0", ""},
		{"0x1", "[1] <nil>", ""},
		{"010", "[8] <nil>", ""}, // C's base 0: octal
		{" +2", "[2] <nil>", ""},
		{"1, 3", "[1] 3", ""},
		{"1/1", "[1] <nil>", `read as -A 1, as iperf3 reads it: it ignores "/1"; -A N,M asks the server for CPU M`},
		{"2x", "[2] <nil>", `it ignores "x"`},
		{"0x", "[0] <nil>", `it ignores "x"`},
		{"1,x", "[1] 0", `the server's CPU "x" reads as 0`},
		{"1,", "[1] 0", `the server's CPU "" reads as 0`},
		{"1,2,3", "[1] 2", `it ignores ",3"`},
		{"1:5,2", "[1] 2", `it ignores ":5"`},
		{"1,0x10", "[1] 0", `it ignores "x10"`}, // the server's CPU is decimal only
		{"4294967297", "[1] <nil>", "4294967297 wraps to 1 in a C int"},
		{"1,4294967296", "[1] 0", "4294967296 wraps to 0 in a C int"},
		{"1024,1024", "", "the client's CPU N must be 0 to 1023"},
		{"-1", "", "the client's CPU N must be 0 to 1023"},
		{"1,-1", "", "the server's CPU M must be 0 to 1024"},
		{"1,1025", "", "the server's CPU M must be 0 to 1024"},
		{"x", "", "want N or N,M"},
		{"", "", "want N or N,M"},
		{"/1", "", "want N or N,M"},
		{"99999999999999999999", "", "the client's CPU N must be 0 to 1023"}, // LONG_MAX wraps to -1
	} {
		c, r, err := parseClient(t, "h", "-A", tc.arg)
		if tc.want == "" {
			if err == nil || !strings.Contains(err.Error(), tc.warn) || !strings.HasPrefix(err.Error(), "-A "+tc.arg+": unable to set CPU affinity") {
				t.Errorf("-A %q: error %v, want one with %q", tc.arg, err, tc.warn)
			}
			continue
		}
		if err != nil {
			t.Errorf("-A %q: %v", tc.arg, err)
			continue
		}
		srv := "<nil>"
		if c.ServerAffinity != nil {
			srv = fmt.Sprint(*c.ServerAffinity)
		}
		if got := fmt.Sprint(c.Affinity, " ", srv); got != tc.want {
			t.Errorf("-A %q: %s, want %s", tc.arg, got, tc.want)
		}
		warn := strings.Join(r.warnings, "|")
		switch {
		case tc.warn == "" && warn != "":
			t.Errorf("-A %q: warned %q", tc.arg, warn)
		case tc.warn != "" && (!strings.Contains(warn, tc.warn) || !strings.HasPrefix(warn, "warning: -A "+tc.arg+" is read as")):
			t.Errorf("-A %q: warning %q, want one with %q", tc.arg, warn, tc.warn)
		}
	}
}
