package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/testkit"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/control"
	"github.com/blastnet/blast/netlab"
)

// blast client's command line: every iperf3 3.21 client flag, run against
// a blast server (control.Listen on 127.0.0.1) or Debian's iperf3 -s.

// blastServerPort serves blast on a free loopback port until the test
// ends; results waits for n tests' server Results.
func blastServerPort(t *testing.T) (port int, results func(n int) []*result.Result) {
	t.Helper()
	var mu sync.Mutex
	var res []*result.Result
	srv, err := control.Listen(control.ServerConfig{Bind: "127.0.0.1", Port: testkit.FreePort(t), NoNIC: true,
		OnResult: func(r *result.Result) { mu.Lock(); res = append(res, r); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return srv.Addr().(*net.TCPAddr).Port, func(n int) []*result.Result {
		var got []*result.Result
		testkit.Eventually(30*time.Second, func() bool {
			mu.Lock()
			got = append([]*result.Result(nil), res...)
			mu.Unlock()
			return len(got) >= n
		})
		return got
	}
}

// iperf3ServerPort runs `iperf3 -s -1 -B 127.0.0.1 -p PORT args...` and
// waits until it listens; wait waits for it to exit.
func iperf3ServerPort(t *testing.T, args ...string) (port int, wait func()) {
	t.Helper()
	bin, err := exec.LookPath("iperf3")
	if err != nil {
		t.Skip("iperf3 is not installed (apt-get install iperf3)")
	}
	port = testkit.FreePort(t)
	cmd := exec.Command(bin, append([]string{"-s", "-1", "-B", "127.0.0.1", "-p", strconv.Itoa(port)}, args...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// Wait for iperf3's own listening socket (a port number seen in
	// /proc/net/tcp may be another connection's).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := netlab.WaitPort(ctx, cmd.Process.Pid, "tcp", port); err != nil {
		t.Fatalf("iperf3 does not listen on %d: %v", port, err)
	}
	return port, func() {
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("iperf3 -s did not exit")
		}
	}
}

// parseClient parses a client command line into its Config and output
// settings, as runClient does before it runs the test.
func parseClient(t *testing.T, args ...string) (control.Config, *clientRun, error) {
	t.Helper()
	f := newClientFlags()
	if err := f.fs.Parse(args); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return f.config(context.Background())
}

// TestClientFlagConfig: what each iperf3 flag turns into.
func TestClientFlagConfig(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f.bin")
	os.WriteFile(file, make([]byte, 12345), 0o644)
	type cr struct {
		c control.Config
		r *clientRun
	}
	for _, tc := range []struct {
		args []string
		got  func(cr) string
		want string
	}{
		{[]string{"-c", "10.0.0.1%eth1", "-p", "5202"}, func(x cr) string { return fmt.Sprint(x.c.Host, " ", x.c.BindDev, " ", x.c.Port) }, "10.0.0.1 eth1 5202"},
		{[]string{"-c", "fe80::1%eth1"}, func(x cr) string { return fmt.Sprintf("%s %q", x.c.Host, x.c.BindDev) }, `fe80::1%eth1 ""`},
		{[]string{"h", "-B", "127.0.0.2%lo", "--cport", "6000"}, func(x cr) string { return fmt.Sprint(x.c.Bind, " ", x.c.BindDev, " ", x.c.CPort) }, "127.0.0.2 lo 6000"},
		{[]string{"h", "-B", "::1", "--bind-dev", "veth0"}, func(x cr) string { return fmt.Sprint(x.c.Bind, " ", x.c.BindDev) }, "::1 veth0"},
		{[]string{"h", "-A", "1,0"}, func(x cr) string { return fmt.Sprint(x.c.Affinity, " ", *x.c.ServerAffinity) }, "[1] 0"},
		{[]string{"h", "-A", "0x1"}, func(x cr) string { return fmt.Sprint(x.c.Affinity, " ", x.c.ServerAffinity) }, "[1] <nil>"},
		{[]string{"h", "-6", "-L", "0x12345"}, func(x cr) string { return fmt.Sprintf("%#x", x.c.FlowLabel) }, "0x12345"},
		{[]string{"h", "-R", "--repeating-payload", "--extra-data", "rack b", "--skip-rx-copy"}, func(x cr) string {
			return fmt.Sprint(x.c.RepeatingPayload, " ", x.c.ExtraData, " ", x.c.SkipRxCopy, " ", x.c.RxBackend)
		}, "true rack b true trunc"},
		{[]string{"h", "-R", "--rcv-timeout", "1500", "--snd-timeout", "2500"}, func(x cr) string { return fmt.Sprint(x.c.RcvTimeout, " ", x.c.SndTimeout) }, "1.5s 2.5s"},
		{[]string{"h", "-R"}, func(x cr) string { return fmt.Sprint(x.c.RcvTimeout) }, "2m0s"},
		{[]string{"h", "--cntl-ka"}, func(x cr) string {
			return fmt.Sprint(x.c.KeepAlive.Idle, " ", x.c.KeepAlive.Interval, " ", x.c.KeepAlive.Count)
		}, "-1ns -1ns -1"},
		{[]string{"h", "--cntl-ka=30/5/3"}, func(x cr) string {
			return fmt.Sprint(x.c.KeepAlive.Idle, " ", x.c.KeepAlive.Interval, " ", x.c.KeepAlive.Count)
		}, "30s 5s 3"},
		{[]string{"h", "-u", "--gsro"}, func(x cr) string { return fmt.Sprint(x.c.GSRO, " ", x.c.Backend, ":", x.c.BackendOptions) }, "true mmsg:gso,gro"},
		{[]string{"h", "-m"}, func(x cr) string { return fmt.Sprint(x.c.MPTCP) }, "true"},
		{[]string{"h", "-d"}, func(x cr) string { return fmt.Sprint(x.c.DebugLevel) }, "4"},
		{[]string{"h", "--debug=1"}, func(x cr) string { return fmt.Sprint(x.c.DebugLevel) }, "1"},
		{[]string{"h", "--debug=-3"}, func(x cr) string { return fmt.Sprint(x.c.DebugLevel) }, "4"},
		{[]string{"h", "-f", "Mbytes", "-V"}, func(x cr) string { return fmt.Sprintf("%c %v", x.r.text.Format, x.r.text.Verbose) }, "M true"},
		{[]string{"h", "--bandwidth", "10M", "--linux-congestion", "reno"}, func(x cr) string { return fmt.Sprint(x.c.Rate, " ", x.c.Congestion) }, "1e+07 reno"},
		{[]string{"h", "--fq-rate", "1G", "--no-fq-socket-pacing"}, func(x cr) string { return fmt.Sprint(x.c.FQRate, " ", x.r.warnings) },
			"0 [Warning:  --no-fq-socket-pacing is deprecated]"},
		{[]string{"h", "-F", file}, func(x cr) string { return fmt.Sprint(x.c.File != "", " ", x.c.Bytes, " ", x.c.Duration) }, "true 12345 0s"},
		{[]string{"h", "-F", file, "-t", "3"}, func(x cr) string { return fmt.Sprint(x.c.Bytes, " ", x.c.Duration) }, "0 3s"},
		{[]string{"h", "-F", file, "-R"}, func(x cr) string { return fmt.Sprint(x.c.Bytes, " ", x.c.Duration) }, "0 10s"},
		{[]string{"h", "--logfile", "x.log", "--forceflush", "--timestamps", "-T", "lab", "-I", "p.pid"}, func(x cr) string {
			return fmt.Sprintf("%s %v %q %s %s", x.r.logfile, x.r.forceflush, x.r.timestamps, x.r.title, x.r.pidfile)
		}, `x.log true "%c " lab p.pid`},
		{[]string{"h", "--timestamps=%H ", "--json-stream", "--json-stream-full-output"}, func(x cr) string {
			return fmt.Sprintf("%q %v %v %v", x.r.timestamps, x.r.json, x.r.jsonStream, x.r.jsonFull)
		}, `"%H " true true true`},
		{[]string{"h", "-J", "-f", "m", "-V"}, func(x cr) string { return strings.Join(x.r.warnings, "|") },
			"warning: Report format (-f) flag ignored with JSON output (-J)|warning: Verbose output (-v) may interfere with JSON output (-J)"},
	} {
		c, r, err := parseClient(t, tc.args...)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if got := tc.got(cr{c, r}); got != tc.want {
			t.Errorf("%v: %s, want %s", tc.args, got, tc.want)
		}
	}
}

// TestClientRefusedFlags: every iperf3 flag blast does not take is
// refused by name, in iperf3's words and with the reason, exit status 2.
func TestClientRefusedFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-s"}, "-s/--server: cannot be both server and client"},
		{[]string{"-D"}, "-D/--daemon: some option you are trying to set is server only"},
		{[]string{"-1"}, "-1/--one-off: some option you are trying to set is server only"},
		{[]string{"--server-bitrate-limit", "1G"}, "--server-bitrate-limit: some option you are trying to set is server only"},
		{[]string{"--idle-timeout", "10"}, "--idle-timeout: some option you are trying to set is server only"},
		{[]string{"--server-max-duration", "10"}, "--server-max-duration: some option you are trying to set is server only"},
		{[]string{"--rsa-private-key-path", "k"}, "--rsa-private-key-path: some option you are trying to set is server only"},
		{[]string{"--authorized-users-path", "u"}, "--authorized-users-path: some option you are trying to set is server only"},
		{[]string{"--time-skew-threshold", "5"}, "--time-skew-threshold: some option you are trying to set is server only"},
		{[]string{"--sctp"}, "--sctp: an option you are trying to set is not implemented yet"},
		{[]string{"--nstreams", "2"}, "--nstreams: an option you are trying to set is not implemented yet"},
		{[]string{"-X", "10.0.0.1"}, "-X/--xbind: an option you are trying to set is not implemented yet"},
		{[]string{"-f", "x"}, "-f x: bad format specifier (valid formats are in the set [kmgtKMGT])"},
		{[]string{"-p", "0"}, "-p 0: port number must be between 1 and 65535 inclusive"},
		{[]string{"--cport", "70000"}, "--cport 70000: port number must be between 1 and 65535 inclusive"},
		{[]string{"-A", "x"}, "-A x: unable to set CPU affinity"},
		{[]string{"-A", "1,5000"}, "-A 1,5000: unable to set CPU affinity"},
		{[]string{"-L", "0"}, "-L 0: unable to set IPv6 flow label"},
		{[]string{"-L", "5", "-4"}, "unable to set IPv6 flow label: the flow label is IPv6's"},
		{[]string{"--rcv-timeout", "5000"}, "client receive timeout is valid only in receiving mode"},
		{[]string{"-R", "--rcv-timeout", "50"}, "receive timeout value is incorrect or not in range"},
		{[]string{"--snd-timeout", "-1"}, "send timeout value is incorrect or not in range"},
		{[]string{"--cntl-ka=5/2/3"}, "control connection Keepalive period should be larger than the full retry period (interval * count)"},
		{[]string{"--cntl-ka=a"}, `"a" is not a whole number`},
		{[]string{"-F", "f", "-u"}, "cannot transfer file using UDP"},
		{[]string{"-m", "-u"}, "MPTCP is Multipath TCP"},
		{[]string{"-n", "1M", "-t", "3"}, "only one test end condition (-t, -n, -k) may be specified"},
		{[]string{"--skip-rx-copy", "--rx-backend", "readwrite"}, "--skip-rx-copy and --rx-backend readwrite"},
	} {
		code, stdout, stderr := runArgs(t, "blast", append([]string{"client", "127.0.0.1"}, tc.args...)...)
		if code != exitUsage || stdout != "" || !strings.HasPrefix(stderr, "blast client: ") || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

// TestClientVersion: blast version, and -v/--version in client mode (which
// iperf3 honours anywhere on the line, even with a server to test).
func TestClientVersion(t *testing.T) {
	code, out, _ := runArgs(t, "blast", "version")
	if code != exitOK {
		t.Fatalf("blast version: exit %d", code)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 4 || lines[0] != result.Version || !strings.HasPrefix(lines[1], "commit ") ||
		lines[2] != runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH || lines[3] != control.SystemInfo() {
		t.Errorf("blast version:\n%s", out)
	}
	for _, args := range [][]string{{"client", "-v"}, {"-c", "127.0.0.1", "--version", "-t", "99"}} {
		code, got, stderr := runArgs(t, "blast", args...)
		if code != exitOK || got != out || stderr != "" {
			t.Errorf("blast %v: exit %d:\n%s%s", args, code, got, stderr)
		}
	}
	if code, _, stderr := runArgs(t, "blast", "version", "x"); code != exitUsage || !strings.Contains(stderr, "it takes none") {
		t.Errorf("blast version x: exit %d, %q", code, stderr)
	}
}

// TestClientVerboseAndFormat: without -V, iperf3's short report; with
// -V, iperf3's verbose lines and blast's; -f k puts every rate in Kbits.
func TestClientVerboseAndFormat(t *testing.T) {
	port, _ := iperf3ServerPort(t)
	code, out, stderr := runArgs(t, "blast", "client", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1", "-V", "-f", "k")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		result.Version + "\n" + control.SystemInfo() + "\nControl connection MSS ",
		"\nTime: ", "\nConnecting to host 127.0.0.1, port " + strconv.Itoa(port) + "\n      Cookie: ",
		"\n      TCP MSS: ", " (default)\n",
		"\nStarting Test: protocol: TCP, 1 streams, 131072 byte blocks, omitting 0 seconds, 1 second test, tos 0\n",
		"\n- - - - - - - - - - - - - - - - - - - - - - - - -\nTest Complete. Summary Results:\n[ ID] Interval",
		"\nCPU Utilization: local/sender ", "\nsnd_tcp_congestion ", "\nrcv_tcp_congestion ",
		"\nBackend: local readwrite, remote not blast (iperf3?)\n", "\n\niperf Done.\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("-V output lacks %q:\n%s", want, out)
		}
	}
	rates := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "/sec") {
			rates++
			if !strings.Contains(line, " Kbits/sec") {
				t.Errorf("-f k line: %q", line)
			}
		}
	}
	if rates < 3 {
		t.Errorf("%d rate lines:\n%s", rates, out)
	}
	port, _ = iperf3ServerPort(t)
	code, out, _ = runArgs(t, "blast", "client", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, not := range []string{"CPU Utilization", "congestion", "Backend:", "Cookie", "Test Complete", "nic "} {
		if strings.Contains(out, not) {
			t.Errorf("without -V the output has %q:\n%s", not, out)
		}
	}
}

// gatedServer serves blast on a free loopback port until the test ends,
// with the hooks cfg sets, which may wait on gate: it stays shut until
// open is called (at the latest when the test ends).
func gatedServer(t *testing.T, cfg func(gate <-chan struct{}) control.ServerConfig) (port int, open func()) {
	t.Helper()
	gate := make(chan struct{})
	var once sync.Once
	open = func() { once.Do(func() { close(gate) }) }
	c := cfg(gate)
	c.Bind, c.Port, c.NoNIC = "127.0.0.1", testkit.FreePort(t), true
	srv, err := control.Listen(c)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	t.Cleanup(func() { open(); cancel(); <-served })
	return srv.Addr().(*net.TCPAddr).Port, open
}

// TestClientLogfileTimestampsTitle: --logfile takes all the output,
// --forceflush writes each interval as it comes, --timestamps and -T
// start every line.
func TestClientLogfileTimestampsTitle(t *testing.T) {
	// The server holds its first interval report until the test has seen
	// the client's first interval in the file: the client cannot end its
	// test (it needs the server's results) before the interval is there.
	port, open := gatedServer(t, func(gate <-chan struct{}) control.ServerConfig {
		return control.ServerConfig{Interval: time.Second, OnInterval: func(*result.Result, *result.Interval) { <-gate }}
	})
	log := filepath.Join(t.TempDir(), "run.log")
	os.WriteFile(log, []byte("earlier run\n"), 0o644)
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errs := runArgs(t, "blast", "client", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "2",
			"--logfile", log, "--forceflush", "--timestamps=<%%> ", "-T", "lab")
		done <- result{code, out, errs}
	}()
	// The first interval reaches the file while the test still runs.
	var b []byte
	testkit.WaitFor(t, time.Minute, "the first interval in the log", func() bool {
		b, _ = os.ReadFile(log)
		select {
		case r := <-done:
			t.Fatalf("the test ended (exit %d) before its first interval was in the log:\n%s", r.code, b)
		default:
		}
		// Its end is when its counts were read: 1.00 s, or later on a
		// busy host.
		return firstInterval.Match(b)
	})
	if strings.Contains(string(b), "iperf Done.") {
		t.Fatalf("the test ended while the server held its results:\n%s", b)
	}
	open()
	r := <-done
	if r.code != exitOK || r.stdout != "" || r.stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	b, _ = os.ReadFile(log)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if lines[0] != "earlier run" {
		t.Errorf("the log file was not appended to: %q", lines[0])
	}
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, "<%> lab:  ") {
			t.Errorf("log line %q lacks the time and title", l)
		}
	}
	if last := lines[len(lines)-1]; last != "<%> lab:  iperf Done." {
		t.Errorf("last line %q", last)
	}
}

// firstInterval is an interval line from the test's start: its end is
// when the counts were read, on time or late.
var firstInterval = regexp.MustCompile(`\b0\.00-\d+\.\d\d +sec`)

// TestClientPidfile: -I writes the process id while the test runs and
// removes the file after; a file naming a live process stops the test.
func TestClientPidfile(t *testing.T) {
	// The server holds the test at its start until the test has read the
	// pid file: the client is running then.
	port, open := gatedServer(t, func(gate <-chan struct{}) control.ServerConfig {
		return control.ServerConfig{OnStart: func(*result.Result) { <-gate }}
	})
	pidfile := filepath.Join(t.TempDir(), "blast.pid")
	done := make(chan int, 1)
	go func() {
		code, _, _ := runArgs(t, "blast", "client", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1", "-I", pidfile)
		done <- code
	}()
	var seen string
	testkit.WaitFor(t, time.Minute, "the pid file", func() bool {
		select {
		case code := <-done:
			t.Fatalf("the test ended (exit %d) and no pid file was seen", code)
		default:
		}
		b, err := os.ReadFile(pidfile)
		seen = string(b)
		return err == nil && seen != ""
	})
	open()
	if seen != strconv.Itoa(os.Getpid()) {
		t.Errorf("pid file holds %q, want %d without a newline", seen, os.Getpid())
	}
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d", code)
	}
	if _, err := os.Stat(pidfile); !os.IsNotExist(err) {
		t.Errorf("the pid file is still there: %v", err)
	}
	os.WriteFile(pidfile, []byte("1"), 0o644) // init is always running
	code, _, stderr := runArgs(t, "blast", "client", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1", "-I", pidfile)
	if code != exitFailure || !strings.Contains(stderr, "-I "+pidfile+" names process 1, which is running (another instance appears to be running)") {
		t.Errorf("exit %d, %q", code, stderr)
	}
}

type streamEvent struct {
	Event string          `json:"event"`
	Data  json.RawMessage `json:"data"`
}

// TestClientJSONStream: --json-stream writes one event a line as the test
// runs; --json-stream-full-output adds the -J document; alone it changes
// nothing, as in iperf3.
func TestClientJSONStream(t *testing.T) {
	port, _ := blastServerPort(t)
	code, out, stderr := runArgs(t, "blast", "client", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "2", "--json-stream", "--extra-data", "x")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var e streamEvent
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%v: %q", err, line)
		}
		names = append(names, e.Event)
	}
	if diff := cmp.Diff([]string{"start", "interval", "interval", "end"}, names); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	code, out, _ = runArgs(t, "blast", "client", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1", "--json-stream", "--json-stream-full-output")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	i := strings.Index(out, "\n{\n")
	if i < 0 {
		t.Fatalf("no full document after the events:\n%s", out)
	}
	var doc struct {
		Start     map[string]any `json:"start"`
		Intervals []any          `json:"intervals"`
		End       map[string]any `json:"end"`
	}
	if err := json.Unmarshal([]byte(out[i+1:]), &doc); err != nil || doc.Start == nil || len(doc.Intervals) != 1 || doc.End == nil {
		t.Errorf("full output: %v\n%s", err, out[i+1:])
	}
	if n := strings.Count(out[:i+1], "\n"); n != 3 {
		t.Errorf("%d event lines before the document", n)
	}

	code, out, _ = runArgs(t, "blast", "client", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1", "--json-stream-full-output")
	if code != exitOK || !strings.HasSuffix(out, "\niperf Done.\n") {
		t.Errorf("--json-stream-full-output alone: exit %d:\n%s", code, out)
	}
}

// TestClientConnectRefused: -J gives iperf3's error document (no start
// time of year 1), --json-stream its error and end events.
func TestClientConnectRefused(t *testing.T) {
	port := strconv.Itoa(testkit.FreePort(t))
	code, out, stderr := runArgs(t, "blast", "client", "127.0.0.1", "-p", port, "-J", "-T", "t1")
	if code != exitFailure || !strings.Contains(stderr, "connection refused") {
		t.Fatalf("exit %d, %q", code, stderr)
	}
	var d map[string]any
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	start, _ := d["start"].(map[string]any)
	if start["version"] != result.Version || start["system_info"] != control.SystemInfo() || start["timestamp"] != nil || d["title"] != "t1" {
		t.Errorf("start %v, title %v", start, d["title"])
	}
	if e, _ := d["error"].(string); !strings.Contains(e, "connection refused") {
		t.Errorf("error %q", e)
	}
	if strings.Contains(out, "0001") {
		t.Errorf("a year-1 date:\n%s", out)
	}
	code, out, _ = runArgs(t, "blast", "client", "127.0.0.1", "-p", port, "--json-stream")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != exitFailure || len(lines) != 2 || !strings.HasPrefix(lines[0], `{"event":"error","data":"connect to 127.0.0.1:`) || lines[1] != `{"event":"end","data":{}}` {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// TestClientDebugFlag: -d writes iperf3's debug lines with the output,
// and to standard error with -J, which stays parseable.
func TestClientDebugFlag(t *testing.T) {
	port, _ := blastServerPort(t)
	code, out, _ := runArgs(t, "blast", "client", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1", "-d")
	if code != exitOK || !strings.Contains(out, "send_parameters:\n{") || !strings.Contains(out, "State change: client received and changed State to 2-TEST_RUNNING\n") {
		t.Errorf("-d: exit %d:\n%s", code, out)
	}
	code, out, stderr := runArgs(t, "blast", "client", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1", "-d", "-J")
	var d map[string]any
	if code != exitOK || json.Unmarshal([]byte(out), &d) != nil || !strings.Contains(stderr, "get_results\n{") {
		t.Errorf("-d -J: exit %d, stdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
}

// TestClientFileFlag: -F without -n or -t sends the whole file, as
// iperf3 does, to an iperf3 server that writes it.
func TestClientFileFlag(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src.bin")
	want := make([]byte, 1<<20+3)
	rand.Read(want)
	os.WriteFile(src, want, 0o644)
	dst := filepath.Join(t.TempDir(), "dst.bin")
	port, wait := iperf3ServerPort(t, "-F", dst)
	code, out, stderr := runArgs(t, "blast", "client", "127.0.0.1", "-p", strconv.Itoa(port), "-F", src)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	wait()
	got, _ := os.ReadFile(dst)
	if !bytes.Equal(got, want) {
		t.Errorf("iperf3 wrote %d bytes of the %d", len(got), len(want))
	}
	if !strings.Contains(out, "        Sent 1.00 MByte / 1.00 MByte (100%) of "+src+"\n") {
		t.Errorf("no -F line:\n%s", out)
	}
}

// TestClientServerOutputFlag: the server's report is shown when
// --get-server-output asks for it, and only then.
func TestClientServerOutputFlag(t *testing.T) {
	port, _ := blastServerPort(t)
	_, out, _ := runArgs(t, "blast", "client", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1", "--get-server-output")
	if !strings.Contains(out, "\nServer output:\nAccepted connection from 127.0.0.1") {
		t.Errorf("--get-server-output:\n%s", out)
	}
	_, out, _ = runArgs(t, "blast", "client", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1")
	if strings.Contains(out, "Server output") {
		t.Errorf("without --get-server-output:\n%s", out)
	}
}

// TestClientAliasesAndDeprecated: iperf3's other spellings (--bandwidth,
// --linux-congestion) and its deprecated --no-fq-socket-pacing reach the
// server as iperf3 sends them.
func TestClientAliasesAndDeprecated(t *testing.T) {
	port, results := blastServerPort(t)
	code, _, stderr := runArgs(t, "blast", "client", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1",
		"--bandwidth", "200M", "--linux-congestion", "reno", "--fq-rate", "1G", "--no-fq-socket-pacing")
	if code != exitOK || stderr != "Warning:  --no-fq-socket-pacing is deprecated\n" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	res := results(1)
	if len(res) != 1 {
		t.Fatalf("%d server results", len(res))
	}
	if p := res[0].Params; p.Bandwidth != 200e6 || p.Congestion != "reno" || p.FQRate != 0 {
		t.Errorf("the server got bandwidth %d, congestion %q, fqrate %d", p.Bandwidth, p.Congestion, p.FQRate)
	}
}

// A backend that cannot move the test's streams is the command line's
// mistake: one line, exit status 2, before any connection.
func TestClientBackendRefused(t *testing.T) {
	code, _, stderr := runArgs(t, "blast", "client", "198.18.0.2", "--backend", "nosuch")
	if code != exitUsage || !strings.HasPrefix(stderr, "blast client: unknown backend \"nosuch\": choose one of ") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("unknown backend: exit %d, %q", code, stderr)
	}
	if _, err := engine.Usable("afxdp"); err != nil {
		t.Skipf("afxdp is not usable here (%v): the refusal to send iperf3's UDP headers with it is not tested", err)
	}
	code, _, stderr = runArgs(t, "blast", "client", "198.18.0.2", "-u", "--backend", "afxdp")
	want := "blast client: --backend afxdp: afxdp cannot send iperf3's datagram headers (its frames are built ahead, outside the send loop): send with mmsg, receive with afxdp (--rx-backend afxdp): not supported\n"
	if code != exitUsage || stderr != want {
		t.Errorf("afxdp sending UDP: exit %d, %q", code, stderr)
	}
}
