package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/latency"

	"github.com/blastnet/blast/internal/testkit"
)

func TestLatFlags(t *testing.T) {
	def := latency.Defaults()
	for _, tc := range []struct {
		args []string
		want func(c *latency.Config)
		json bool
	}{
		{[]string{"-s"}, func(c *latency.Config) { c.Server = true }, false},
		{[]string{"-s", "-p", "6000", "-B", "198.18.0.2", "-1"}, func(c *latency.Config) {
			c.Server, c.Port, c.Bind, c.Once = true, 6000, "198.18.0.2", true
		}, false},
		{[]string{"h", "-u", "-l", "1400", "-n", "5000", "-i", "0.5", "-J", "--warmup", "0"}, func(c *latency.Config) {
			c.Host, c.UDP, c.Size, c.Count, c.Interval, c.Warmup = "h", true, 1400, 5000, 500*time.Millisecond, 0
		}, true},
		{[]string{"-t", "2.5", "--timeout", "0.05", "-S", "0x10", "h"}, func(c *latency.Config) {
			c.Host, c.Duration, c.Timeout, c.Sock.TOS = "h", 2500*time.Millisecond, 50*time.Millisecond, 0x10
		}, false},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got, js, _, _, err := parseLat(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			want := def
			tc.want(&want)
			if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })); diff != "" || js != tc.json {
				t.Errorf("json %v, config (-want +got):\n%s", js, diff)
			}
		})
	}
}

func TestLatUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"h", "-t", "5", "-n", "100"}, "blast lat: -t and -n conflict: measure for a time (-t SECONDS) or a number of round trips (-n COUNT), not both\n"},
		{[]string{"h", "-l", "0"}, "blast lat: -l 0: a request is at least 1 byte\n"},
		{[]string{"h", "-u", "-l", "65508"}, "blast lat: -l 65508 with -u: a UDP datagram carries at most 65507 bytes; use a smaller -l\n"},
		{[]string{"h", "-u", "-l", "8"}, "blast lat: -l 8 with -u: a UDP request carries a 16-byte header (sequence number); use -l 16 or more\n"},
		{[]string{}, "blast lat: say HOST to measure round trips to, or -s to serve: blast lat -s  /  blast lat HOST\n"},
		{[]string{"-s", "h"}, "blast lat: -s takes no host: the server listens (use -B ADDR to pick the address)\n"},
		{[]string{"-s", "-u"}, "blast lat: --udp is for the client: the server (-s) echoes TCP and UDP on one port as they come\n"},
		{[]string{"h", "-1"}, "blast lat: -1 and -B are for the server (blast lat -s)\n"},
		{[]string{"h", "-n", "0"}, "blast lat: -n 0: give a positive number of round trips\n"},
		{[]string{"h", "-p", "70000"}, "blast lat: -p 70000: a port is a number from 1 to 65535\n"},
		{[]string{"h", "-i", "0.001"}, "blast lat: -i 1ms: intervals are at least 0.01 s\n"},
		{[]string{"h", "--bogus"}, "blast lat: unknown flag: --bogus: run 'blast lat -h' for the flags\n"},
		{[]string{"h", "k"}, "blast lat: too many arguments: \"h k\": give one host\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := runArgs(t, "blast", append([]string{"lat"}, tc.args...)...)
			if code != exitUsage || out != "" || errOut != tc.want {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2, stderr %q", code, out, errOut, tc.want)
			}
		})
	}
}

func TestLatHelp(t *testing.T) {
	code, out, _ := runArgs(t, "blast", "help", "lat")
	if code != exitOK || !strings.Contains(out, "never RTT/2") || !strings.Contains(out, "default 5202") {
		t.Errorf("exit %d, help:\n%s", code, out)
	}
}

// TestLatRun runs the client command against a server in this process.
// latServer is a latency echo server on loopback for the test; its port.
func latServer(t *testing.T) string {
	t.Helper()
	s, err := latency.Listen(latency.Config{Server: true, Bind: "127.0.0.1", Sock: latency.Defaults().Sock}, nil)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Serve(t, s.Serve)
	return strconv.Itoa(s.Port())
}

func TestLatRun(t *testing.T) {
	port := latServer(t)

	code, out, errOut := runArgs(t, "blast", "lat", "127.0.0.1", "-p", port, "-n", "300", "-u", "-J")
	var doc latency.JSON
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != exitOK {
		t.Fatalf("exit %d, stderr %q, JSON error %v:\n%s", code, errOut, err, out)
	}
	if doc.RoundTrips != 300 || doc.RTT.Count != 300 || doc.Protocol != "udp" || doc.RTT.P50 <= 0 || len(doc.Histogram.Buckets) == 0 {
		t.Errorf("JSON: round trips %d, rtt count %d, protocol %q, p50 %d ns, %d buckets", doc.RoundTrips, doc.RTT.Count, doc.Protocol, doc.RTT.P50, len(doc.Histogram.Buckets))
	}

	code, out, errOut = runArgs(t, "blast", "lat", "127.0.0.1", "-p", port, "-n", "200", "-i", "0.01")
	for _, want := range []string{"round-trip time (request sent to whole reply received; not RTT/2)", "  p99.9 ", "200 round trips in", "[ interval ]"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("exit %d, stderr %q: text lacks %q:\n%s", code, errOut, want, out)
		}
	}

	// Nothing on the port: a run-time failure, exit 1, one line.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	code, _, errOut = runArgs(t, "blast", "lat", "127.0.0.1", "-p", free, "-n", "5")
	if code != exitFailure || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "connection refused") {
		t.Errorf("exit %d, stderr %q; want exit 1 and one line naming the refused connection", code, errOut)
	}
}

// blast lat --repeat N --plot draws every run: a legend entry and a line
// in its own color per run, and the caption carries the printed summary
// line word for word, its mean in the legend as the same figure.
func TestLatRepeatPlotEveryRun(t *testing.T) {
	port := latServer(t)
	file := filepath.Join(t.TempDir(), "rtt.svg")
	code, out, errOut := runArgs(t, "blast", "lat", "127.0.0.1", "-p", port, "-n", "200", "--repeat", "3", "--plot", file)
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	m := regexp.MustCompile(`(?m)^blast lat: (median round trip \(µs\): mean ([0-9.]+) .*, 3 runs)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no summary line of 3 runs:\n%s", out)
	}
	line, mean := m[1], m[2]
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	texts, styles := svgTexts(b)
	all := strings.Join(texts, " ")
	for k := 1; k <= 4; k++ {
		if got, want := slices.Contains(texts, fmt.Sprintf("run %d", k)), k <= 3; got != want {
			t.Errorf("legend entry \"run %d\": %v, want %v (one per run of 3); texts:\n%s", k, got, want, strings.Join(texts, "\n"))
		}
	}
	for k, c := range []string{"#1F77B4", "#FF7F0E", "#2CA02C"} {
		n := 0
		for _, s := range styles {
			if strings.Contains(s, "stroke:"+c) {
				n++
			}
		}
		if n < 2 { // its CDF and its legend swatch
			t.Errorf("run %d: %d paths stroked %s, want its CDF and its swatch", k+1, n, c)
		}
	}
	for _, want := range []string{"M" + line[1:] + ".", "medians' mean " + mean + " µs", ", 3 runs", "round-trip time"} {
		if !strings.Contains(all, want) {
			t.Errorf("the plot has no text %q; texts:\n%s", want, strings.Join(texts, "\n"))
		}
	}
}
