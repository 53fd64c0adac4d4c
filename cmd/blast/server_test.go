package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/control"
	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/internal/blasttest"
	"github.com/blastnet/blast/internal/testkit"
)

// Every flag of `blast server` against a real client (blast's, through
// control.Run, or iperf3 on 127.0.0.1); -D and the signals against the
// built binary; `make install` and the systemd unit.

func TestServerBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in the one line on stderr
	}{
		{[]string{"--server-bitrate-limit", "fast"}, `--server-bitrate-limit "fast": want a rate such as 100M`},
		{[]string{"--server-bitrate-limit", "1G/0"}, `(0.1 to 60 s`},
		{[]string{"--server-bitrate-limit", "1G/x"}, `--server-bitrate-limit "1G/x"`},
		{[]string{"--rcv-timeout", "10"}, `--rcv-timeout "10": want milliseconds, 100 to 86400000`},
		{[]string{"--rcv-timeout", "2s"}, `--rcv-timeout "2s": want milliseconds`},
		{[]string{"--idle-timeout", "0"}, `--idle-timeout "0": want whole seconds, 1 to 86400`},
		{[]string{"--idle-timeout", "1.5"}, `--idle-timeout "1.5": want whole seconds`},
		{[]string{"--server-max-duration", "-1"}, `--server-max-duration "-1": want whole seconds, 0 to 86400 (0: no limit)`},
		{[]string{"--server-max-duration", "90000"}, `0 to 86400`},
		{[]string{"--bind-dev", "nosuch0"}, `--bind-dev nosuch0: no such interface here (see 'ip link')`},
		{[]string{"-p", "70000"}, `-p 70000: must be 1 to 65535, or 0 for a free port`},
		{[]string{"-f", "x"}, `-f "x": use k, m, g or t`},
		{[]string{"--pidfile"}, `flag needs an argument`},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--backend", "nosuch"}, `--backend: unknown backend "nosuch": choose one of`},
		{[]string{"--rx-backend", "nosuch"}, `--rx-backend: unknown backend "nosuch"`},
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

// srvOutput is what a server in this process writes, read while it runs.
type srvOutput struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *srvOutput) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *srvOutput) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serverRun runs `blast server args` in this process until it returns;
// out, when not nil, gets its standard output as it comes.
func serverRun(t *testing.T, ctx context.Context, out *srvOutput, args ...string) (int, string, string) {
	t.Helper()
	if out == nil {
		out = &srvOutput{}
	}
	var errb srvOutput
	e := &env{ctx: ctx, argv0: "blast", stdin: strings.NewReader(""), stdout: out, stderr: &errb}
	code := dispatch(e, append([]string{"server"}, args...))
	return code, out.String(), errb.String()
}

// inProcess is a `blast server` running in this process.
type inProcess struct {
	port   int
	out    *srvOutput
	cancel context.CancelFunc
	done   chan int
	stderr string
}

var listeningRE = regexp.MustCompile(`Server listening on (\S+) \(`)

// startServer starts `blast server -B 127.0.0.1 args` in this process and
// waits until it listens (its banner, or port's socket with -J).
func startServer(t *testing.T, port int, args ...string) *inProcess {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &inProcess{port: port, out: &srvOutput{}, cancel: cancel, done: make(chan int, 1)}
	go func() {
		code, _, stderr := serverRun(t, ctx, p.out, append([]string{"-B", "127.0.0.1", "-p", strconv.Itoa(port)}, args...)...)
		p.stderr = stderr
		p.done <- code
	}()
	t.Cleanup(func() { p.stop(t) })
	if port == 0 {
		testkit.WaitFor(t, 30*time.Second, "the server's banner", func() bool {
			if m := listeningRE.FindStringSubmatch(p.out.String()); m != nil {
				_, ps, _ := net.SplitHostPort(m[1])
				p.port, _ = strconv.Atoi(ps)
				return true
			}
			select {
			case code := <-p.done:
				p.done <- code
				t.Fatalf("the server exited (%d) before it listened: %s%s", code, p.out.String(), p.stderr)
			default:
			}
			return false
		})
	} else {
		srvWaitPort(t, port)
	}
	return p
}

// waitOutput waits until the server's output is what ok wants.
func (p *inProcess) waitOutput(t *testing.T, what string, ok func(out string) bool) {
	t.Helper()
	if !testkit.Eventually(30*time.Second, func() bool { return ok(p.out.String()) }) {
		t.Fatalf("no %s in 30 s:\n%s", what, p.out.String())
	}
}

// stop ends the server as a signal would (main cancels the context) and
// returns its exit status.
func (p *inProcess) stop(t *testing.T) int {
	t.Helper()
	p.cancel()
	select {
	case code := <-p.done:
		p.done <- code
		return code
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not stop")
		return -1
	}
}

// srvWaitPort waits until something accepts on the loopback port.
func srvWaitPort(t *testing.T, port int) {
	t.Helper()
	testkit.WaitFor(t, 30*time.Second, fmt.Sprintf("a listener on port %d", port), func() bool {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// srvClient runs a blast client test against port.
func srvClient(t *testing.T, port int, cfg control.Config) (*result.Result, error) {
	t.Helper()
	cfg.Host, cfg.Port, cfg.NoNIC = "127.0.0.1", port, true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return control.Run(ctx, cfg)
}

func srvNeedIperf3(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("iperf3")
	if err != nil {
		t.Skip("iperf3 is not installed (apt-get install iperf3)")
	}
	return p
}

// srvIperf3 runs `iperf3 -c 127.0.0.1 -p port args` and returns its output.
func srvIperf3(t *testing.T, port int, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, srvNeedIperf3(t), append([]string{"-c", "127.0.0.1", "-p", strconv.Itoa(port)}, args...)...).CombinedOutput()
	return string(out), err
}

// -p 0, the console (-V, -d, -i, -f), and stopping: a test alone prints
// as iperf3 -s prints it; the shutdown line counts what it interrupted.
func TestServerConsole(t *testing.T) {
	s := startServer(t, 0, "-V", "-d", "-i", "0.5", "-f", "m")
	if s.port == wire.DefaultPort {
		t.Errorf("-p 0 listens on %d", s.port)
	}
	if _, err := srvClient(t, s.port, control.Config{Duration: time.Second, Parallel: 2}); err != nil {
		t.Fatal(err)
	}
	// The blast client is done once it has the server's results, which
	// can be before the server has printed its summary; a test started
	// meanwhile would have its lines tagged ("#2: "). The iperf3 test
	// starts after the banner that says the server waits again.
	s.waitOutput(t, "the banner for test #2", func(out string) bool { return strings.Contains(out, "(test #2)\n") })
	if out, err := srvIperf3(t, s.port, "-t", "1", "-R"); err != nil {
		t.Fatalf("iperf3: %v\n%s", err, out)
	}
	// The iperf3 client is done before the server has printed its
	// summary; a test that starts meanwhile has its lines marked with
	// the test's number ("#2: "), as tests that overlap do. The third
	// test starts after the banner that says the server waits again.
	s.waitOutput(t, "the banner for test #3", func(out string) bool { return strings.Contains(out, "(test #3)\n") })
	started := make(chan struct{})
	interrupted := make(chan error, 1)
	go func() {
		_, err := srvClient(t, s.port, control.Config{Duration: 20 * time.Second, OnStart: func(*result.Result) { close(started) }})
		interrupted <- err
	}()
	<-started
	// The client has its streams; wait for the server to run the test.
	s.waitOutput(t, "the third test running", func(out string) bool { return strings.Count(out, "State set to 2-TEST_RUNNING") == 3 })
	if code := s.stop(t); code != exitOK {
		t.Errorf("exit %d after the context ended, want 0", code)
	}
	if err := <-interrupted; err == nil || !strings.Contains(err.Error(), "the server has terminated") {
		t.Errorf("the client of the interrupted test: %v", err)
	}
	got := s.out.String()
	for _, re := range []string{
		`(?m)^blast \d`,
		`(?m)^Server listening on 127\.0\.0\.1:\d+ \(up to 64 tests at once\)$`,
		`(?m)^Accepted connection from 127\.0\.0\.1, port \d+$`,
		`(?m)^      Cookie: [a-z2-7]{36}$`,
		`(?m)^Starting Test: protocol: TCP, 2 streams, 131072 byte blocks, omitting 0 seconds, 1 second test, tos 0$`,
		// The first half-second interval (-i 0.5); it ends when its
		// counts were read, which a busy host makes 0.51 or later.
		`(?m)^\[SUM\]   0\.00-0\.5\d   sec  .* Mbits/sec`,
		`(?m)^State change: State set to 10-CREATE_STREAMS \(from 9-PARAM_EXCHANGE\)$`,
		`(?m)^get_parameters: \{.*"client_version":"3\.\d+"\}$`,
		`(?m)^Test Complete\. Summary Results:$`,
		`(?m)^Backend: local readwrite, remote not blast \(iperf3\?\)$`,
		`(?m)^Server listening on 127\.0\.0\.1:\d+ \(test #3\)$`,
		`(?m)^State change: State set to 11-SERVER_TERMINATE \(from 2-TEST_RUNNING\)$`,
		`(?m)^blast server: error - the server is shutting down$`,
		`blast server: shutting down \(interrupted\), 1 test interrupted\n$`,
	} {
		if !regexp.MustCompile(re).MatchString(got) {
			t.Errorf("no match for %s in:\n%s", re, got)
		}
	}
	if s.stderr != "" {
		t.Errorf("stderr: %s", s.stderr)
	}
}

// -J: a JSON document a line, and nothing else on standard output.
func TestServerJSONLines(t *testing.T) {
	port := testkit.FreePort(t)
	s := startServer(t, port, "-J", "--server-max-duration", "3")
	if _, err := srvClient(t, port, control.Config{Duration: time.Second}); err != nil {
		t.Fatal(err)
	}
	if out, err := srvIperf3(t, port, "-t", "5"); err == nil {
		t.Errorf("iperf3 -t 5 against --server-max-duration 3 ran:\n%s", out)
	}
	if out, err := srvIperf3(t, port, "-t", "1", "-u", "-b", "10M"); err != nil {
		t.Fatalf("iperf3 -u: %v\n%s", err, out)
	}
	s.stop(t)
	lines := strings.Split(strings.TrimSuffix(s.out.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3 documents:\n%s", len(lines), s.out.String())
	}
	errs := 0
	for _, l := range lines {
		var doc struct {
			Start map[string]any `json:"start"`
			Error string         `json:"error"`
		}
		if err := json.Unmarshal([]byte(l), &doc); err != nil || doc.Start == nil {
			t.Errorf("not a -J document (%v): %s", err, l)
		}
		if doc.Error != "" {
			errs++
		}
	}
	if errs != 1 {
		t.Errorf("%d documents with an error, want 1 (the refused test)", errs)
	}
	if !strings.Contains(s.stderr, "blast server: shutting down (interrupted), 0 tests interrupted") {
		t.Errorf("stderr %q: want the shutdown line there with -J", s.stderr)
	}
}

// --logfile takes all the output; -I writes the pidfile while the server
// runs and removes it after; -1 --idle-timeout exits when nobody comes.
func TestServerLogfilePidfile(t *testing.T) {
	dir := t.TempDir()
	log, pid := filepath.Join(dir, "server.log"), filepath.Join(dir, "server.pid")
	os.WriteFile(log, []byte("earlier line\n"), 0o644)
	port := testkit.FreePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan [3]string, 1)
	go func() {
		code, out, errs := serverRun(t, ctx, nil, "-B", "127.0.0.1", "-p", strconv.Itoa(port), "-1", "--logfile", log, "-I", pid)
		done <- [3]string{strconv.Itoa(code), out, errs}
	}()
	srvWaitPort(t, port)
	b, err := os.ReadFile(pid)
	if err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("pidfile %q (%v), want %d", b, err, os.Getpid())
	}
	// A pidfile that names a live process (not this one, which takes its
	// own pid for a stale file's) is refused.
	live := exec.Command("sleep", "30")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	other := filepath.Join(dir, "other.pid")
	os.WriteFile(other, []byte(strconv.Itoa(live.Process.Pid)+"\n"), 0o644)
	code, _, stderr := serverRun(t, context.Background(), nil, "-B", "127.0.0.1", "-p", "0", "-I", other)
	if code != exitFailure || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "names process "+strconv.Itoa(live.Process.Pid)+", which is running") {
		t.Errorf("a server on a live pidfile: exit %d, %q", code, stderr)
	}
	if _, err := srvClient(t, port, control.Config{Bytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r[0] != "0" || r[1] != "" || r[2] != "" {
		t.Errorf("exit %s, stdout %q, stderr %q: want 0 and all output in the logfile", r[0], r[1], r[2])
	}
	if _, err := os.Stat(pid); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pidfile left behind: %v", err)
	}
	b, _ = os.ReadFile(log)
	if !strings.HasPrefix(string(b), "earlier line\n") || !strings.Contains(string(b), "Accepted connection from 127.0.0.1") ||
		!strings.Contains(string(b), "receiver\n") {
		t.Errorf("logfile:\n%s", b)
	}

	// A stale pidfile (its process is gone) is taken over.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip(err)
	}
	os.WriteFile(pid, []byte(strconv.Itoa(dead.Process.Pid)+"\n"), 0o644)
	code, stdout, stderr := serverRun(t, context.Background(), nil, "-B", "127.0.0.1", "-p", "0", "-1", "--idle-timeout", "1", "-I", pid)
	if code != exitOK || !strings.Contains(stdout, "blast server: no client connected within 1 s (--idle-timeout); exiting") || stderr != "" {
		t.Errorf("-1 --idle-timeout 1 with a stale pidfile: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// The limits, against iperf3 and blast clients. --rcv-timeout has a
// server of its own: a host that stalls a client for 300 ms would
// otherwise end the other tests with it.
func TestServerLimitFlags(t *testing.T) {
	s := startServer(t, 0, "--server-bitrate-limit", "20M/1", "--server-max-duration", "4", "--bind-dev", "lo")
	out, err := srvIperf3(t, s.port, "-u", "-b", "30M", "-t", "1")
	if err == nil || !strings.Contains(out, "total required bandwidth is larger than server limit") {
		t.Errorf("iperf3 -u -b 30M against a 20M limit: %v\n%s", err, out)
	}
	out, err = srvIperf3(t, s.port, "-t", "3")
	if err == nil || !strings.Contains(out, "total required bandwidth is larger than server limit") {
		t.Errorf("iperf3 unpaced against a 20M limit: %v\n%s", err, out)
	}
	if _, err := srvClient(t, s.port, control.Config{Duration: 5 * time.Second}); err == nil || !strings.Contains(err.Error(), "maximum permitted limit") {
		t.Errorf("-t 5 against --server-max-duration 4: %v", err)
	}
	if _, err := srvClient(t, s.port, control.Config{Duration: time.Second, UDP: true, Rate: 5e6, RateSet: true, Bidir: true}); err != nil {
		t.Errorf("a test within every limit, on lo: %v", err)
	}
	s.stop(t)
	for _, want := range []string{"over --server-bitrate-limit 20.0 Mbits/sec", "more than --server-max-duration 4"} {
		if !strings.Contains(s.out.String(), want) {
			t.Errorf("no %q in:\n%s", want, s.out.String())
		}
	}

	// A blast client that sends 100 bytes every 0.8 s.
	s = startServer(t, 0, "--rcv-timeout", "300")
	if _, err := srvClient(t, s.port, control.Config{Duration: 3 * time.Second, Rate: 1000, RateSet: true, BlockLen: 100}); err == nil ||
		!strings.Contains(err.Error(), "idle timeout for receiving data") {
		t.Errorf("a stalled blast client against --rcv-timeout 300: %v", err)
	}
	s.stop(t)
	if want := "--rcv-timeout 300 ms"; !strings.Contains(s.out.String(), want) {
		t.Errorf("no %q in:\n%s", want, s.out.String())
	}
}

// serverBinary is the blast binary TestMain built (as root), or one
// built into a directory of the test's.
func serverBinary(t *testing.T) string {
	t.Helper()
	if blasttest.Bin != "" {
		return blasttest.Bin
	}
	if testing.Short() {
		t.Skip("builds blast; not with -short")
	}
	bin, err := blasttest.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// processGone reports whether process pid has ended (a zombie has).
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// pid (comm) S ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}

// The built binary: -D goes to the background once it listens, and stops
// on SIGTERM; a foreground server stops on SIGINT with its line.
func TestServerProcess(t *testing.T) {
	bin := serverBinary(t)
	t.Run("daemon", func(t *testing.T) {
		dir := t.TempDir()
		log, pidf := filepath.Join(dir, "blast.log"), filepath.Join(dir, "blast.pid")
		out, err := exec.Command(bin, "server", "-D", "-B", "127.0.0.1", "-p", "0", "--logfile", log, "-I", pidf).Output()
		if err != nil {
			t.Fatalf("blast server -D: %v: %s", err, out)
		}
		m := regexp.MustCompile(`^Server listening on 127\.0\.0\.1:(\d+) \(in the background, pid (\d+)\)\n$`).FindStringSubmatch(string(out))
		if m == nil {
			t.Fatalf("-D printed %q", out)
		}
		port, _ := strconv.Atoi(m[1])
		pid, _ := strconv.Atoi(m[2])
		t.Cleanup(func() {
			if !processGone(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		})
		if b, _ := os.ReadFile(pidf); strings.TrimSpace(string(b)) != m[2] {
			t.Errorf("pidfile %q, want %s", b, m[2])
		}
		if sid, _ := unix.Getsid(pid); sid != pid {
			t.Errorf("the background server is in session %d, want its own (%d)", sid, pid)
		}
		if _, err := srvClient(t, port, control.Config{Duration: time.Second}); err != nil {
			t.Fatal(err)
		}
		// A second one on the same pidfile says why it cannot start.
		cmd := exec.Command(bin, "server", "-D", "-p", "0", "-I", pidf)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err = cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitFailure || !strings.Contains(stderr.String(), "names process "+m[2]+", which is running") {
			t.Errorf("second -D on a live pidfile: %v, %q", err, stderr.String())
		}
		syscall.Kill(pid, syscall.SIGTERM)
		testkit.WaitFor(t, time.Minute, "the background server to stop on SIGTERM", func() bool { return processGone(pid) })
		if _, err := os.Stat(pidf); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("pidfile left behind: %v", err)
		}
		b, _ := os.ReadFile(log)
		for _, want := range []string{"Server listening on 127.0.0.1:" + m[1], "Accepted connection from 127.0.0.1", "blast server: shutting down (SIGTERM), 0 tests interrupted\n"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("no %q in the logfile:\n%s", want, b)
			}
		}
	})
	t.Run("daemon bad", func(t *testing.T) {
		cmd := exec.Command(bin, "server", "-D", "--server-bitrate-limit", "fast")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitUsage || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("-D with a bad flag: %v, %q", err, stderr.String())
		}
		// A port in use: the background server fails, the parent says so.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		stderr.Reset()
		cmd = exec.Command(bin, "server", "-D", "-B", "127.0.0.1", "-p", strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
		cmd.Stderr = &stderr
		err = cmd.Run()
		if !errors.As(err, &ee) || ee.ExitCode() != exitFailure || !strings.Contains(stderr.String(), "the port is in use") {
			t.Errorf("-D on a port in use: %v, %q", err, stderr.String())
		}
	})
	t.Run("SIGINT", func(t *testing.T) {
		cmd := exec.Command(bin, "server", "-B", "127.0.0.1", "-p", "0")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		lines := make(chan string, 100)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		var port int
		for port == 0 {
			line, ok := <-lines
			if !ok {
				t.Fatal("no banner")
			}
			if m := listeningRE.FindStringSubmatch(line); m != nil {
				_, ps, _ := net.SplitHostPort(m[1])
				port, _ = strconv.Atoi(ps)
			}
		}
		started := make(chan struct{})
		res := make(chan error, 1)
		go func() {
			_, err := srvClient(t, port, control.Config{Duration: 20 * time.Second, OnStart: func(*result.Result) { close(started) }})
			res <- err
		}()
		<-started
		iperfOut := make(chan string, 1)
		go func() {
			out, _ := srvIperf3(t, port, "-t", "20")
			iperfOut <- out
		}()
		for {
			line := <-lines
			if strings.HasPrefix(line, "#2: [ ID] Interval") { // test 2 runs
				break
			}
		}
		cmd.Process.Signal(os.Interrupt)
		var rest []string
		for line := range lines {
			rest = append(rest, line)
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("exit after SIGINT: %v", err)
		}
		if len(rest) == 0 || rest[len(rest)-1] != "blast server: shutting down (SIGINT), 2 tests interrupted" {
			t.Errorf("want the shutdown line last:\n%s", strings.Join(rest, "\n"))
		}
		if err := <-res; err == nil || !strings.Contains(err.Error(), "the server has terminated") {
			t.Errorf("blast client: %v", err)
		}
		if out := <-iperfOut; !strings.Contains(out, "iperf3: error - the server has terminated") || !strings.Contains(out, "sender") {
			t.Errorf("iperf3 client:\n%s", out)
		}
	})
}

// make install puts the binary, the ttcp link and the unit under DESTDIR.
func TestMakeInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds blast; not with -short")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed (apt-get install make)")
	}
	dest := t.TempDir()
	out, err := exec.Command("make", "-C", "../..", "install", "DESTDIR="+dest, "PREFIX=/opt/blast").CombinedOutput()
	if err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	bin := filepath.Join(dest, "opt/blast/bin/blast")
	if fi, err := os.Stat(bin); err != nil || fi.Mode()&0o111 == 0 || !fi.Mode().IsRegular() {
		t.Errorf("%s: %v %v, want an executable", bin, fi, err)
	}
	if l, err := os.Readlink(filepath.Join(dest, "opt/blast/bin/ttcp")); err != nil || l != "blast" {
		t.Errorf("ttcp link: %q %v, want a link to blast", l, err)
	}
	if out, err := exec.Command(filepath.Join(dest, "opt/blast/bin/ttcp"), "-h").CombinedOutput(); err != nil || !strings.Contains(string(out), "ttcp") {
		t.Errorf("the installed ttcp link: %v\n%s", err, out)
	}
	unit, err := os.ReadFile(filepath.Join(dest, "lib/systemd/system/blast-server.service"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^ExecStart=/opt/blast/bin/blast server$`).Match(unit) {
		t.Errorf("the installed unit does not run the installed binary:\n%s", unit)
	}
	agent, err := os.ReadFile(filepath.Join(dest, "lib/systemd/system/blast-agent.service"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^ExecStart=/opt/blast/bin/blast agent --token-file \$\{CREDENTIALS_DIRECTORY\}/token$`).Match(agent) {
		t.Errorf("the installed agent unit does not run the installed binary:\n%s", agent)
	}
}

// The units pass systemd-analyze verify, and keep their hardening.
func TestSystemdUnit(t *testing.T) {
	for _, tc := range []struct{ name, exec string }{
		{"blast-server", "ExecStart=/usr/local/bin/blast server"},
		{"blast-agent", "ExecStart=/usr/local/bin/blast agent --token-file ${CREDENTIALS_DIRECTORY}/token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unit, err := os.ReadFile("../../dist/" + tc.name + ".service")
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{
				tc.exec + "\n", "DynamicUser=yes", "CapabilityBoundingSet=\n", "AmbientCapabilities=\n",
				"NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes",
				"RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX AF_NETLINK", "WantedBy=multi-user.target",
			} {
				if !bytes.Contains(unit, []byte(want)) {
					t.Errorf("the unit has no %q", want)
				}
			}
			analyze, err := exec.LookPath("systemd-analyze")
			if err != nil {
				t.Skip("systemd-analyze is not installed (apt-get install systemd): the unit is not verified")
			}
			// verify wants ExecStart's program to exist: point it at a built one.
			bin := serverBinary(t)
			dir := t.TempDir()
			path := filepath.Join(dir, tc.name+".service")
			os.WriteFile(path, bytes.ReplaceAll(unit, []byte("/usr/local/bin/blast"), []byte(bin)), 0o644)
			out, err := exec.Command(analyze, "verify", path).CombinedOutput()
			if err != nil || bytes.Contains(out, []byte(tc.name+".service")) {
				t.Errorf("systemd-analyze verify: %v\n%s", err, out)
			}
		})
	}
}
