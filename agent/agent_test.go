package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/control"
	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	_ "github.com/blastnet/blast/engine/backends"
	"github.com/blastnet/blast/internal/clock"
	"github.com/blastnet/blast/internal/testkit"
)

var token = []byte("0123456789abcdef0123456789abcdef")

// start runs an agent on loopback until the test ends.
func start(t *testing.T, mod func(*Config)) (*Agent, *Client) {
	t.Helper()
	cfg := Config{Server: control.ServerConfig{Bind: "127.0.0.1", Port: 0}, ControlPort: testkit.FreePort(t),
		Token: token, Name: "node-a", Zone: "zone-1"}
	cfg.Server.Defaults()
	if mod != nil {
		mod(&cfg)
	}
	a, _ := run(t, cfg)
	return a, &Client{Addr: a.ControlAddr().String(), Token: token, Clock: cfg.Clock}
}

// run runs an agent with cfg until stop is called or the test ends.
func run(t *testing.T, cfg Config) (a *Agent, stop func()) {
	t.Helper()
	a, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return a, stop
}

// testServer is a data server's configuration on loopback.
func testServer() control.ServerConfig {
	s := control.ServerConfig{Bind: "127.0.0.1"}
	s.Defaults()
	return s
}

func dataPort(a *Agent) int { return a.DataAddr().(*net.TCPAddr).Port }

func TestInfo(t *testing.T) {
	a, c := start(t, nil)
	in, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := Info{Name: "node-a", Instance: a.instance, Zone: "zone-1", DataPort: dataPort(a), ControlPort: a.ControlAddr().(*net.TCPAddr).Port,
		Version: result.Version, Addrs: in.Addrs}
	if diff := cmp.Diff(want, *in); diff != "" {
		t.Errorf("info (-want +got):\n%s", diff)
	}
	if len(in.Instance) != 32 || strings.Trim(in.Instance, "0123456789abcdef") != "" {
		t.Errorf("instance %q, want 32 hex digits", in.Instance)
	}
	if got, want := c.KeyID(), "node-a/"+in.Instance; got != want {
		t.Errorf("the client signs for %q, want %q", got, want)
	}
}

// signed is a request to agent a signed at at with nonce for keyid ("":
// a's own).
func signed(a *Agent, method, path string, at time.Time, nonce string, body []byte, keyid string) *http.Request {
	if keyid == "" {
		keyid = a.auth.keyid
	}
	req, _ := http.NewRequest(method, "http://"+a.ControlAddr().String()+path, bytes.NewReader(body))
	signRequest(req, token, keyid, at, nonce, body)
	return req
}

// status sends req on a connection of its own and returns the answer's
// status.
func status(t *testing.T, req *http.Request) int {
	t.Helper()
	req.Close = true
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// fakeNow is a fake clock at the real time (whole seconds, as requests
// carry their time): the agent's clients sign with the real clock.
func fakeNow() *clock.Fake {
	f := clock.NewFake()
	f.Set(time.Now().Truncate(time.Second))
	return f
}

func TestRefusals(t *testing.T) {
	clk := fakeNow()
	a, c := start(t, func(cfg *Config) { cfg.Clock = clk })
	ctx := context.Background()
	bad := &Client{Addr: c.Addr, Token: []byte("another-token-of-32-bytes-length")}
	if _, err := bad.Info(ctx); !errors.Is(err, ErrAuth) {
		t.Errorf("another token: %v, want ErrAuth", err)
	}

	// A signed request seen on the wire is taken once.
	nonce := newNonce()
	for i, want := range []int{http.StatusOK, http.StatusUnauthorized} {
		if got := status(t, signed(a, http.MethodGet, PathInfo, clk.Now(), nonce, nil, "")); got != want {
			t.Errorf("request %d: status %d, want %d", i, got, want)
		}
	}
	// A request from a clock off by ClockSkew is taken, one off by a
	// second more is not, either way: on the agent's clock, moved from
	// the request's signing too.
	get := func(at time.Time) int {
		t.Helper()
		return status(t, signed(a, http.MethodGet, PathInfo, at, newNonce(), nil, ""))
	}
	now := clk.Now()
	for _, tc := range []struct {
		at   time.Time
		want int
	}{
		{now.Add(-ClockSkew), http.StatusOK},
		{now.Add(ClockSkew), http.StatusOK},
		{now.Add(-ClockSkew - time.Second), http.StatusUnauthorized},
		{now.Add(ClockSkew + time.Second), http.StatusUnauthorized},
	} {
		if got := get(tc.at); got != tc.want {
			t.Errorf("a request signed %v from the agent's clock: status %d, want %d", tc.at.Sub(now), got, tc.want)
		}
	}
	// The signature covers the body (what else it covers is
	// TestSignatureCovers'): a changed body is refused.
	body := []byte(`{"host":"127.0.0.1","port":` + strconv.Itoa(dataPort(a)) + `,"seconds":1,"streams":1}`)
	req := signed(a, http.MethodPost, PathTest, clk.Now(), newNonce(), body, "")
	changed := bytes.Replace(body, []byte(`"streams":1`), []byte(`"streams":9`), 1)
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(changed)), int64(len(changed))
	if got := status(t, req); got != http.StatusUnauthorized {
		t.Errorf("changed body: status %d, want 401", got)
	}
	req = signed(a, http.MethodPost, PathTest, clk.Now(), newNonce(), body, "")
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(changed)), int64(len(changed))
	req.Header.Set("Content-Digest", contentDigest(changed))
	if got := status(t, req); got != http.StatusUnauthorized {
		t.Errorf("changed body and Content-Digest: status %d, want 401", got)
	}

	for _, tc := range []struct {
		req  TestRequest
		want string
	}{
		{TestRequest{Port: 5201, Seconds: 1, Streams: 1}, "no host to test to"},
		{TestRequest{Host: "127.0.0.1", Port: 0, Seconds: 1, Streams: 1}, "port 0: must be 1 to 65535"},
		{TestRequest{Host: "127.0.0.1", Port: 5201, Seconds: 0.5, Streams: 1}, "seconds 0.5: must be 1 to 3600"},
		{TestRequest{Host: "127.0.0.1", Port: 5201, Seconds: 1, Streams: 0}, "streams 0: must be 1 to 128"},
		{TestRequest{Host: "127.0.0.1", Port: 5201, Seconds: 1, Streams: 1, StartAt: clk.Now().Add(MaxStartWait + time.Second)}, "more than 1m0s ahead"},
	} {
		_, err := c.Test(ctx, tc.req)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error with %q", tc.req, err, tc.want)
		}
	}

	// The agent's clock moves on (the client's, the real one, does not
	// follow it: this comes last).
	clk.Advance(ClockSkew)
	if got := get(now); got != http.StatusOK {
		t.Errorf("a request signed ClockSkew before it arrives: status %d, want 200", got)
	}
	clk.Advance(time.Second)
	if got := get(now); got != http.StatusUnauthorized {
		t.Errorf("a request signed ClockSkew and a second before it arrives: status %d, want 401", got)
	}
}

// TestStartAtBound: a start MaxStartWait ahead is taken, a second more is
// not.
func TestStartAtBound(t *testing.T) {
	now := clock.Epoch
	req := TestRequest{Host: "127.0.0.1", Port: 5201, Seconds: 1, Streams: 1, StartAt: now.Add(MaxStartWait)}
	if _, err := req.config(now); err != nil {
		t.Errorf("a start MaxStartWait ahead: %v", err)
	}
	req.StartAt = now.Add(MaxStartWait + time.Second)
	if _, err := req.config(now); err == nil || err.Error() != "start_at 2026-01-01T00:01:01Z is more than 1m0s ahead" {
		t.Errorf("a start MaxStartWait and a second ahead: %v", err)
	}
}

// TestNonceMemory: the verifier remembers nonces up to maxNonces, and
// when full forgets those older than ClockSkew, no sooner.
func TestNonceMemory(t *testing.T) {
	const keyid = "node-a/0123"
	v := newVerifier(token, keyid)
	t0 := clock.Epoch
	for i := range maxNonces {
		v.seen[strconv.Itoa(i)] = t0
	}
	sreq := func(at time.Time, nonce string) *http.Request {
		r, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:5202"+PathInfo, nil)
		signRequest(r, token, keyid, at, nonce, nil)
		return r
	}
	req := func(at, now time.Time) error {
		return v.check(sreq(at, newNonce()), nil, now)
	}
	if err := req(t0.Add(ClockSkew), t0.Add(ClockSkew)); err == nil || err.Error() != "too many requests" {
		t.Errorf("full, none older than ClockSkew: %v, want too many requests", err)
	}
	if len(v.seen) != maxNonces {
		t.Errorf("%d nonces remembered, want %d", len(v.seen), maxNonces)
	}
	now := t0.Add(ClockSkew + time.Second)
	if err := req(now, now); err != nil {
		t.Errorf("full, all older than ClockSkew: %v, want taken", err)
	}
	if len(v.seen) != 1 {
		t.Errorf("%d nonces remembered after the old ones were forgotten, want 1", len(v.seen))
	}
	// A replay is refused with the clock anywhere in the window.
	r := sreq(now, newNonce())
	for i, want := range []string{"", "replayed request"} {
		err := v.check(r, nil, now.Add(time.Duration(i)*ClockSkew))
		if got := fmt.Sprint(err); want == "" && err != nil || want != "" && got != want {
			t.Errorf("request %d: %v, want %q", i, err, want)
		}
	}
}

func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "token")
	os.WriteFile(good, append(token, '\n'), 0o600)
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("abc\n"), 0o600)
	if got, err := ReadToken(good); err != nil || string(got) != string(token) {
		t.Errorf("ReadToken(good) = %q, %v", got, err)
	}
	if _, err := ReadToken(short); err == nil || err.Error() != "the token in "+short+" is 3 bytes: use at least 16 (openssl rand -hex 32)" {
		t.Errorf("short token: %v", err)
	}
	t.Setenv(TokenEnv, "")
	if _, err := ReadToken(""); err == nil || !strings.HasPrefix(err.Error(), "no token: give --token-file FILE or set BLAST_TOKEN") {
		t.Errorf("no token: %v", err)
	}
	t.Setenv(TokenEnv, string(token))
	if got, err := ReadToken(""); err != nil || string(got) != string(token) {
		t.Errorf("ReadToken from env = %q, %v", got, err)
	}
}

// TestRunTests has the agent test against its own data server over
// loopback: TCP and paced UDP, with the figures the reply promises.
func TestRunTests(t *testing.T) {
	a, c := start(t, nil)
	ctx := context.Background()
	r, err := c.Test(ctx, TestRequest{Host: "127.0.0.1", Port: dataPort(a), Seconds: 1, Streams: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.Err != "" || r.Busy {
		t.Fatalf("TCP test failed: %+v", r)
	}
	if r.Bytes == 0 || r.Seconds < 0.9 {
		t.Errorf("TCP: %d bytes in %.2f s, want some bytes in at least its 1 s", r.Bytes, r.Seconds)
	}
	if got := 8 * float64(r.Bytes) / r.Seconds; got != r.Bps {
		t.Errorf("TCP: bps %g, want 8 × bytes / seconds = %g", r.Bps, got)
	}
	if r.NICSrc != "lo" || r.NICDst != "lo" || r.Start.IsZero() {
		t.Errorf("TCP: interfaces %q -> %q, start %v; want lo -> lo and a start", r.NICSrc, r.NICDst, r.Start)
	}

	const rate = 20_000_000
	r, err = c.Test(ctx, TestRequest{Host: "127.0.0.1", Port: dataPort(a), UDP: true, Rate: rate, Seconds: 1, Streams: 1, Len: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if r.Err != "" {
		t.Fatalf("UDP test failed: %+v", r)
	}
	// The sender is paced at rate: what was sent is at most that (and a
	// datagram). That it reaches the rate is TestTimingAgentUDPRate's.
	if r.Bytes == 0 || r.Seconds < 0.9 || r.Loss < 0 || r.Loss >= 1 || 8*float64(r.Bytes)/r.Seconds != r.Bps {
		t.Errorf("UDP: %d bytes in %.2f s, loss %.4f, %g bit/s: want some bytes in at least 1 s, bps 8 × bytes / seconds", r.Bytes, r.Seconds, r.Loss, r.Bps)
	}
	if sent, want := udpSent(r), rate/8.0*r.Seconds; sent > want*1.02+1000 {
		t.Errorf("UDP: %0.f bytes sent (%d received, loss %.4f) in %.2f s, want at most %.0f at %d bit/s", sent, r.Bytes, r.Loss, r.Seconds, want, rate)
	}
}

// udpSent is what a UDP test's sender sent, from what arrived and the
// share lost.
func udpSent(r *Reply) float64 { return float64(r.Bytes) / (1 - r.Loss) }

// TestBusy: the agent runs at most MaxTests tests at once (429), and a
// server that is busy says so in the reply (Busy), for the mesh to retry.
func TestBusy(t *testing.T) {
	clk := fakeNow()
	started := make(chan struct{}, 4)
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	a, c := start(t, func(cfg *Config) {
		cfg.Clock = clk
		cfg.MaxTests = 2
		cfg.Server.MaxClients = 1
		// A test that started holds the server's one slot until
		// released.
		cfg.Server.OnStart = func(*result.Result) { started <- struct{}{}; <-release }
	})
	ctx := context.Background()
	req := TestRequest{Host: "127.0.0.1", Port: dataPort(a), Seconds: 1, Streams: 1}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	var first *Reply
	go func() {
		defer wg.Done()
		var err error
		if first, err = c.Test(ctx, req); err != nil {
			t.Error(err)
		}
	}()
	<-started // the first test holds the server's one slot
	second, err := c.Test(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !second.Busy || second.Err != wire.ErrBusy.Error() {
		t.Errorf("second test while the server runs one: %+v, want Busy with %q", second, wire.ErrBusy)
	}

	// The agent's own limit: two tests of its own at once. The third
	// waits for its start time on the agent's clock, which stands still,
	// so it holds its slot until the clock is moved.
	wg.Add(1)
	var third *Reply
	go func() {
		defer wg.Done()
		var err error
		if third, err = c.Test(ctx, TestRequest{Host: "127.0.0.1", Port: dataPort(a), Seconds: 1, Streams: 1, StartAt: clk.Now().Add(time.Second)}); err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-clk.Armed(1):
	case <-time.After(time.Minute):
		t.Fatal("the test with a start time never waited for it")
	}
	if n := len(a.slots); n != 2 {
		t.Errorf("%d slots taken, want 2", n)
	}
	_, refused := c.Test(ctx, req)
	if refused == nil || !strings.HasSuffix(refused.Error(), "the agent runs 2 tests already (its most at once)") {
		t.Errorf("fourth test: %v, want the agent's refusal", refused)
	}
	// The first test ends, then the third starts at its time.
	unblock()
	select {
	case <-started:
		t.Error("the third test started before its time")
	default:
	}
	testkit.WaitFor(t, time.Minute, "the first test's end", func() bool { return len(a.slots) == 1 })
	clk.Advance(time.Second)
	wg.Wait()
	if first == nil || first.Err != "" {
		t.Errorf("first test: %+v", first)
	}
	if third == nil || third.Err != "" || third.Bytes == 0 {
		t.Errorf("third test, at its start time: %+v", third)
	}
}

// TestServeEnds: Serve returns when its context ends, and leaves no
// goroutine behind.
func TestServeEnds(t *testing.T) {
	before := runtime.NumGoroutine()
	cfg := Config{Server: control.ServerConfig{Bind: "127.0.0.1"}, ControlPort: testkit.FreePort(t), Token: token, Name: "n"}
	cfg.Server.Defaults()
	a, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx) }()
	c := &Client{Addr: a.ControlAddr().String(), Token: token}
	if _, err := c.Info(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	http.DefaultClient.CloseIdleConnections()
	if !testkit.Eventually(30*time.Second, func() bool { return runtime.NumGoroutine() <= before }) {
		n := runtime.NumGoroutine()
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
	if _, err := net.Dial("tcp", a.ControlAddr().String()); err == nil {
		t.Error("the control port still accepts")
	}
}

// TestListenName: a name that cannot be signed for (not printable ASCII)
// is refused before any port opens.
func TestListenName(t *testing.T) {
	cfg := Config{Server: testServer(), ControlPort: testkit.FreePort(t), Token: token, Name: "nöde\n"}
	if _, err := Listen(cfg); err == nil || err.Error() != `agent: name "nöde\n": use at most 253 printable ASCII characters (a host or node name)` {
		t.Errorf("Listen: %v", err)
	}
}

// A request to test to anything but an agent holding the token is
// answered with the one error, whatever the port does, and the target
// gets nothing past the proof's request (37 bytes): a plain blast server
// (it runs no test), a real iperf3 server, a port that answers like
// iperf3 and then waits, one that closes, a closed port, an agent of
// another mesh.
func TestOnlyToAgents(t *testing.T) {
	_, c := start(t, nil)
	want := control.ErrNotAgent.Error()
	ask := func(t *testing.T, port int) {
		t.Helper()
		r, err := c.Test(context.Background(), TestRequest{Host: "127.0.0.1", Port: port, Seconds: 1, Streams: 1})
		if err != nil {
			t.Fatal(err)
		}
		if r.Err != want || r.Bytes != 0 {
			t.Errorf("reply %+v, want the error %q and nothing measured", r, want)
		}
	}
	// raw listens on a port of its own; each connection gets answer, and
	// what it sent is returned when it hangs up.
	raw := func(t *testing.T, answer []byte) (port int, got <-chan []byte) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		ch := make(chan []byte, 1)
		go func() {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
			var b bytes.Buffer
			buf := make([]byte, 64)
			for b.Len() < wire.CookieSize {
				n, err := conn.Read(buf)
				b.Write(buf[:n])
				if err != nil {
					break
				}
			}
			if answer != nil {
				conn.Write(answer)
				io.Copy(&b, conn) // until the client hangs up
			}
			ch <- b.Bytes()
		}()
		return l.Addr().(*net.TCPAddr).Port, ch
	}
	t.Run("a blast server", func(t *testing.T) {
		t.Parallel()
		cfg := testServer()
		var tests int
		var mu sync.Mutex
		cfg.OnResult = func(*result.Result) { mu.Lock(); tests++; mu.Unlock() }
		srv, err := control.Listen(cfg)
		if err != nil {
			t.Fatal(err)
		}
		testkit.Serve(t, srv.Serve)
		ask(t, srv.Addr().(*net.TCPAddr).Port)
		mu.Lock()
		defer mu.Unlock()
		if tests != 0 {
			t.Errorf("the server ran %d tests", tests)
		}
	})
	t.Run("iperf3", func(t *testing.T) {
		t.Parallel()
		port := testkit.FreePort(t)
		cmd := exec.Command("iperf3", "-s", "-1", "-p", strconv.Itoa(port), "-B", "127.0.0.1")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatalf("iperf3 (Debian's iperf3 package; make test installs it): %v", err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		testkit.WaitFor(t, 10*time.Second, "iperf3 listening", func() bool {
			c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err == nil {
				c.Close()
			}
			return err == nil
		})
		ask(t, port)
	})
	t.Run("answers like iperf3, then waits", func(t *testing.T) {
		t.Parallel()
		port, got := raw(t, []byte{byte(wire.ParamExchange)})
		ask(t, port)
		if b := <-got; len(b) != wire.CookieSize || !bytes.HasPrefix(b, []byte("bAgt proof 1\n")) {
			t.Errorf("the target got %q, want the 37-byte proof request alone", b)
		}
	})
	t.Run("closes", func(t *testing.T) {
		t.Parallel()
		port, got := raw(t, nil)
		ask(t, port)
		if b := <-got; len(b) != wire.CookieSize {
			t.Errorf("the target got %d bytes, want the 37-byte proof request alone", len(b))
		}
	})
	t.Run("a closed port", func(t *testing.T) {
		t.Parallel()
		ask(t, testkit.FreePort(t))
	})
	t.Run("an agent of another mesh", func(t *testing.T) {
		t.Parallel()
		other, _ := start(t, func(c *Config) { c.Token = []byte("fedcba9876543210fedcba9876543210") })
		ask(t, dataPort(other))
	})
}
