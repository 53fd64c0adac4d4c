package main

import (
	"context"
	"strings"
	"testing"
)

// The admission flags: bad values are one line naming the flag, exit 2.
func TestServerAdmissionFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in the one line on stderr
	}{
		{[]string{"--max-streams", "129"}, `--max-streams 129: must be 1 to 128`},
		{[]string{"--max-bytes", "lots"}, `--max-bytes "lots": want a size such as 512M or 2G`},
		{[]string{"--max-bytes", "-5"}, `--max-bytes "-5": want a size`},
		{[]string{"--max-test-memory", "0"}, `--max-test-memory "0": want a size`},
		{[]string{"--max-test-memory", "100K"}, `the budget of a test must be at least 1 MiB`},
		{[]string{"--max-test-memory", "2G", "--max-memory", "1G"}, `the total at least a test's`},
		{[]string{"--allow", "10.0.0.0/33"}, `--allow "10.0.0.0/33": "10.0.0.0/33" is no address or CIDR prefix`},
		{[]string{"--allow", ","}, `--allow ",": name at least one address or CIDR prefix`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := serverRun(t, context.Background(), nil, tc.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			if stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "blast server: ") || !strings.Contains(stderr, tc.want) {
				t.Errorf("stdout %q, stderr %q: want one line with %q", stdout, stderr, tc.want)
			}
		})
	}
}
