package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/internal/clock"
	"github.com/blastnet/blast/internal/golden"
	"github.com/blastnet/blast/internal/testkit"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/report"
	"github.com/blastnet/blast/stats"
	"github.com/blastnet/blast/ttcp"
)

// runArgs runs blast with args as the given program name and returns the
// exit status, standard output and standard error.
func runArgs(t *testing.T, argv0 string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb strings.Builder
	e := &env{ctx: context.Background(), argv0: argv0, stdin: strings.NewReader(""), stdout: &out, stderr: &errb}
	code := dispatch(e, args)
	return code, out.String(), errb.String()
}

func TestTTCPFlags(t *testing.T) {
	def := ttcp.Defaults()
	for _, tc := range []struct {
		args []string
		want func(c *ttcp.Config)
	}{
		{[]string{"-t", "-s", "host"}, func(c *ttcp.Config) { c.Transmit, c.SinkMode, c.Host = true, true, "host" }},
		{[]string{"-ts", "host"}, func(c *ttcp.Config) { c.Transmit, c.SinkMode, c.Host = true, true, "host" }},
		{[]string{"-rsu", "-l1400"}, func(c *ttcp.Config) { c.SinkMode, c.UDP, c.BufLen = true, true, 1400 }},
		{[]string{"-r", "-s", "-fm", "-p", "5555", "-b", "65536", "-T", "-v"}, func(c *ttcp.Config) {
			c.SinkMode, c.Format, c.Port, c.SockBuf, c.Touch, c.Verbose = true, 'm', 5555, 65536, true, true
		}},
		{[]string{"-t", "-s", "-n", "10", "-D", "-A", "4096", "-O", "8", "-S", "0x10", "-6", "h"}, func(c *ttcp.Config) {
			c.Transmit, c.SinkMode, c.NBuf, c.NoDelay, c.Align, c.Offset, c.TOS, c.Family, c.Host = true, true, 10, true, 4096, 8, 0x10, 6, "h"
		}},
		{[]string{"-t", "-s", "--rate", "100M", "-I", "veth0", "--backend", "readwrite", "-4", "h"}, func(c *ttcp.Config) {
			c.Transmit, c.SinkMode, c.Rate, c.Device, c.Family, c.Host = true, true, 100e6, "veth0", 4, "h"
		}},
		{[]string{"-t", "-s", "--rate", "2.5G", "h"}, func(c *ttcp.Config) { c.Transmit, c.SinkMode, c.Rate, c.Host = true, true, 2.5e9, "h" }},
		{[]string{"-t", "-s", "-u", "--backend", "mmsg:batch=64,gso", "h"}, func(c *ttcp.Config) {
			c.Transmit, c.SinkMode, c.UDP, c.Host = true, true, true, "h"
			c.Backend, c.BackendOpts = "mmsg", "batch=64,gso"
		}},
		{[]string{"-rsu", "--backend=mmsg:gro"}, func(c *ttcp.Config) {
			c.SinkMode, c.UDP, c.Backend, c.BackendOpts = true, true, "mmsg", "gro"
		}},
		{[]string{"-t", "-s", "--backend", "iouring:zc", "h"}, func(c *ttcp.Config) {
			c.Transmit, c.SinkMode, c.Host, c.Backend, c.BackendOpts = true, true, "h", "iouring", "zc"
		}},
		{[]string{"-r", "--backend", "mmsg:"}, func(c *ttcp.Config) { c.Backend = "mmsg" }},
		{[]string{"-t", "-s", "-u", "-I", "veth0", "--backend", "afxdp:queues=2,batch=64", "--dst-mac", "02:AA:00:00:00:01", "h"}, func(c *ttcp.Config) {
			c.Transmit, c.SinkMode, c.UDP, c.Device, c.Host = true, true, true, "veth0", "h"
			c.Backend, c.BackendOpts, c.DstMAC = "afxdp", "queues=2,batch=64", "02:aa:00:00:00:01"
		}},
		{[]string{"-t", "-s", "-u", "--backend", "afxdp:dstmac=02:aa:00:00:00:01,zc", "h"}, func(c *ttcp.Config) {
			c.Transmit, c.SinkMode, c.UDP, c.Host = true, true, true, "h"
			c.Backend, c.BackendOpts = "afxdp", "dstmac=02:aa:00:00:00:01,zc"
		}},
		{[]string{"-r", "-B", "-l", "10240"}, func(c *ttcp.Config) { c.Blocks, c.BufLen = true, 10240 }},
		{[]string{"-rB"}, func(c *ttcp.Config) { c.Blocks = true }},
		{[]string{"-t", "-s", "-d", "h"}, func(c *ttcp.Config) { c.Transmit, c.SinkMode, c.Debug, c.Host = true, true, true, "h" }},
		{[]string{"-rsd"}, func(c *ttcp.Config) { c.SinkMode, c.Debug = true, true }},
		{[]string{"-t", "-R", "-s"}, func(c *ttcp.Config) { c.Transmit, c.Reverse, c.SinkMode = true, true, true }},
		{[]string{"-rR", "-B", "h"}, func(c *ttcp.Config) { c.Reverse, c.Blocks, c.Host = true, true, "h" }},
		{[]string{"-r", "-R", "-D", "-b", "65536", "h"}, func(c *ttcp.Config) { c.Reverse, c.NoDelay, c.SockBuf, c.Host = true, true, 65536, "h" }},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got, err := parseTTCP(tc.args, "blast")
			if err != nil {
				t.Fatal(err)
			}
			want := def
			tc.want(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTTCPUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-t", "-s"}, "blast: -t needs the receiver's host: blast -t [options] HOST\n"},
		{[]string{"-t", "-r", "h"}, "blast: -t and -r conflict: transmit (-t HOST) or receive (-r), not both\n"},
		{[]string{"-r", "-l", "0"}, "blast: -l 0: the buffer length must be at least 1 byte\n"},
		{[]string{"-t", "-n", "-1", "h"}, "blast: -n -1: the number of buffers must be at least 1\n"},
		{[]string{"-r", "-f", "x"}, "blast: -f x: unknown format: use k, m, g (kilo/mega/gigabits) or K, M, G (bytes)\n"},
		{[]string{"-r", "-f", "mm"}, "blast: -f mm: unknown format: use k, m, g (kilo/mega/gigabits) or K, M, G (bytes)\n"},
		{[]string{"-t", "-s", "-u", "-D", "h"}, "blast: -D sets TCP_NODELAY, which UDP does not have: drop -D or -u\n"},
		{[]string{"-t", "-u", "h"}, "blast: -u needs -s: ttcp's UDP mode sends a pattern and cannot carry standard input (datagrams of 4 bytes or fewer are its sentinels); use TCP to send data\n"},
		{[]string{"-r", "-l", "x"}, "blast: invalid argument \"x\" for \"-l, --buflen\" flag: must be an integer: run 'blast -h' for the options\n"},
		{[]string{"-r", "-x"}, "blast: unknown shorthand flag: 'x' in -x: run 'blast -h' for the options\n"},
		{[]string{"-r", "-p", "70000"}, "blast: -p 70000: a port is a number from 1 to 65535\n"},
		{[]string{"-r", "-S", "300"}, "blast: -S 300: the TOS byte is a number from 0 to 255 (0x10, 16, 020)\n"},
		{[]string{"-t", "-s", "--rate", "fast", "h"}, "blast: --rate fast: a rate is bits per second, a number with an optional K, M or G (e.g. 100M)\n"},
		{[]string{"-t", "-s", "--backend", "nope", "h"}, "blast: --backend: unknown backend \"nope\": choose one of "},
		{[]string{"-r", "host"}, "blast: -r takes no host (got \"host\"): the receiver listens on port 5001; give the host to the transmitter (-t), or add -R to connect to a transmitter that listens (blast -t -R)\n"},
		{[]string{"-t", "-s", "-R", "h"}, "blast: -t -R takes no host (got \"h\"): the transmitter listens on port 5001 for the receiver; give the host to the receiver (blast -r -R HOST)\n"},
		{[]string{"-r", "-R"}, "blast: -r -R needs the transmitter's host: blast -r -R [options] HOST connects to a transmitter started with blast -t -R\n"},
		{[]string{"-t", "-s", "-u", "-R"}, "blast: -R reverses who connects, and ttcp's UDP mode has no connection: drop -R or -u\n"},
		{[]string{"-r", "-s", "-u", "-d"}, "blast: -d sets SO_DEBUG on ttcp's TCP socket (ttcp never sets it on UDP): drop -d or -u\n"},
		{[]string{"-t", "-B", "h"}, "blast: -B writes received data in whole -l blocks: it is for the receiver (-r), not the transmitter\n"},
		{[]string{"-r", "-s", "-B"}, "blast: -B writes whole -l blocks to standard output, and -s discards the data: drop -B or -s\n"},
		{[]string{"-r", "-B", "-l", "0"}, "blast: -l 0: the buffer length must be at least 1 byte\n"},
		{[]string{"-t", "-s", "a", "b"}, "blast: too many arguments: \"a b\": give one host\n"},
		{[]string{"-t", "-4", "-6", "h"}, "blast: -4 and -6 conflict: choose one address family, or neither for both\n"},
		{[]string{"-t", "-l", "70000", "-u", "-s", "h"}, "blast: -l 70000: a UDP datagram carries at most 65507 bytes\n"},
		{[]string{"-t", "-s", "-u", "--backend", "mmsg:batch=0", "h"}, "blast: --backend: backend mmsg option \"batch=0\": batch takes a count from 1 to 1048576\n"},
		{[]string{"-t", "-s", "-u", "--backend", "mmsg:batch=5000", "h"}, "blast: --backend: backend mmsg option batch=5000: at most 1024 messages per call (the kernel's UIO_MAXIOV)\n"},
		{[]string{"-t", "-s", "-u", "--backend", "mmsg:fast", "h"}, "blast: --backend: backend mmsg has no option \"fast\": it takes batch=N, gso, gro (see 'blast backends')\n"},
		{[]string{"-t", "-s", "-u", "--backend", "mmsg", "--dst-mac", "02:00:00:00:00:01", "h"}, "blast: --backend: backend mmsg has no option \"dstmac=02:00:00:00:00:01\": it takes batch=N, gso, gro (see 'blast backends')\n"},
		{[]string{"-t", "-s", "-u", "--backend", "afxdp", "--dst-mac", "02:00:00", "h"}, "blast: --dst-mac 02:00:00: not an Ethernet address (e.g. 02:00:00:00:00:01)\n"},
		{[]string{"-r", "-s", "-u", "--backend", "afxdp", "--dst-mac", "02:00:00:00:00:01"}, "blast: --dst-mac 02:00:00:00:00:01: only the transmitter (-t) builds frames; drop it on the receiver\n"},
		{[]string{"-t", "-s", "-u", "--backend", "afxdp:dstmac=02:00:00:00:00:02", "--dst-mac", "02:00:00:00:00:01", "h"}, "blast: --dst-mac 02:00:00:00:00:01 and --backend afxdp:dstmac=02:00:00:00:00:02 conflict: name the MAC once\n"},
		{[]string{"-t", "-s", "-u", "--backend", "afxdp:queues=0", "h"}, "blast: --backend: backend afxdp option \"queues=0\": queues takes a count from 1 to 1048576\n"},
		{[]string{"-t", "-s", "-u", "--backend", "afxdp:queues=65", "h"}, "blast: --backend: backend afxdp option queues=65: at most 64\n"},
		{[]string{"-t", "-s", "--backend", "readwrite:gso", "h"}, "blast: --backend: backend readwrite takes no options (given: gso)\n"},
		{[]string{"-t", "-s", "--backend", "sendfile:gso", "h"}, "blast: --backend: backend sendfile has no option \"gso\": it takes file=PATH (see 'blast backends')\n"},
		{[]string{"-t", "-s", "--backend", "nope:batch=2", "h"}, "blast: --backend: unknown backend \"nope\": choose one of "},
		{[]string{"-r", "-s", "--rx-backend", "mmsg"}, "blast: --rx-backend mmsg: in ttcp mode each end is its own process: give the receiver --backend mmsg (blast -r --backend mmsg); --rx-backend is for blast compare, where one process runs both ends\n"},
		{[]string{"-t", "-F", "/nonexistent/file", "--backend", "sendfile", "h"}, "blast: -F /nonexistent/file: no such file or directory\n"},
		{[]string{"-t", "-F", "/dev/null", "--backend", "splice", "h"}, "blast: -F /dev/null: not a regular file (sendfile and splice read from files; pipe anything else to standard input)\n"},
		{[]string{"-r", "-F", "x"}, "blast: -F x: only the transmitter (-t) sends a file; the receiver writes to standard output without -s\n"},
		{[]string{"-t", "-s", "-F", "x", "--backend", "sendfile", "h"}, "blast: -F x and -s conflict: -s sends a pattern, -F sends the file; choose one\n"},
		{[]string{"-t", "-F", "x", "h"}, "blast: -F x needs --backend sendfile or --backend splice (got readwrite); other backends send a file given on standard input (< x)\n"},
		{[]string{"-t", "-F", "x", "-u", "-s", "--backend", "sendfile", "h"}, "blast: -F x and -s conflict: -s sends a pattern, -F sends the file; choose one\n"},
		{[]string{"-t", "-F", "x", "--backend", "splice:file=y", "h"}, "blast: -F x and --backend splice:file=y conflict: name the file once\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errs := runArgs(t, "blast", tc.args...)
			if code != exitUsage {
				t.Errorf("exit status %d, want %d", code, exitUsage)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
			if !strings.HasPrefix(errs, tc.want) || strings.Count(errs, "\n") != 1 {
				t.Errorf("stderr:\n got %q\nwant %q (one line)", errs, tc.want)
			}
		})
	}
}

func TestTTCPFileFlag(t *testing.T) {
	file := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(file, []byte("some data"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, backend := range []string{"sendfile", "splice", "splice:file=" + file} {
		got, err := parseTTCP([]string{"-t", "-F", file, "--backend", backend, "h"}, "blast")
		if err != nil {
			t.Fatalf("%s: %v", backend, err)
		}
		want := ttcp.Defaults()
		want.Transmit, want.Host, want.File = true, "h", file
		want.Backend, _, _ = strings.Cut(backend, ":")
		if strings.Contains(backend, "file=") {
			want.BackendOpts = "file=" + file
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: config (-want +got):\n%s", backend, diff)
		}
		if !got.SendsFile() {
			t.Errorf("%s: SendsFile() = false", backend)
		}
	}
}

func TestTTCPHelpNamesTheNewFlags(t *testing.T) {
	code, out, _ := runArgs(t, "blast", "ttcp", "-h")
	if code != exitOK {
		t.Fatalf("exit status %d", code)
	}
	for _, want := range []string{"--backend NAME[:OPTS]", "batch=N", "-F, --file FILE", "--rx-backend", "-B, --blocks", "-d, --debug", "-R, --reverse"} {
		if !strings.Contains(out, want) {
			t.Errorf("help does not mention %q", want)
		}
	}
}

// TestTTCPHelpGolden keeps the help text, as blast and as ttcp: invoked as
// ttcp, the usage names ttcp, and only blast's other commands (blast
// backends, blast compare), which the ttcp link cannot run, keep their
// name.
func TestTTCPHelpGolden(t *testing.T) {
	for _, tc := range []struct {
		argv0  string
		args   []string
		golden string
	}{
		{"blast", []string{"ttcp", "-h"}, "ttcp-help.txt"},
		{"blast", []string{"-t", "--help"}, "ttcp-help.txt"},
		{"ttcp", []string{"-h"}, "ttcp-help-as-ttcp.txt"},
	} {
		t.Run(tc.argv0+" "+strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errs := runArgs(t, tc.argv0, tc.args...)
			if code != exitOK || errs != "" {
				t.Fatalf("exit status %d, stderr %q", code, errs)
			}
			golden.Check(t, "testdata/"+tc.golden, out)
			if tc.argv0 != "ttcp" {
				return
			}
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(strings.ReplaceAll(strings.ReplaceAll(l, "'blast backends'", ""), "(blast compare)", ""), "blast") {
					t.Errorf("as ttcp, the help names blast: %q", l)
				}
			}
		})
	}
}

func TestTTCPInvokedAsTTCP(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-r", "-l", "0"}, "ttcp: -l 0: the buffer length must be at least 1 byte\n"},
		{nil, "ttcp: say -t HOST to transmit or -r to receive: run 'ttcp -h' for the options\n"},
		{[]string{"-t", "-s"}, "ttcp: -t needs the receiver's host: ttcp -t [options] HOST\n"},
		{[]string{"-r", "-R"}, "ttcp: -r -R needs the transmitter's host: ttcp -r -R [options] HOST connects to a transmitter started with ttcp -t -R\n"},
		{[]string{"-r", "h"}, "ttcp: -r takes no host (got \"h\"): the receiver listens on port 5001; give the host to the transmitter (-t), or add -R to connect to a transmitter that listens (ttcp -t -R)\n"},
		{[]string{"-t", "-R", "h"}, "ttcp: -t -R takes no host (got \"h\"): the transmitter listens on port 5001 for the receiver; give the host to the receiver (ttcp -r -R HOST)\n"},
		{[]string{"-r", "-x"}, "ttcp: unknown shorthand flag: 'x' in -x: run 'ttcp -h' for the options\n"},
		{[]string{"-r", "-s", "--rx-backend", "mmsg"}, "ttcp: --rx-backend mmsg: in ttcp mode each end is its own process: give the receiver --backend mmsg (ttcp -r --backend mmsg); --rx-backend is for blast compare, where one process runs both ends\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errs := runArgs(t, "ttcp", tc.args...)
			if code != exitUsage || out != "" || errs != tc.want {
				t.Errorf("status %d, stdout %q, stderr:\n got %q\nwant %q", code, out, errs, tc.want)
			}
		})
	}
}

func TestTTCPRunTimeErrors(t *testing.T) {
	// A port with nothing listening: take one from the kernel, then free it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()

	busy, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)

	for _, tc := range []struct {
		argv0 string
		args  []string
		want  string
	}{
		{"blast", []string{"-t", "-s", "-p", port, "127.0.0.1"},
			"blast-t: connect to 127.0.0.1 port " + port + ": connection refused: nothing listens there; start the receiver first (blast -r -p " + port + ")\n"},
		{"ttcp", []string{"-t", "-s", "-p", port, "127.0.0.1"},
			"ttcp-t: connect to 127.0.0.1 port " + port + ": connection refused: nothing listens there; start the receiver first (ttcp -r -p " + port + ")\n"},
		{"blast", []string{"-r", "-R", "-s", "-p", port, "127.0.0.1"},
			"blast-r: connect to 127.0.0.1 port " + port + ": connection refused: nothing listens there; start the transmitter first (blast -t -R -p " + port + ")\n"},
		{"blast", []string{"-t", "-s", "nosuchhost.invalid"}, "blast-t: unknown host \"nosuchhost.invalid\": check the name, or give an address\n"},
		{"blast", []string{"-r", "-s", "-p", busyPort},
			"blast-r: port " + busyPort + " is in use by another program: stop it, or choose another port with -p on both ends\n"},
		{"ttcp", []string{"-t", "-R", "-s", "-p", busyPort},
			"ttcp-t: port " + busyPort + " is in use by another program: stop it, or choose another port with -p on both ends\n"},
	} {
		t.Run(tc.argv0+" "+strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, errs := runArgs(t, tc.argv0, tc.args...)
			if code != exitFailure {
				t.Errorf("exit status %d, want %d", code, exitFailure)
			}
			// Progress lines (socket) come first; the error is the last line.
			lines := strings.SplitAfter(errs, "\n")
			if last := lines[len(lines)-2]; last != tc.want {
				t.Errorf("last stderr line:\n got %q\nwant %q", last, tc.want)
			}
		})
	}
}

func TestShortFlagMode(t *testing.T) {
	for args, want := range map[string]string{
		"-t -s h": "ttcp", "-ts h": "ttcp", "-rs": "ttcp", "-s -t h": "ttcp", "-r": "ttcp",
		"-c h -t 5": "client", "-s": "server", "-s -p 5201": "server", "-l 10": "",
	} {
		if got := shortFlagMode(strings.Fields(args)); got != want {
			t.Errorf("%q: mode %q, want %q", args, got, want)
		}
	}
}

// TestTTCPRepeatUsage: ttcp mode's repetition and output flags refuse
// their mistakes in one line, exit status 2, before any socket.
func TestTTCPRepeatUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-t", "--repeat", "3", "h"}, "blast: --repeat and --confidence need -s or -F on the transmitter: standard input is read once, by the first transfer\n"},
		{[]string{"-r", "--confidence", "95,5"}, "blast: --repeat and --confidence need -s on the receiver: without it the transfers would go to standard output one after another\n"},
		{[]string{"-r", "-s", "-u", "--repeat", "2"}, "blast: several transfers (--repeat, --confidence) are TCP only: ttcp's UDP has no connection, so a receiver cannot tell one transfer's end sentinels from the next one's start; drop -u or run one transfer at a time\n"},
		{[]string{"-t", "-s", "--repeat", "2", "--confidence", "95,5", "h"}, "blast: --repeat and --confidence together: use one (--repeat N runs N times, --confidence runs until the interval is narrow enough)\n"},
		{[]string{"-t", "-s", "--repeat", "0", "h"}, "blast: --repeat 0: the count is from 1 to 1000\n"},
		{[]string{"-r", "-s", "--max-runs", "5"}, "blast: --max-runs 5 without --confidence: it bounds a --confidence run; add --confidence 95,5 or drop --max-runs\n"},
		{[]string{"-t", "-s", "--plot", "runs.pdf", "h"}, "blast: --plot runs.pdf: the file name must end in .svg or .png\n"},
		{[]string{"-r", "--csv", "-"}, "blast: --csv - and -r without -s both write to standard output: give --csv a file, or add -s\n"},
		{[]string{"-r", "-s", "--csv", ""}, "blast: --csv \"\": give a file, or - for standard output\n"},
	} {
		code, out, errOut := runArgs(t, "blast", tc.args...)
		if code != exitUsage || out != "" || errOut != tc.want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, nothing, %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

// TestTTCPSummaryGolden: the lines after the runs and the CSV, from the
// same stats.Result, in golden files: --repeat 5, and a --confidence run
// that --max-runs stopped short of its width.
func TestTTCPSummaryGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		side string
		plan stats.Plan
		xs   []float64
	}{
		{"repeat", "blast-t", stats.Plan{Repeat: 5}, []float64{9.30e9, 9.41e9, 9.52e9, 9.38e9, 9.44e9}},
		{"confidence-unmet", "blast-r", stats.Plan{Level: 0.95, Width: 5, MaxRuns: 4}, []float64{9.1e9, 9.9e9, 9.3e9, 9.8e9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rr, err := stats.Run(context.Background(), tc.plan, func(i int) (float64, error) { return tc.xs[i], nil })
			if err != nil {
				t.Fatal(err)
			}
			var text, csv strings.Builder
			writeTTCPSummary(&text, tc.side, rr)
			golden.Check(t, "testdata/ttcp-"+tc.name+"-summary.txt", text.String())
			if err := stats.WriteCSV(&csv, tc.side, "bits_per_second", rr); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "testdata/ttcp-"+tc.name+".csv", csv.String())
		})
	}
}

// ttcpEnd runs one end of ttcp mode in this process.
type ttcpEnd struct {
	code     int
	out, err string
	live     testkit.SyncBuffer // standard output as it comes
	done     chan struct{}
}

func startTTCP(t *testing.T, args ...string) *ttcpEnd {
	t.Helper()
	e := &ttcpEnd{done: make(chan struct{})}
	go func() {
		defer close(e.done)
		var errb strings.Builder
		env := &env{ctx: context.Background(), argv0: "blast", stdin: strings.NewReader(""), stdout: &e.live, stderr: &errb}
		e.code = dispatch(env, args)
		e.out, e.err = e.live.String(), errb.String()
	}()
	return e
}

func (e *ttcpEnd) wait(t *testing.T) {
	t.Helper()
	select {
	case <-e.done:
	case <-time.After(time.Minute):
		t.Fatal("a ttcp end still runs after a minute")
	}
}

// waitListen waits until the receiver r listens on TCP port, and fails
// the test at once, with what it printed, if r ends first.
func waitListen(t *testing.T, port int, r *ttcpEnd) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	listening := make(chan error, 1)
	go func() { listening <- netlab.WaitPort(ctx, os.Getpid(), "tcp", port) }()
	select {
	case err := <-listening:
		if err != nil {
			t.Fatal(err)
		}
	case <-r.done:
		cancel()
		<-listening
		t.Fatalf("the receiver ended before it listened on port %d: exit %d\n%s%s", port, r.code, r.out, r.err)
	}
}

// ttcpSummaryRe is the line after the runs.
var ttcpSummaryRe = regexp.MustCompile(strings.ReplaceAll(`(?m)^blast-[tr]: throughput: mean N ±[0-9.]+% \(95% CI N–N\), sd N, min N, median N, max N, (\d+) runs$`,
	"N", `-?[0-9.]+(?: [GMK]?bit/s)?`))

// TestTTCPRepeatLoopback: blast -r -s --repeat 3 takes three transfers
// from blast -t -s --repeat 3, each reported in ttcp's lines after
// "== run N"; both ends end with the summary line; --csv - writes the
// CSV alone to standard output (the ttcp lines go to standard error);
// --plot writes an SVG that parses.
func TestTTCPRepeatLoopback(t *testing.T) {
	port := strconv.Itoa(testkit.FreePort(t))
	svg := filepath.Join(t.TempDir(), "runs.svg")
	r := startTTCP(t, "-r", "-s", "-p", port, "--repeat", "3")
	p, _ := strconv.Atoi(port)
	waitListen(t, p, r)
	tx := startTTCP(t, "-t", "-s", "-n", "2000", "-p", port, "--repeat", "3", "--csv", "-", "--plot", svg, "127.0.0.1")
	tx.wait(t)
	r.wait(t)
	if r.code != exitOK || tx.code != exitOK {
		t.Fatalf("exit %d (receiver), %d (transmitter)\nreceiver:\n%s%s\ntransmitter:\n%s%s", r.code, tx.code, r.out, r.err, tx.out, tx.err)
	}
	for _, end := range []struct{ name, text string }{{"receiver", r.out}, {"transmitter", tx.err}} {
		for i := 1; i <= 3; i++ {
			if n := strings.Count(end.text, "\n== run "+strconv.Itoa(i)+"\n") + b2i(strings.HasPrefix(end.text, "== run "+strconv.Itoa(i)+"\n")); n != 1 {
				t.Errorf("%s: %d lines \"== run %d\", want 1:\n%s", end.name, n, i, end.text)
			}
		}
		if n := strings.Count(end.text, " 16384000 bytes in "); n != 3 {
			t.Errorf("%s: %d transfers of 16384000 bytes, want 3:\n%s", end.name, n, end.text)
		}
		m := ttcpSummaryRe.FindStringSubmatch(end.text)
		if m == nil || m[1] != "3" {
			t.Errorf("%s: no summary line of 3 runs:\n%s", end.name, end.text)
		}
	}
	recs := testkit.ReadCSV(t, tx.out, stats.CSVHeader("bits_per_second"))
	var kinds []string
	for _, rec := range recs {
		kinds = append(kinds, rec[0]+" "+rec[1]+" "+rec[2]+" "+rec[4])
	}
	if diff := cmp.Diff([]string{"run blast-t 1 ", "run blast-t 2 ", "run blast-t 3 ", "summary blast-t  3"}, kinds); diff != "" {
		t.Errorf("CSV rows (kind name run n) (-want +got):\n%s\n%s", diff, tx.out)
	}
	checkSVGNames(t, svg, "each run", "confidence interval of the mean", "mean ")
}

// TestTTCPConfidenceReceiverFollows: with --confidence the transmitter
// decides when to stop; the receiver takes its transfers, then waits
// ttcpNextWait for another (on a fake clock, which the test moves once
// the receiver waits), says the transmitter has stopped and summarizes
// the same number of runs.
func TestTTCPConfidenceReceiverFollows(t *testing.T) {
	clk := clock.NewFake()
	defer func(c clock.Clock) { ttcpClock = c }(ttcpClock)
	ttcpClock = clk
	port := strconv.Itoa(testkit.FreePort(t))
	r := startTTCP(t, "-r", "-s", "-p", port, "--confidence", "95,60", "--max-runs", "5")
	p, _ := strconv.Atoi(port)
	waitListen(t, p, r)
	tx := startTTCP(t, "-t", "-s", "-n", "2000", "-p", port, "--confidence", "95,60", "--max-runs", "5", "127.0.0.1")
	tx.wait(t)
	if tx.code != exitOK {
		t.Fatalf("transmitter: exit %d\n%s%s", tx.code, tx.out, tx.err)
	}
	mt := ttcpSummaryRe.FindStringSubmatch(tx.out)
	if mt == nil {
		t.Fatalf("no summary line from the transmitter:\n%s", tx.out)
	}
	runs, _ := strconv.Atoi(mt[1])
	if runs < 5 {
		// The receiver has begun run runs+1 (its line is printed before it
		// waits): the one timer armed is that wait.
		next := "== run " + strconv.Itoa(runs+1) + "\n"
		testkit.WaitFor(t, time.Minute, "the receiver's "+strings.TrimSpace(next), func() bool { return strings.Contains(r.live.String(), next) })
		select {
		case <-clk.Armed(1):
		case <-time.After(time.Minute):
			t.Fatalf("the receiver does not wait for a transfer after run %d", runs)
		}
		if due, ok := clk.Next(); !ok || due != clk.Now().Add(ttcpNextWait) {
			t.Errorf("the wait is due at %v, want %v after now", due, ttcpNextWait)
		}
		clk.Advance(ttcpNextWait)
	}
	r.wait(t)
	if r.code != exitOK {
		t.Fatalf("receiver: exit %d\n%s%s", r.code, r.out, r.err)
	}
	mr := ttcpSummaryRe.FindStringSubmatch(r.out)
	if mr == nil {
		t.Fatalf("no summary line from the receiver:\n%s", r.out)
	}
	if mt[1] != mr[1] {
		t.Errorf("the transmitter ran %s transfers, the receiver summarized %s", mt[1], mr[1])
	}
	stop := "blast-r: no transfer within 3s after run " + mt[1] + ": the transmitter has stopped\n"
	if runs < 5 && !strings.Contains(r.out, stop) {
		t.Errorf("the receiver does not say %q:\n%s", stop, r.out)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkSVGNames checks that the SVG at path parses as XML and that its
// text names each of names (a series or legend entry).
func checkSVGNames(t *testing.T, path string, names ...string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	dec := xml.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s does not parse: %v", path, err)
		}
		if cd, ok := tok.(xml.CharData); ok {
			text.Write(cd)
			text.WriteByte('\n')
		}
	}
	for _, n := range names {
		if !strings.Contains(text.String(), n) {
			t.Errorf("%s does not name %q; its text:\n%s", path, n, text.String())
		}
	}
}

// TestTTCPJSON: -J writes one JSON document on standard output, the
// transfer's exact figures (the ttcp lines go to standard error); with
// --repeat, {runs, repeat}.
func TestTTCPJSON(t *testing.T) {
	port := strconv.Itoa(testkit.FreePort(t))
	p, _ := strconv.Atoi(port)
	r := startTTCP(t, "-r", "-s", "-p", port, "-J")
	waitListen(t, p, r)
	tx := startTTCP(t, "-t", "-s", "-n", "1000", "-l", "8192", "-p", port, "-J", "127.0.0.1")
	tx.wait(t)
	r.wait(t)
	if r.code != exitOK || tx.code != exitOK {
		t.Fatalf("exit %d (receiver), %d (transmitter)\nreceiver:\n%s%s\ntransmitter:\n%s%s", r.code, tx.code, r.out, r.err, tx.out, tx.err)
	}
	for _, end := range []struct {
		out, err, side string
	}{{tx.out, tx.err, "transmit"}, {r.out, r.err, "receive"}} {
		var run report.TTCPRun
		dec := json.NewDecoder(strings.NewReader(end.out))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&run); err != nil || dec.More() {
			t.Fatalf("%s: stdout is not one document: %v\n%s", end.side, err, end.out)
		}
		if run.Side != end.side || run.Protocol != "tcp" || run.Bytes != 8192000 || run.Data.Bytes != 8192000 || run.Seconds <= 0 {
			t.Errorf("%s: %+v: want %s, tcp, 8192000 bytes", end.side, run, end.side)
		}
		if want := 8 * float64(run.Bytes) / run.Seconds; run.BitsPerSecond != want {
			t.Errorf("%s: %g bit/s, want 8 × bytes / seconds = %g", end.side, run.BitsPerSecond, want)
		}
		if !strings.Contains(end.err, " 8192000 bytes in ") {
			t.Errorf("%s: the ttcp lines are not on standard error:\n%s", end.side, end.err)
		}
	}
	var run report.TTCPRun
	json.Unmarshal([]byte(tx.out), &run)
	if run.Calls != 1000 {
		t.Errorf("transmitter: %d I/O calls, want ttcp's one per buffer, 1000", run.Calls)
	}

	r = startTTCP(t, "-r", "-s", "-p", port, "--repeat", "2", "-J")
	waitListen(t, p, r)
	tx = startTTCP(t, "-t", "-s", "-n", "100", "-p", port, "--repeat", "2", "-J", "127.0.0.1")
	tx.wait(t)
	r.wait(t)
	var doc struct {
		Runs   []report.TTCPRun `json:"runs"`
		Repeat stats.Result     `json:"repeat"`
	}
	if err := json.Unmarshal([]byte(tx.out), &doc); err != nil || len(doc.Runs) != 2 || doc.Repeat.Runs != 2 || len(doc.Repeat.Values) != 2 {
		t.Errorf("--repeat 2 -J: %v, %+v\n%s", err, doc, tx.out)
	}
	for i, run := range doc.Runs {
		if run.Bytes != 100*8192 || doc.Repeat.Values[i] != run.BitsPerSecond {
			t.Errorf("run %d: %d bytes at %g bit/s, the summary has %g", i+1, run.Bytes, run.BitsPerSecond, doc.Repeat.Values[i])
		}
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-t", "-s", "-J", "--csv", "-", "h"}, "blast: -J and --csv - both write to standard output: give --csv a file\n"},
		{[]string{"-r", "-J"}, "blast: -J and -r without -s both write to standard output: add -s\n"},
	} {
		code, _, errs := runArgs(t, "blast", tc.args...)
		if code != exitUsage || errs != tc.want {
			t.Errorf("%v: exit %d, stderr %q; want 2, %q", tc.args, code, errs, tc.want)
		}
	}
}
