package control

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/clock"
	"github.com/blastnet/blast/internal/testkit"
)

// dialFrom connects to the server on port from a loopback address of
// its own (127.0.0.0/8 is all loopback), as another host would.
func dialFrom(t *testing.T, from string, port int) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 2 * time.Second}
	c, err := d.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// refusals collects OnRefused's reasons.
type refusals struct {
	mu  sync.Mutex
	why []string
}

func (r *refusals) add(_ netip.AddrPort, why string) {
	r.mu.Lock()
	r.why = append(r.why, why)
	r.mu.Unlock()
}

// waitAny waits until a refusal is in.
func (r *refusals) waitAny(t *testing.T) {
	t.Helper()
	testkit.WaitFor(t, 30*time.Second, "OnRefused", func() bool { return r.all() != "" })
}

func (r *refusals) all() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.why, "\n")
}

// runningTest starts a client test of d in the background and waits until
// the server runs it; the returned wait gives its error.
func runningTest(t *testing.T, cfg Config, started <-chan struct{}) (wait func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), cfg)
		done <- err
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("the first test ended before it ran: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the first test did not start")
	}
	return func() error { return <-done }
}

// Connections that send a cookie and nothing else hold no slot: a server
// with one slot runs a real test while eight of them wait.
func TestAdmitCookieOnlyHoldsNoSlot(t *testing.T) {
	_, port, log := blastServer(t, ServerConfig{MaxClients: 1, StreamTimeout: 3 * time.Second})
	for range 8 {
		c := dialFrom(t, "127.0.0.2", port)
		ck := wire.NewCookie()
		c.Write(ck[:])
		// The server took it for a test, and waits for its parameters.
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if st, err := wire.ReadState(c); err != nil || st != wire.ParamExchange {
			t.Fatalf("cookie-only connection: %v, %v; want PARAM_EXCHANGE", st, err)
		}
	}
	r, err := Run(context.Background(), Config{Host: "127.0.0.1", Port: port, Bytes: 4 << 20})
	if err != nil {
		t.Fatalf("a real client beside 8 cookie-only connections: %v", err)
	}
	if got := r.Streams[0].Bytes; got != 4<<20 {
		t.Errorf("the client sent %d bytes, want %d", got, 4<<20)
	}
	// The eight time out without a slot, as failed tests.
	for _, res := range log.wait(t, 9) {
		if res.Peer.Addr().String() == "127.0.0.2" && (res.Err == nil || !strings.Contains(res.Err.Error(), "read parameters")) {
			t.Errorf("a cookie-only connection ended with %v, want a timeout reading its parameters", res.Err)
		}
	}
}

// Unidentified connections beyond the cap per address close the oldest
// of that address at once; other addresses are served.
func TestAdmitUnidentifiedCap(t *testing.T) {
	// The 4 kept wait for their cookie longer than the test runs.
	_, port, _ := blastServer(t, ServerConfig{MaxUnidentifiedPerHost: 4, StreamTimeout: time.Minute, HandshakeTimeout: time.Minute})
	var conns []*faultConn
	for range 10 {
		c, err := faultDial(port, faultAttackerAddr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fc := &faultConn{c: c}
		fc.watch(time.Now().Add(time.Minute))
		conns = append(conns, fc)
	}
	closed := func() (n int) {
		for _, fc := range conns {
			if fc.closed() {
				n++
			}
		}
		return n
	}
	testkit.WaitFor(t, 30*time.Second, "the 6 silent connections over --max-unidentified-per-host 4 closed", func() bool { return closed() >= 6 })
	if _, err := Run(context.Background(), Config{Host: "127.0.0.1", Port: port, Bytes: 1 << 20}); err != nil {
		t.Errorf("a client from another address: %v", err)
	}
	if n := closed(); n != 6 {
		t.Errorf("%d of 10 silent connections from one address were closed, want the 6 over --max-unidentified-per-host 4", n)
	}
}

// A test whose buffers would need more than the budget is refused with
// iperf3's "unable to create a new test" and blast's reason.
func TestAdmitTestMemory(t *testing.T) {
	_, port, log := blastServer(t, ServerConfig{MaxTestMemory: 1 << 20})
	_, err := Run(context.Background(), Config{Host: "127.0.0.1", Port: port, Parallel: 16, Bytes: 1 << 20})
	var se wire.ServerErrorCode
	if !errors.As(err, &se) || se.Ierrno != wire.IENewTest {
		t.Fatalf("error %v, want iperf3's error %d", err, wire.IENewTest)
	}
	want := "server error: unable to create a new test (errno 12): the test needs 2 MiB of buffers (streams × block size × backend batch), over the server's --max-test-memory 1 MiB: ask for fewer streams, a smaller -l or batch"
	if err.Error() != want {
		t.Errorf("error\n%s\nwant\n%s", err, want)
	}
	if r := log.wait(t, 1)[0]; r.Err == nil || !strings.Contains(r.Err.Error(), "--max-test-memory") {
		t.Errorf("server: %v", r.Err)
	}
	// Within the budget it runs.
	if _, err := Run(context.Background(), Config{Host: "127.0.0.1", Port: port, Parallel: 8, Bytes: 1 << 20}); err != nil {
		t.Errorf("8 streams of 128 KiB: %v", err)
	}
}

// The example: io_uring with batch=256 and 1 MiB blocks, sent by
// the server (-R), would hold 256 MiB per stream.
func TestAdmitIouringBatchMemory(t *testing.T) {
	if _, err := engine.Usable("iouring"); err != nil {
		t.Skipf("no io_uring here: %v", err)
	}
	_, port, _ := blastServer(t, ServerConfig{})
	_, err := Run(context.Background(), Config{Host: "127.0.0.1", Port: port, Parallel: 4, BlockLen: 1 << 20, Reverse: true,
		Backend: "iouring", BackendOptions: "batch=256", Bytes: 4 << 20})
	if err == nil || !strings.Contains(err.Error(), "the test needs 1024 MiB of buffers") {
		t.Errorf("error %v, want a refusal for 1 GiB of buffers", err)
	}
}

// The buffers of all tests together: a test that would take them over
// --max-memory is told the server is busy.
func TestAdmitTotalMemory(t *testing.T) {
	started := make(chan struct{}, 4)
	var ref refusals
	_, port, _ := blastServer(t, ServerConfig{MaxTestMemory: 3 << 20, MaxMemory: 3 << 20, OnRefused: ref.add,
		OnStart: func(*result.Result) { started <- struct{}{} }})
	wait := runningTest(t, Config{Host: "127.0.0.1", Port: port, Parallel: 16, Duration: 2 * time.Second}, started)
	_, err := Run(context.Background(), Config{Host: "127.0.0.1", Port: port, Parallel: 16, Bytes: 1 << 20})
	if !errors.Is(err, wire.ErrBusy) {
		t.Errorf("second test: %v, want busy", err)
	}
	// OnRefused is told after the client is.
	ref.waitAny(t)
	if want := "busy (the running tests hold 2 MiB of buffers, and this one needs 2 MiB: over --max-memory 3 MiB)"; ref.all() != want {
		t.Errorf("refused: %q, want %q", ref.all(), want)
	}
	if err := wait(); err != nil {
		t.Errorf("first test: %v", err)
	}
	if _, err := Run(context.Background(), Config{Host: "127.0.0.1", Port: port, Parallel: 16, Bytes: 1 << 20}); err != nil {
		t.Errorf("after the first test ended: %v", err)
	}
}

// --max-per-host: one address's tests are capped, others still run.
func TestAdmitPerHost(t *testing.T) {
	started := make(chan struct{}, 4)
	var ref refusals
	_, port, _ := blastServer(t, ServerConfig{MaxPerHost: 1, OnRefused: ref.add, OnStart: func(*result.Result) { started <- struct{}{} }})
	wait := runningTest(t, Config{Host: "127.0.0.1", Port: port, Duration: 2 * time.Second}, started)
	if _, err := Run(context.Background(), Config{Host: "127.0.0.1", Port: port, Bytes: 1 << 20}); !errors.Is(err, wire.ErrBusy) {
		t.Errorf("a second test from 127.0.0.1: %v, want busy", err)
	}
	// OnRefused is told after the client is.
	ref.waitAny(t)
	if want := "busy (1 tests running from 127.0.0.1, --max-per-host 1)"; ref.all() != want {
		t.Errorf("refused: %q, want %q", ref.all(), want)
	}
	if _, err := Run(context.Background(), Config{Host: "127.0.0.1", Port: port, Bind: netip.MustParseAddr("127.0.0.2"), Bytes: 1 << 20}); err != nil {
		t.Errorf("a test from 127.0.0.2: %v", err)
	}
	if err := wait(); err != nil {
		t.Errorf("first test: %v", err)
	}
}

// --allow: other addresses are closed unanswered.
func TestAdmitAllow(t *testing.T) {
	allow, err := ParseAllow("127.0.0.2/32, 2001:2::/48")
	if err != nil {
		t.Fatal(err)
	}
	_, port, log := blastServer(t, ServerConfig{Allow: allow})
	_, err = Run(context.Background(), Config{Host: "127.0.0.1", Port: port, Bytes: 1 << 20})
	if err == nil || !strings.Contains(err.Error(), "closed the control connection") {
		t.Errorf("from 127.0.0.1: %v, want the connection closed", err)
	}
	if _, err := Run(context.Background(), Config{Host: "127.0.0.1", Port: port, Bind: netip.MustParseAddr("127.0.0.2"), Bytes: 1 << 20}); err != nil {
		t.Errorf("from 127.0.0.2: %v", err)
	}
	if n := len(log.wait(t, 1)); n != 1 {
		t.Errorf("%d results, want the allowed test's only", n)
	}
	for _, bad := range []string{"", "10.0.0.0/33", "fred", ","} {
		if _, err := ParseAllow(bad); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseAllow(%q): %v, want a one-line error", bad, err)
		}
	}
}

// A data stream with the test's cookie from another address does not
// join the test, unless AnyStreamSource. The server waits for the streams
// on a fake clock: the test fails exactly when StreamTimeout has passed.
func TestAdmitStreamSource(t *testing.T) {
	for _, anySource := range []bool{false, true} {
		fake := clock.NewFake()
		_, port, log := blastServer(t, ServerConfig{AnyStreamSource: anySource, StreamTimeout: time.Second, Clock: fake})
		rc := dialRaw(t, port)
		rc.expect(wire.ParamExchange)
		wire.WriteJSON(rc.ctrl, map[string]any{"tcp": true, "time": 0, "num": 1000, "parallel": 1, "len": 1000, "client_version": "3.12"})
		rc.expect(wire.CreateStreams)
		s := dialFrom(t, "127.0.0.2", port)
		s.Write(rc.cookie[:])
		if anySource {
			if st, err := wire.ReadState(rc.ctrl); err != nil || st != wire.TestStart {
				t.Errorf("AnyStreamSource: %v %v, want TEST_START", st, err)
			}
			continue
		}
		// The foreign stream is closed, and the test still waits.
		s.SetReadDeadline(time.Now().Add(30 * time.Second))
		var b [1]byte
		if _, err := s.Read(b[:]); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("the foreign stream was not closed: %v", err)
		}
		waitClosed(t, fake.Armed(1), "the server's wait for the streams")
		fake.Advance(999 * time.Millisecond)
		log.mu.Lock()
		early := len(log.res)
		log.mu.Unlock()
		if early != 0 {
			t.Fatal("the test ended before StreamTimeout passed")
		}
		fake.Advance(time.Millisecond)
		st, err := wire.ReadState(rc.ctrl)
		if err != nil || st != wire.ServerError {
			t.Fatalf("stream from another address: %v %v, want SERVER_ERROR", st, err)
		}
		if r := log.wait(t, 1)[0]; r.Err == nil || r.Err.Error() != "the client opened 0 of 1 streams within 1s" {
			t.Errorf("server: %v", r.Err)
		}
	}
}

// -P over --max-streams and -n over --max-bytes are refused with iperf3's
// error numbers, and blast's reason.
func TestAdmitStreamsAndBytes(t *testing.T) {
	_, port, _ := blastServer(t, ServerConfig{MaxStreams: 2, MaxBytes: 1 << 20})
	_, err := Run(context.Background(), Config{Host: "127.0.0.1", Port: port, Parallel: 3, Bytes: 1 << 10})
	if want := "server error: too many parallel streams: the client asked for 3 streams (-P), over the server's --max-streams 2"; err == nil || err.Error() != want {
		t.Errorf("-P 3: %v, want %s", err, want)
	}
	_, err = Run(context.Background(), Config{Host: "127.0.0.1", Port: port, Bytes: 2 << 20})
	if want := "server error: client's requested duration exceeds the server's maximum permitted limit: the client asked for 2097152 bytes (-n or -k), over the server's --max-bytes 1048576"; err == nil || err.Error() != want {
		t.Errorf("-n 2M: %v, want %s", err, want)
	}
}

// A block count whose byte count overflows int64 is refused, not run for
// ever (7.07e13 blocks of 128 KiB).
func TestBlockCountOverflow(t *testing.T) {
	p := wire.Params{TCP: true, Parallel: 1, BlockCount: 70_700_000_000_000, Len: 128 << 10}
	code, err := p.Validate()
	if code != 16 || err == nil || err.Error() != "block count 70700000000000 of 131072 bytes: the byte count overflows (at most 70368744177663 blocks)" {
		t.Errorf("Validate: %d %v", code, err)
	}
}

// A client that asked the server to send a byte count (-n 100G -R) and
// then stopped reading frees its slot after the receive timeout. The
// server's checks run on a fake clock, one at a time: the test ends at
// the first check 500 ms of the clock's time after the last byte moved.
func TestAdmitStalledReverseFreesSlot(t *testing.T) {
	fake := clock.NewFake()
	_, port, log := blastServer(t, ServerConfig{MaxClients: 1, RcvTimeout: 500 * time.Millisecond, Clock: fake})
	rc := dialRaw(t, port)
	rc.expect(wire.ParamExchange)
	wire.WriteJSON(rc.ctrl, map[string]any{"tcp": true, "time": 0, "num": 100 << 30, "parallel": 1, "reverse": true, "client_version": "3.12"})
	rc.expect(wire.CreateStreams)
	rc.stream() // and never read it
	rc.expect(wire.TestStart, wire.TestRunning)
	r := stepUntilResult(t, fake, log, 250*time.Millisecond)
	want := "idle timeout for receiving data: the client neither took data nor ended the test for 500ms (--rcv-timeout 500 ms): it stalled, or it is gone"
	if r.Err == nil || r.Err.Error() != want {
		t.Errorf("server: %v\nwant %s", r.Err, want)
	}
	if st, err := wire.ReadState(rc.ctrl); err != nil || st != wire.ServerError {
		t.Errorf("the client was told %v %v, want SERVER_ERROR", st, err)
	}
	if _, err := Run(context.Background(), Config{Host: "127.0.0.1", Port: port, Bytes: 1 << 20}); err != nil {
		t.Errorf("the next client: %v", err)
	}
}

// stepUntilResult moves a server's fake clock by step each time the
// server's one running test has armed its next check, until the server
// reports the test's result (within 30 s).
func stepUntilResult(t *testing.T, fake *clock.Fake, log *resultLog, step time.Duration) *result.Result {
	t.Helper()
	bound := time.After(30 * time.Second)
	for {
		log.mu.Lock()
		n := len(log.res)
		log.mu.Unlock()
		if n > 0 {
			return log.wait(t, 1)[0]
		}
		select {
		case <-fake.Armed(1):
			fake.Advance(step)
		case <-time.After(2 * time.Millisecond):
			// The check is running, or the result is on its way.
		case <-bound:
			t.Fatal("the server did not end the stalled test")
		}
	}
}

// Out of descriptors, accept fails with EMFILE: the server waits and
// accepts again instead of exiting. The server runs in a child process
// with a low RLIMIT_NOFILE.
func TestAdmitAcceptEMFILE(t *testing.T) {
	if os.Getenv("BLAST_EMFILE_CHILD") != "" {
		emfileChild()
		return
	}
	port := testkit.FreePort(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestAdmitAcceptEMFILE$", "-test.count=1")
	cmd.Env = append(os.Environ(), "BLAST_EMFILE_CHILD="+strconv.Itoa(port))
	var out testkit.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("the server's output:\n%s", out.String())
		}
	})
	waitListen(t, port)
	// 100 silent connections: more than the child has descriptors.
	var flood []net.Conn
	for range 100 {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		flood = append(flood, c)
	}
	// The server ran out of descriptors, said so, and goes on.
	testkit.WaitFor(t, 30*time.Second, "the server's word that accept failed with EMFILE", func() bool {
		return strings.Contains(out.String(), "too many open files: waiting")
	})
	select {
	case err := <-exited:
		t.Fatalf("the server exited under EMFILE: %v", err)
	default:
	}
	for _, c := range flood {
		c.Close()
	}
	// The flood's connections end (the server reads their end where it
	// waits for their cookie), and the server serves again: the client's
	// connection is accepted after theirs, however long that takes.
	if _, err := Run(context.Background(), Config{Host: "127.0.0.1", Port: port, Bytes: 1 << 20, StateTimeout: 30 * time.Second}); err != nil {
		t.Fatalf("no test ran after the flood: %v", err)
	}
	select {
	case err := <-exited:
		t.Fatalf("the server exited: %v", err)
	default:
	}
}

func emfileChild() {
	port, _ := strconv.Atoi(os.Getenv("BLAST_EMFILE_CHILD"))
	syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: 40, Max: 40})
	srv, err := Listen(ServerConfig{Bind: "127.0.0.1", Port: port, StreamTimeout: time.Second, NoNIC: true, Log: os.Stderr})
	if err != nil {
		os.Stderr.WriteString("emfile child: " + err.Error() + "\n")
		os.Exit(3)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Serve(ctx); err != nil {
		os.Stderr.WriteString("emfile child: Serve: " + err.Error() + "\n")
		os.Exit(4)
	}
	os.Exit(0)
}

// A test's control connection carries keepalive probes after 10 s of
// silence, so a client whose host died is found within about 30 s (ss
// shows the server socket's keepalive timer).
func TestServerControlKeepAlive(t *testing.T) {
	if _, err := exec.LookPath("ss"); err != nil {
		t.Skip("no ss (iproute2)")
	}
	_, port, _ := blastServer(t, ServerConfig{})
	rc := dialRaw(t, port)
	rc.expect(wire.ParamExchange)
	out, err := exec.Command("ss", "-tnoH", "state", "established", "( sport = :"+strconv.Itoa(port)+" )").CombinedOutput()
	if err != nil {
		t.Fatalf("ss: %v: %s", err, out)
	}
	// timer:(keepalive,9.992ms,0) here (this ss labels the seconds
	// "ms"): the first probe within 10 s, where Go's default waits 15.
	line := strings.TrimSpace(string(out))
	i := strings.Index(line, "timer:(keepalive,")
	if i < 0 {
		t.Fatalf("the server's control socket has no keepalive timer: %q", line)
	}
	rest := line[i+len("timer:(keepalive,"):]
	n := strings.IndexFunc(rest, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	secs, err := strconv.ParseFloat(rest[:max(n, 0)], 64)
	// (How far below 10 s it has come depends on how long ss took.)
	if err != nil || secs > 10 || secs <= 0 {
		t.Errorf("keepalive timer in %q: want the first probe within 10 s", line)
	}
}
