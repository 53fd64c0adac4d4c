package main

import (
	"strconv"
	"strings"
	"testing"
)

func TestVerifyFlagsTTCP(t *testing.T) {
	cfg, err := parseTTCP([]string{"-r", "--verify", "-l", "4096"}, "blast")
	if err != nil || !cfg.Verify || !cfg.SinkMode || cfg.BufLen != 4096 {
		t.Errorf("-r --verify: %+v, %v", cfg, err)
	}
	cfg, err = parseTTCP([]string{"-t", "-u", "--verify", "h"}, "blast")
	if err != nil || !cfg.Verify || !cfg.SinkMode || !cfg.UDP {
		t.Errorf("-t -u --verify: %+v, %v", cfg, err)
	}
	code, out, _ := runArgs(t, "blast", "ttcp", "-h")
	if code != exitOK || !strings.Contains(out, "--verify") {
		t.Errorf("ttcp help (%d) does not name --verify:\n%s", code, out)
	}
}

func TestVerifyFlagsClient(t *testing.T) {
	c, _, err := parseClient(t, "h", "--verify", "-u", "-l", "1400")
	if err != nil || !c.Verify {
		t.Errorf("client --verify: %+v, %v", c, err)
	}
	c, _, err = parseClient(t, "h")
	if err != nil || c.Verify {
		t.Errorf("client without --verify: Verify %v, %v", c.Verify, err)
	}
}

// A command line --verify cannot run is a usage error, exit 2, in one
// line.
func TestVerifyUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-r", "--verify", "-B"}, "blast: --verify checks the received blocks and discards them, and -B writes them out: drop -B\n"},
		{[]string{"-r", "--verify", "-l", "10"}, "blast: -l 10: --verify needs blocks of at least 24 bytes (their header)\n"},
		{[]string{"-r", "--verify", "--backend", "trunc"}, "blast: --verify: trunc discards what it receives without reading it: receive with --backend readwrite, splice or iouring\n"},
		{[]string{"client", "h", "--verify", "-R", "--skip-rx-copy"}, "blast client: --verify reads every byte received to check it, and --skip-rx-copy (trunc) discards them unread: drop one\n"},
		{[]string{"client", "h", "--verify", "-Z"}, "blast client: --verify with -Z: sendfile sends from a file, and the blocks are made in memory: drop -Z, or use --backend splice\n"},
		{[]string{"client", "h", "--verify", "-u", "-l", "32"}, "blast client: -l 32: --verify needs UDP datagrams of at least 40 bytes (iperf3's header, then the block's)\n"},
	} {
		code, _, errs := runArgs(t, "blast", tc.args...)
		if code != exitUsage || errs != tc.want {
			t.Errorf("%q: exit %d, stderr %q; want 2, %q", tc.args, code, errs, tc.want)
		}
	}
}

// blast client --verify against a blast server: the verify lines, exit
// 0; against iperf3 -s: exit 1, saying why.
func TestVerifyClientExit(t *testing.T) {
	port, _ := blastServerPort(t)
	code, out, errs := runArgs(t, "blast", "client", "127.0.0.1", "-p", strconv.Itoa(port), "--verify", "-n", "1M", "-R", "-P", "2")
	if code != exitOK || strings.Count(out, "blocks ok, 0 corrupt, 0 missing, 0 duplicate, 0 reordered (local receiver)\n") != 2 {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}

	iport, wait := iperf3ServerPort(t)
	code, out, errs = runArgs(t, "blast", "client", "127.0.0.1", "-p", strconv.Itoa(iport), "--verify", "-n", "1M")
	wait()
	if code != exitFailure || !strings.HasPrefix(errs, "blast client: --verify needs blast at both ends: the server is not blast (iperf3?)") ||
		!strings.Contains(out, "Verify: [") {
		t.Errorf("against iperf3: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}
