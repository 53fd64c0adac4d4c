package control

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/internal/testkit"
)

// Fault and load tests of the server (issue 13): connections that never
// identify themselves, floods of them, clients that go mid-test, hundreds
// of tests in a row, and shutting down with tests running. Each test fails
// without the protection it checks: the caps and timeouts on unidentified
// connections (admit.go), slots taken only by valid tests, and every
// socket, thread and goroutine of a test released on every path.
// The killed-process tests are in cmd/blast (they need the binary), the
// link-down test in fault_lab_test.go.

// The real test the attacks run beside: 3 s at 100 Mbit/s, ended by its
// byte count, so both ends' counts are exact.
const (
	faultRate  = 100e6
	faultBytes = int64(faultRate / 8 * 3)
)

var (
	faultClientAddr   = netip.MustParseAddr("127.0.0.1")
	faultAttackerAddr = netip.MustParseAddr("127.0.0.2")
)

// faultRealTest runs the real test from 127.0.0.1 against port and checks
// that it was served: it moved exactly its bytes, both ends agreeing, and
// neither end failed. (How long it took under attack is the host's.)
func faultRealTest(t *testing.T, port int, rl *resultLog) *result.Result {
	t.Helper()
	start := time.Now()
	r := runClient(t, Config{Port: port, Bind: faultClientAddr, Bytes: faultBytes, Rate: faultRate, RateSet: true, NoNIC: true})
	took := time.Since(start)
	s := faultResult(t, rl, r.Cookie)
	if s.Err != nil {
		t.Errorf("the server failed the real test: %v", s.Err)
	}
	checkBlastPair(t, r, s, 1, faultBytes, 0)
	if c, sv := sumsOf(r), sumsOf(s); c.upSent != faultBytes || sv.upRecv != faultBytes {
		t.Errorf("the client sent %d bytes and the server received %d; want %d both", c.upSent, sv.upRecv, faultBytes)
	}
	t.Logf("real test: %d bytes in %v", faultBytes, took.Round(time.Millisecond))
	return s
}

// faultResult waits for the server's result of the test with cookie.
func faultResult(t *testing.T, rl *resultLog, cookie string) *result.Result {
	t.Helper()
	return rl.find(t, cookie)
}

// faultDial connects to the server's port from addr.
func faultDial(port int, from netip.Addr) (*net.TCPConn, error) {
	d := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(from, 0)), Timeout: 5 * time.Second}
	c, err := d.Dial("tcp4", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return nil, err
	}
	return c.(*net.TCPConn), nil
}

// faultPending waits until the server holds no place for unidentified
// connections (each connection gives its place back when it goes).
func faultPending(t *testing.T, srv *Server, within time.Duration) {
	t.Helper()
	var n int
	var by map[netip.Addr]int
	if testkit.Eventually(within, func() bool {
		srv.mu.Lock()
		n, by = srv.pending.Len(), srv.pending.Holding()
		srv.mu.Unlock()
		return n == 0 && len(by) == 0
	}) {
		return
	}
	t.Errorf("the server still holds %d places for unidentified connections (by address %v): connections that went, or timed out, did not give theirs back", n, by)
}

// 1000 and more connections that connect and go at once, or after half a
// cookie, or with a reset, from the real client's own address, before and
// while its test runs: the test moves exactly its bytes, and every
// connection that went gave its place among the unidentified back (else
// the real client's address would run into its cap of 32).
func TestFaultConnectDropFlood(t *testing.T) {
	srv, port, rl := blastServer(t, ServerConfig{NoNIC: true})

	// Each worker keeps to a schedule of one cycle every 5 ms (400 a
	// second in all), catching up after a stall of the VM. The flood goes
	// on after the real test until it has made minCycles in all.
	const workers, every, minCycles = 2, 5 * time.Millisecond, 1000
	var cycles, failures atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	cookie := wire.NewCookie()
	begin := time.Now()
	for w := range workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(time.Until(begin.Add(time.Duration(i) * every))):
				}
				c, err := faultDial(port, faultClientAddr)
				if err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				switch (i*workers + w) % 3 {
				case 0: // connect, close at once
				case 1: // half a cookie, then close
					c.Write(cookie[:wire.CookieSize/2])
				case 2: // half a cookie, then a reset
					c.Write(cookie[:wire.CookieSize/2])
					c.SetLinger(0)
				}
				c.Close()
				cycles.Add(1)
			}
		})
	}
	stopped := false
	stopFlood := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer stopFlood()
	// The flood is under way before the real client connects: a place
	// not given back would have run the address into its cap by now.
	testkit.WaitFor(t, 30*time.Second, "the flood's first cycles", func() bool { return cycles.Load() >= 4*DefaultMaxUnidentifiedPerHost })
	before := cycles.Load()
	faultRealTest(t, port, rl)
	during := cycles.Load() - before
	testkit.WaitFor(t, time.Minute, fmt.Sprintf("%d cycles of the flood", minCycles), func() bool { return cycles.Load() >= minCycles })
	stopFlood()
	t.Logf("%d connect-and-drop cycles, %d of them while the real test ran", cycles.Load(), during)
	if n := failures.Load(); n > 0 {
		t.Errorf("%d connections of the flood failed to connect (first: %v)", n, firstErr.Load())
	}
	if during == 0 {
		t.Error("no cycle of the flood while the real test ran")
	}
	faultPending(t, srv, 30*time.Second)
	rl.mu.Lock()
	n := len(rl.res)
	rl.mu.Unlock()
	if n != 1 {
		t.Errorf("%d results, want 1 (connections that sent no whole cookie are no tests)", n)
	}
}

// faultConn is an attacking connection and when it saw what the server
// sent or did last (a read error: EOF when the server closed it).
type faultConn struct {
	c *net.TCPConn
	// answered is when a cookie-only connection got PARAM_EXCHANGE.
	answered time.Time
	got      []byte
	err      error
	at       time.Time
	done     chan struct{}
}

// watch reads c until the server closes it (or until the deadline).
func (fc *faultConn) watch(deadline time.Time) {
	fc.done = make(chan struct{})
	fc.c.SetReadDeadline(deadline)
	go func() {
		defer close(fc.done)
		buf := make([]byte, 64)
		for {
			n, err := fc.c.Read(buf)
			fc.got = append(fc.got, buf[:n]...)
			if err != nil {
				fc.err, fc.at = err, time.Now()
				return
			}
		}
	}()
}

// closed reports whether the server closed the connection (by now).
func (fc *faultConn) closed() bool {
	select {
	case <-fc.done:
		return errors.Is(fc.err, io.EOF) || errors.Is(fc.err, syscall.ECONNRESET)
	default:
		return false
	}
}

// 200 idle connections that never send a byte and then 8 that send a
// cookie and then nothing, all from 127.0.0.2, while a real test runs
// from 127.0.0.1: each connection over the 32 unidentified ones an address
// may hold closes the oldest of them (unanswered), the real test is served
// whole, and the 8 and the newest idle ones hold on until the handshake
// timeout, when the server closes them (the 8 with SERVER_ERROR). No
// connection may close before that timeout (a lower bound, which a busy
// host cannot break); how late after it they close is the host's.
func TestFaultHalfOpenFlood(t *testing.T) {
	const (
		idle, cookieOnly = 200, 8
		streamTimeout    = 6 * time.Second
	)
	srv, port, rl := blastServer(t, ServerConfig{NoNIC: true, StreamTimeout: streamTimeout, HandshakeTimeout: streamTimeout})
	// Every deadline of the server for these connections is set after
	// begin: none may pass before begin+streamTimeout.
	begin := time.Now()
	watchUntil := begin.Add(streamTimeout + time.Minute)

	var conns []*faultConn
	t.Cleanup(func() {
		for _, fc := range conns {
			fc.c.Close()
		}
	})
	var idles []*faultConn
	for range idle {
		c, err := faultDial(port, faultAttackerAddr)
		if err != nil {
			t.Fatal(err)
		}
		fc := &faultConn{c: c}
		conns = append(conns, fc)
		idles = append(idles, fc)
		fc.watch(watchUntil)
	}
	// The cookie-only ones last: each is answered PARAM_EXCHANGE, and
	// then waits for its parameters.
	var cookies []*faultConn
	for range cookieOnly {
		c, err := faultDial(port, faultAttackerAddr)
		if err != nil {
			t.Fatal(err)
		}
		fc := &faultConn{c: c}
		conns = append(conns, fc)
		cookies = append(cookies, fc)
		cookie := wire.NewCookie()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := c.Write(cookie[:]); err != nil {
			t.Fatal(err)
		}
		if st, err := wire.ReadState(c); err != nil || st != wire.ParamExchange {
			t.Fatalf("cookie-only connection: %v, %v; want PARAM_EXCHANGE", st, err)
		}
		fc.answered = time.Now()
		c.SetDeadline(time.Time{})
	}
	for _, fc := range cookies {
		fc.watch(watchUntil)
	}
	keep := DefaultMaxUnidentifiedPerHost - cookieOnly
	shedNow := func() map[*faultConn]bool {
		m := map[*faultConn]bool{}
		for _, fc := range idles {
			if fc.closed() {
				m[fc] = true
			}
		}
		return m
	}
	testkit.WaitFor(t, 30*time.Second, fmt.Sprintf("the %d idle connections over the cap closed", idle-keep), func() bool { return len(shedNow()) >= idle-keep })
	shed := shedNow()
	if len(shed) != idle-keep {
		t.Fatalf("the server closed %d of %d idle connections from one address, want %d (all over its cap of %d unidentified ones, %d of them cookie-only)",
			len(shed), idle, idle-keep, DefaultMaxUnidentifiedPerHost, cookieOnly)
	}

	faultRealTest(t, port, rl)

	// Still there, if it is not yet time for them to go: the cookie-only
	// connections, and the idle ones that got a place.
	if since := time.Since(begin); since < streamTimeout {
		for i, fc := range cookies {
			if fc.closed() {
				t.Errorf("cookie-only connection %d closed %v after the attack began, before the stream timeout %v: %v", i, fc.at.Sub(begin), streamTimeout, fc.err)
			}
		}
		if n := len(shedNow()); n != idle-keep {
			t.Errorf("%d idle connections closed %v after the attack began, want still %d", n, since, idle-keep)
		}
	} else {
		t.Logf("the real test ended %v after the attack began: too late to see the connections still open", since)
	}
	// At StreamTimeout the server closes them all, and gives their places
	// back.
	for _, fc := range conns {
		<-fc.done
	}
	for i, fc := range cookies {
		switch after := fc.at.Sub(begin); {
		case !fc.closed():
			t.Errorf("cookie-only connection %d: %v, want closed by the server", i, fc.err)
		case after < streamTimeout:
			t.Errorf("cookie-only connection %d closed %v after the attack began, before the stream timeout %v", i, after, streamTimeout)
		case len(fc.got) == 0 || wire.State(int8(fc.got[0])) != wire.ServerError:
			t.Errorf("cookie-only connection %d got %v before it closed, want SERVER_ERROR", i, fc.got)
		}
	}
	kept := 0
	for _, fc := range idles {
		if !fc.closed() {
			t.Errorf("an idle connection: %v, want closed by the server at its stream timeout", fc.err)
			break
		}
		if shed[fc] {
			continue
		}
		kept++
		if after := fc.at.Sub(begin); after < streamTimeout {
			t.Errorf("a kept idle connection closed %v after the attack began, before the stream timeout %v", after, streamTimeout)
		}
	}
	if kept != keep {
		t.Errorf("%d idle connections closed at the stream timeout, want the %d the server kept", kept, keep)
	}
	faultPending(t, srv, 30*time.Second)
	// The cookie-only ones were control connections that never sent
	// their parameters: failed tests.
	res := rl.wait(t, 1+cookieOnly)
	for _, r := range res {
		if r.Err != nil && !strings.Contains(r.Err.Error(), "read parameters") {
			t.Errorf("a cookie-only connection's result: %v, want it failed reading parameters", r.Err)
		}
	}
}

// With --max-clients 2, 8 connections that sent their cookie and nothing
// more hold no slot: two real tests still run at once. The first holds
// its slot until it sends TEST_END (a raw client of a -n test); the
// second runs whole meanwhile.
func TestFaultCookieOnlyNoSlots(t *testing.T) {
	_, port, rl := blastServer(t, ServerConfig{NoNIC: true, MaxClients: 2})
	for range 8 {
		c, err := faultDial(port, faultAttackerAddr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		cookie := wire.NewCookie()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		c.Write(cookie[:])
		if st, err := wire.ReadState(c); err != nil || st != wire.ParamExchange {
			t.Fatalf("cookie-only connection: %v, %v; want PARAM_EXCHANGE", st, err)
		}
	}
	// The first test: running, and holding its slot.
	first := dialRaw(t, port)
	first.expect(wire.ParamExchange)
	if err := wire.WriteJSON(first.ctrl, map[string]any{"tcp": true, "time": 0, "num": 64 << 10, "parallel": 1, "len": 65536, "client_version": "3.12"}); err != nil {
		t.Fatal(err)
	}
	first.expect(wire.CreateStreams)
	data := first.stream()
	first.expect(wire.TestStart, wire.TestRunning)
	if _, err := data.Write(make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	// The second, beside it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := Run(ctx, Config{Host: "127.0.0.1", Port: port, Bind: faultClientAddr, Bytes: 4 << 20, NoNIC: true})
	if err != nil {
		t.Fatalf("the second test beside the first: %v (8 cookie-only connections took a slot of --max-clients 2?)", err)
	}
	if s := faultResult(t, rl, r.Cookie); s.Err != nil || sumsOf(s).upRecv != 4<<20 {
		t.Errorf("server, second test: %v, %+v", s.Err, sumsOf(s))
	}
	// The first ends as iperf3's client ends it.
	wire.WriteState(first.ctrl, wire.TestEnd)
	first.expect(wire.ExchangeResults)
	mine := wire.Results{CPUUtilTotal: 1, SenderHasRetransmits: 0, Streams: []wire.StreamResults{{ID: 1, Bytes: 64 << 10, EndTime: 1}}}
	if err := wire.WriteJSON(first.ctrl, mine); err != nil {
		t.Fatal(err)
	}
	if _, err := wire.ReadFrame(first.ctrl, wire.MaxResultsJSON); err != nil {
		t.Fatal(err)
	}
	first.expect(wire.DisplayResults)
	wire.WriteState(first.ctrl, wire.IperfDone)
	for _, s := range rl.wait(t, 2) {
		if s.Err != nil || sumsOf(s).upRecv == 0 {
			t.Errorf("server: %v, %+v", s.Err, sumsOf(s))
		}
	}
}

// faultFDs lists the process's open descriptors (what each points to).
func faultFDs(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		l, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil {
			continue // the directory's own descriptor, closed by now
		}
		out = append(out, e.Name()+" -> "+l)
	}
	sort.Strings(out)
	return out
}

// faultQuiet waits (up to 20 looks 100 ms apart) until the descriptors
// and goroutines stop changing, and returns them: what a warm-up left. A
// count taken while some still go only makes the later check kinder.
func faultQuiet(t *testing.T) ([]string, int) {
	t.Helper()
	fds, g := faultFDs(t), runtime.NumGoroutine()
	tk := time.NewTicker(100 * time.Millisecond)
	defer tk.Stop()
	for range 20 {
		<-tk.C
		fds2, g2 := faultFDs(t), runtime.NumGoroutine()
		if len(fds2) == len(fds) && g2 == g {
			break
		}
		fds, g = fds2, g2
	}
	return fds, g
}

// faultSettle waits (30 s at most) for the descriptors and goroutines to
// come down to fds and goroutines, and fails the test if they do not.
func faultSettle(t *testing.T, what string, fds []string, goroutines, slack int) {
	t.Helper()
	var now []string
	var g int
	if testkit.Eventually(30*time.Second, func() bool {
		now, g = faultFDs(t), runtime.NumGoroutine()
		return len(now) <= len(fds) && g <= goroutines+slack
	}) {
		t.Logf("%s: %d descriptors (%d before), %d goroutines (%d before)", what, len(now), len(fds), g, goroutines)
		return
	}
	if len(now) > len(fds) {
		t.Errorf("%s: %d open descriptors, %d before; new: %v", what, len(now), len(fds), faultNew(fds, now))
	}
	if g > goroutines+slack {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("%s: %d goroutines, %d before (+%d allowed):\n%s", what, g, goroutines, slack, buf)
	}
}

// faultNew is what is in now and not in before.
func faultNew(before, now []string) []string {
	had := map[string]bool{}
	for _, s := range before {
		had[s] = true
	}
	var out []string
	for _, s := range now {
		if !had[s] {
			out = append(out, s)
		}
	}
	return out
}

// faultKinds are the short tests of TestFaultFdFlat: TCP and UDP, each
// one way, -R and --bidir.
var faultKinds = []struct {
	name string
	cfg  Config
}{
	{"tcp", Config{}},
	{"udp", Config{UDP: true, Rate: 200e6, RateSet: true}},
	{"tcp -R", Config{Reverse: true}},
	{"udp -R", Config{UDP: true, Rate: 200e6, RateSet: true, Reverse: true}},
	{"tcp --bidir", Config{Bidir: true}},
	{"udp --bidir", Config{UDP: true, Rate: 200e6, RateSet: true, Bidir: true}},
}

// 30 short tests, 5 of every kind, against one server in this process
// (a leak of one descriptor or goroutine a test shows many times over):
// once the results are in, the process has the descriptors and (within 5)
// the goroutines it had after a warm-up: no socket, NIC handle, UDP port,
// thread or goroutine is left behind by a test.
func TestFaultFdFlat(t *testing.T) {
	_, port, rl := blastServer(t, ServerConfig{})
	run := func(i int) {
		k := faultKinds[i%len(faultKinds)]
		cfg := k.cfg
		cfg.Host, cfg.Port, cfg.Bytes, cfg.Interval = "127.0.0.1", port, 64<<10, 0
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if _, err := Run(ctx, cfg); err != nil {
			t.Fatalf("test %d (%s): %v", i, k.name, err)
		}
	}
	// The first tests open what lasts: the runtime's poller, the server's
	// UDP port.
	warm := len(faultKinds)
	for i := range warm {
		run(i)
	}
	rl.wait(t, warm)
	fds, g := faultQuiet(t)
	t.Logf("after the warm-up: %d descriptors, %d goroutines", len(fds), g)

	const tests = 30
	start := time.Now()
	for i := range tests {
		run(warm + i)
	}
	res := rl.wait(t, warm+tests)
	t.Logf("%d tests in %v", tests, time.Since(start).Round(time.Millisecond))
	for _, r := range res {
		if r.Err != nil {
			t.Errorf("server: %v", r.Err)
		}
	}
	faultSettle(t, fmt.Sprintf("after %d tests", tests), fds, g, 5)
}

// Cancelling Serve's context (SIGTERM in cmd/blast) with a TCP, a UDP and
// a -R test running: every client is told the server terminated the test
// and keeps what it measured, every server result says ErrShutdown, Serve
// returns, and the process has the descriptors and goroutines it had
// before the server started.
func TestFaultShutdownFreesAll(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"tcp", Config{}},
		{"udp", Config{UDP: true, Rate: 20e6, RateSet: true}},
		{"tcp -R", Config{Reverse: true}},
	}
	serve := func(cfg ServerConfig) (port int, stop func() error) {
		cfg.Bind = "127.0.0.1"
		srv, err := Listen(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ctx) }()
		var once sync.Once
		stop = func() error {
			var err error
			once.Do(func() {
				cancel()
				select {
				case err = <-served:
				case <-time.After(time.Minute):
					err = errors.New("Serve did not return within a minute of the cancel")
				}
			})
			return err
		}
		t.Cleanup(func() { stop() })
		return srv.Addr().(*net.TCPAddr).Port, stop
	}

	// A server as the one below, and a test of each kind, open what lasts
	// (the runtime's poller, timers' goroutines).
	port, stop := serve(ServerConfig{Interval: 100 * time.Millisecond})
	for _, tc := range tests {
		cfg := tc.cfg
		cfg.Port, cfg.Bytes = port, 64<<10
		runClient(t, cfg)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	fds, g := faultQuiet(t)
	t.Logf("after the warm-up: %d descriptors, %d goroutines", len(fds), g)

	var mu sync.Mutex
	moving := map[string]bool{} // cookies of the tests that moved bytes
	var results []*result.Result
	port, stop = serve(ServerConfig{Interval: 100 * time.Millisecond,
		OnInterval: func(r *result.Result, iv *result.Interval) {
			for _, st := range iv.Streams {
				if st.Bytes > 0 {
					mu.Lock()
					moving[r.Cookie] = true
					mu.Unlock()
				}
			}
		},
		OnResult: func(r *result.Result) { mu.Lock(); results = append(results, r); mu.Unlock() }})
	type out struct {
		r   *result.Result
		err error
	}
	outs := make([]chan out, len(tests))
	for i, tc := range tests {
		outs[i] = make(chan out, 1)
		cfg := tc.cfg
		cfg.Host, cfg.Port, cfg.Duration, cfg.Interval = "127.0.0.1", port, 20*time.Second, 200*time.Millisecond
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r, err := Run(ctx, cfg)
			outs[i] <- out{r, err}
		}()
	}
	testkit.WaitFor(t, 30*time.Second, fmt.Sprintf("all %d tests moving bytes", len(tests)), func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(moving) == len(tests)
	})
	start := time.Now()
	if err := stop(); err != nil {
		t.Errorf("Serve: %v", err)
	}
	t.Logf("Serve returned %v after the cancel", time.Since(start).Round(time.Millisecond))
	for i, tc := range tests {
		select {
		case o := <-outs[i]:
			if o.err == nil || !strings.Contains(o.err.Error(), "the server has terminated the test") {
				t.Errorf("%s client: %v, want the server has terminated the test", tc.name, o.err)
			}
			if o.r == nil || len(o.r.Streams) == 0 || o.r.Streams[0].Bytes == 0 || len(o.r.Intervals) == 0 {
				t.Errorf("%s client: no partial results: %+v", tc.name, o.r)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s client still runs a minute after the server was told to stop", tc.name)
		}
	}
	mu.Lock()
	if len(results) != len(tests) {
		t.Errorf("%d server results, want %d", len(results), len(tests))
	}
	for _, r := range results {
		if !errors.Is(r.Err, ErrShutdown) || len(r.Streams) == 0 || r.Streams[0].Bytes == 0 {
			t.Errorf("server result: %v, streams %+v; want ErrShutdown with partial results", r.Err, r.Streams)
		}
	}
	mu.Unlock()
	faultSettle(t, "after the shutdown", fds, g, 0)
}
