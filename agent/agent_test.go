package agent

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/control"
	_ "github.com/blastnet/blast/engine/backends"
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
	a, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return a, &Client{Addr: a.ControlAddr().String(), Token: token}
}

func dataPort(a *Agent) int { return a.DataAddr().(*net.TCPAddr).Port }

func TestInfo(t *testing.T) {
	a, c := start(t, nil)
	in, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := Info{Name: "node-a", Zone: "zone-1", DataPort: dataPort(a), ControlPort: a.ControlAddr().(*net.TCPAddr).Port,
		Version: control.Version, Addrs: in.Addrs}
	if diff := cmp.Diff(want, *in); diff != "" {
		t.Errorf("info (-want +got):\n%s", diff)
	}
}

func TestRefusals(t *testing.T) {
	a, c := start(t, nil)
	ctx := context.Background()
	bad := &Client{Addr: c.Addr, Token: []byte("another-token-of-32-bytes-length")}
	if _, err := bad.Info(ctx); !errors.Is(err, ErrAuth) {
		t.Errorf("another token: %v, want ErrAuth", err)
	}

	// A signed request seen on the wire is taken once.
	url := "http://" + c.Addr + PathInfo
	hdr := sign(token, http.MethodGet, PathInfo, time.Now(), newNonce(), nil)
	for i, want := range []int{http.StatusOK, http.StatusUnauthorized} {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Authorization", hdr)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("request %d: status %d, want %d", i, resp.StatusCode, want)
		}
	}
	// A request from a clock off by more than ClockSkew.
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", sign(token, http.MethodGet, PathInfo, time.Now().Add(-ClockSkew-time.Minute), newNonce(), nil))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("stale request: %v %v, want 401", resp, err)
	}
	// The signature covers the body: a changed body is refused.
	body := []byte(`{"host":"127.0.0.1","port":` + strconv.Itoa(dataPort(a)) + `,"seconds":1,"streams":1}`)
	req, _ = http.NewRequest(http.MethodPost, "http://"+c.Addr+PathTest, bytes.NewReader(bytes.Replace(body, []byte(`"streams":1`), []byte(`"streams":9`), 1)))
	req.Header.Set("Authorization", sign(token, http.MethodPost, PathTest, time.Now(), newNonce(), body))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("changed body: %v %v, want 401", resp, err)
	}

	for _, tc := range []struct {
		req  TestRequest
		want string
	}{
		{TestRequest{Port: 5201, Seconds: 1, Streams: 1}, "no host to test to"},
		{TestRequest{Host: "127.0.0.1", Port: 0, Seconds: 1, Streams: 1}, "port 0: must be 1 to 65535"},
		{TestRequest{Host: "127.0.0.1", Port: 5201, Seconds: 0.5, Streams: 1}, "seconds 0.5: must be 1 to 3600"},
		{TestRequest{Host: "127.0.0.1", Port: 5201, Seconds: 1, Streams: 0}, "streams 0: must be 1 to 128"},
		{TestRequest{Host: "127.0.0.1", Port: 5201, Seconds: 1, Streams: 1, StartAt: time.Now().Add(2 * MaxStartWait)}, "more than 1m0s ahead"},
	} {
		_, err := c.Test(ctx, tc.req)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error with %q", tc.req, err, tc.want)
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
	if r.Bytes == 0 || r.Seconds < 0.9 || r.Seconds > 1.5 {
		t.Errorf("TCP: %d bytes in %.2f s, want some bytes in about 1 s", r.Bytes, r.Seconds)
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
	// The sender is paced at rate: what arrived is at most that (and a
	// datagram), and loopback loses little of it.
	sent := float64(r.Bytes) / (1 - r.Loss)
	if want := rate / 8.0 * r.Seconds; sent > want*1.02+1000 || sent < want*0.9 {
		t.Errorf("UDP: %0.f bytes sent (%d received, loss %.4f) in %.2f s, want %.0f at %d bit/s", sent, r.Bytes, r.Loss, r.Seconds, want, rate)
	}
}

// TestBusy: the agent runs at most MaxTests tests at once (429), and a
// server that is busy says so in the reply (Busy), for the mesh to retry.
func TestBusy(t *testing.T) {
	started := make(chan struct{}, 4)
	a, c := start(t, func(cfg *Config) {
		cfg.MaxTests = 2
		cfg.Server.MaxClients = 1
		cfg.Server.OnStart = func(*control.Result) { started <- struct{}{} }
	})
	ctx := context.Background()
	req := TestRequest{Host: "127.0.0.1", Port: dataPort(a), Seconds: 3, Streams: 1}
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
	second, err := c.Test(ctx, TestRequest{Host: "127.0.0.1", Port: dataPort(a), Seconds: 1, Streams: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !second.Busy || second.Err != control.ErrBusy.Error() {
		t.Errorf("second test while the server runs one: %+v, want Busy with %q", second, control.ErrBusy)
	}

	// The agent's own limit: two tests of its own at once. The second
	// waits for its start time, so it holds its slot for a while.
	wg.Add(1)
	waiting := make(chan struct{})
	go func() {
		defer wg.Done()
		close(waiting)
		c.Test(ctx, TestRequest{Host: "127.0.0.1", Port: dataPort(a), Seconds: 1, Streams: 1, StartAt: time.Now().Add(1500 * time.Millisecond)})
	}()
	<-waiting
	deadline := time.Now().Add(time.Second)
	var refused error
	for time.Now().Before(deadline) && refused == nil {
		if len(a.slots) == 2 {
			_, refused = c.Test(ctx, req)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if refused == nil || !strings.HasSuffix(refused.Error(), "the agent runs 2 tests already (its most at once)") {
		t.Errorf("third test: %v, want the agent's refusal", refused)
	}
	wg.Wait()
	if first == nil || first.Err != "" {
		t.Errorf("first test: %+v", first)
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
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
	if _, err := net.Dial("tcp", a.ControlAddr().String()); err == nil {
		t.Error("the control port still accepts")
	}
}
