package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blastnet/blast/control/render"
	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/internal/clock"
	"github.com/blastnet/blast/internal/testkit"
)

// The server as a service: its limits (--server-max-duration,
// --server-bitrate-limit, --rcv-timeout, --idle-timeout), --bind-dev,
// -p 0, shutting down, and the console. Each runs against a real client:
// blast's (Run) or Debian's iperf3 on 127.0.0.1.

// ierrno is the iperf3 error number a client got from the server (0:
// none).
func ierrno(err error) int32 {
	var se wire.ServerErrorCode
	if errors.As(err, &se) {
		return se.Ierrno
	}
	return 0
}

// runMay runs a blast client that may fail.
func runMay(t *testing.T, cfg Config) (*result.Result, error) {
	t.Helper()
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	cfg.NoNIC = true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return Run(ctx, cfg)
}

func TestServerPortZero(t *testing.T) {
	srv, err := Listen(ServerConfig{Bind: "127.0.0.1", Port: 0, OneOff: true, NoNIC: true})
	if err != nil {
		t.Fatal(err)
	}
	port := srv.Addr().(*net.TCPAddr).Port
	if port == 0 || port == wire.DefaultPort {
		t.Fatalf("Port 0 listens on port %d, want a free one", port)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background()) }()
	runClient(t, Config{Port: port, Bytes: 1 << 20, UDP: true, Rate: 10e6, RateSet: true, NoNIC: true})
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

func TestServerMaxDuration(t *testing.T) {
	_, port, log := blastServer(t, ServerConfig{MaxDuration: 2 * time.Second, Interval: 0, NoNIC: true})
	for i, tc := range []struct {
		name   string
		cfg    Config
		refuse bool
	}{
		{"-t 1", Config{Duration: time.Second}, false},
		{"-t 2", Config{Duration: 2 * time.Second}, false},
		{"-t 3", Config{Duration: 3 * time.Second}, true},
		{"-t 1 -O 2", Config{Duration: time.Second, Omit: 2 * time.Second}, true},
		{"-n 1M", Config{Bytes: 1 << 20}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Port = port
			_, err := runMay(t, tc.cfg)
			switch {
			case tc.refuse && ierrno(err) != wire.IEMaxDuration:
				t.Fatalf("client error %v, want iperf3's error 37 (IEMAXSERVERTESTDURATIONEXCEEDED)", err)
			case tc.refuse && !strings.Contains(err.Error(), "maximum permitted limit"):
				t.Errorf("client error %q does not say what iperf3 says", err)
			case !tc.refuse && err != nil:
				t.Fatalf("refused: %v", err)
			}
			r := log.wait(t, i+1)[i]
			if tc.refuse != (r.Err != nil) || (tc.refuse && !strings.Contains(r.Err.Error(), "--server-max-duration 2")) {
				t.Errorf("server: %v", r.Err)
			}
		})
	}
	t.Run("iperf3", func(t *testing.T) {
		d := iperf3ClientMay(t, port, "-t", "3")
		if d.Error == "" {
			t.Fatal("iperf3 -t 3 ran against --server-max-duration 2")
		}
		if !strings.Contains(d.Error, "37") && !strings.Contains(d.Error, "maximum") {
			t.Errorf("iperf3 says %q, want error 37", d.Error)
		}
		iperf3Client(t, port, "-t", "1")
	})
}

func TestServerBitrateLimitAsked(t *testing.T) {
	_, port, log := blastServer(t, ServerConfig{RateLimit: RateLimit{Bits: 30e6}, Interval: 0, NoNIC: true})
	udp := func(rate float64, p int) Config {
		return Config{Port: port, UDP: true, Rate: rate, RateSet: true, Parallel: p, Duration: time.Second}
	}
	if _, err := runMay(t, udp(20e6, 2)); ierrno(err) != wire.IETotalRate {
		t.Errorf("-u -b 20M -P 2 against a 30M limit: %v, want iperf3's error 27 (IETOTALRATE)", err)
	} else if !strings.Contains(err.Error(), "larger than server limit") {
		t.Errorf("client error %q does not say what iperf3 says", err)
	}
	if r := log.wait(t, 1)[0]; r.Err == nil || !strings.Contains(r.Err.Error(), "40.0 Mbits/sec in total") {
		t.Errorf("server: %v", r.Err)
	}
	if _, err := runMay(t, Config{Port: port, FQRate: 40e6, Duration: time.Second}); ierrno(err) != wire.IETotalRate {
		t.Errorf("--fq-rate 40M against a 30M limit: %v, want error 27", err)
	}
	if _, err := runMay(t, udp(10e6, 2)); err != nil {
		t.Errorf("-u -b 10M -P 2 against a 30M limit: %v", err)
	}
	d := iperf3ClientMay(t, port, "-u", "-b", "50M", "-t", "1")
	if !strings.Contains(d.Error, "larger than server limit") {
		t.Errorf("iperf3 -u -b 50M against a 30M limit: %q, want error 27", d.Error)
	}
}

// A test that runs over the limit is ended (iperf3: once its average over
// the period is known); a paced one under it runs to its end.
func TestServerBitrateLimitRunning(t *testing.T) {
	_, port, log := blastServer(t, ServerConfig{RateLimit: RateLimit{Bits: 200e6, Window: time.Second}, Interval: 0, NoNIC: true})
	// Ended by the server (error 27), not at its end: a test that ran
	// its 8 s would have succeeded.
	r, err := runMay(t, Config{Port: port, Duration: 8 * time.Second})
	if ierrno(err) != wire.IETotalRate {
		t.Fatalf("an unpaced TCP test against a 200M limit: %v, want iperf3's error 27 (IETOTALRATE)", err)
	}
	if r == nil || len(r.Streams) == 0 || r.Streams[0].Bytes == 0 {
		t.Errorf("the client has no partial results: %+v", r)
	}
	if sr := log.wait(t, 1)[0]; sr.Err == nil || !strings.Contains(sr.Err.Error(), "over --server-bitrate-limit") {
		t.Errorf("server: %v", sr.Err)
	}
	// -R: the server's own sending counts too.
	if _, err := runMay(t, Config{Port: port, Reverse: true, Duration: 8 * time.Second}); ierrno(err) != wire.IETotalRate {
		t.Errorf("-R against a 200M limit: %v, want error 27", err)
	}
	if _, err := runMay(t, Config{Port: port, Rate: 50e6, RateSet: true, Bidir: true, Duration: 2 * time.Second}); err != nil {
		t.Errorf("--bidir -b 50M against a 200M limit: %v", err)
	}
	d := iperf3ClientMay(t, port, "-t", "8")
	if !strings.Contains(d.Error, "larger than server limit") {
		t.Errorf("iperf3 -t 8 (unpaced) against a 200M limit: %q, want error 27", d.Error)
	}
}

// All tests together: a test whose asked-for rate would take the sum
// over the limit is refused while the first runs.
func TestServerBitrateLimitTogether(t *testing.T) {
	_, port, _ := blastServer(t, ServerConfig{RateLimit: RateLimit{Bits: 30e6}, Interval: 0, NoNIC: true})
	started := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := runMay(t, Config{Port: port, UDP: true, Rate: 20e6, RateSet: true, Duration: 3 * time.Second,
			OnStart: func(*result.Result) { close(started) }})
		first <- err
	}()
	select {
	case <-started:
	case err := <-first:
		t.Fatalf("first test: %v", err)
	}
	if _, err := runMay(t, Config{Port: port, UDP: true, Rate: 20e6, RateSet: true, Duration: time.Second}); ierrno(err) != wire.IETotalRate {
		t.Errorf("a second -b 20M test beside one of 20M, 30M limit: %v, want error 27", err)
	} else if !strings.Contains(err.Error(), "larger than server limit") {
		t.Errorf("client error %q", err)
	}
	if err := <-first; err != nil {
		t.Errorf("first test: %v", err)
	}
}

// The meter's rules, on counters it is fed.
func TestRateMeterCheck(t *testing.T) {
	const limit = 8e6 // 1 MB/s
	type fake struct {
		mt    *meteredTest
		bytes int64
	}
	newTest := func(m *rateMeter) *fake {
		f := &fake{}
		mt, err := m.admit(&result.Result{}, &wire.Params{Parallel: 1})
		if err != nil {
			t.Fatal(err)
		}
		m.running(mt, func() int64 { return f.bytes })
		f.mt = mt
		return f
	}
	ended := func(f *fake) bool {
		select {
		case a := <-f.mt.abort:
			if a.code != wire.IETotalRate {
				t.Errorf("abort code %d, want 27", a.code)
			}
			return true
		default:
			return false
		}
	}

	t.Run("per test, over the period", func(t *testing.T) {
		m := newRateMeter(RateLimit{Bits: limit, Window: 3 * time.Second}, nil)
		a := newTest(m)
		// 2 MB in the first second, then nothing: 0.67 MB/s over 3 s.
		for _, add := range []int64{2e6, 0, 0, 0} {
			a.bytes += add
			m.check()
			if ended(a) {
				t.Fatalf("ended at %d bytes, under the limit averaged over 3 s", a.bytes)
			}
		}
		for _, add := range []int64{1.5e6, 1.5e6} {
			a.bytes += add
			m.check()
		}
		if ended(a) {
			t.Fatal("3 MB in the last 3 s, 1 MB/s: at the limit, not over it, and ended")
		}
		a.bytes += 1.6e6
		m.check()
		if !ended(a) {
			t.Error("4.6 MB in the last 3 s did not end the test")
		}
	})
	t.Run("not before the period has passed", func(t *testing.T) {
		m := newRateMeter(RateLimit{Bits: limit, Window: 3 * time.Second}, nil)
		a := newTest(m)
		a.bytes = 2.5e6 // over 3 s: under; alone, a second of 2.5 MB/s
		m.check()
		m.check()
		if ended(a) {
			t.Error("ended before its average over the period was known")
		}
	})
	t.Run("together, the newest ends", func(t *testing.T) {
		m := newRateMeter(RateLimit{Bits: limit, Window: time.Second}, nil)
		a, b, c := newTest(m), newTest(m), newTest(m)
		a.bytes, b.bytes, c.bytes = 0.6e6, 0.3e6, 0.3e6 // 1.2 MB/s together
		m.check()
		if ended(a) || ended(b) || !ended(c) {
			t.Fatal("want only the newest ended")
		}
		m.remove(c.mt)
		a.bytes, b.bytes = 1.2e6, 0.6e6 // 0.9 MB/s together now
		m.check()
		if ended(a) || ended(b) {
			t.Error("ended although the rest fit under the limit")
		}
	})
	t.Run("asked for", func(t *testing.T) {
		m := newRateMeter(RateLimit{Bits: limit}, nil)
		if _, err := m.admit(&result.Result{}, &wire.Params{Parallel: 2, Bidirectional: true, Bandwidth: 3e6}); err == nil {
			t.Error("admitted 2 streams each way of 3M against 8M")
		}
		x, err := m.admit(&result.Result{}, &wire.Params{Parallel: 1, Bandwidth: 5e6})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.admit(&result.Result{}, &wire.Params{Parallel: 1, FQRate: 4e6}); err == nil {
			t.Error("admitted 4M beside 5M against 8M")
		}
		m.remove(x)
		if _, err := m.admit(&result.Result{}, &wire.Params{Parallel: 1, FQRate: 4e6}); err != nil {
			t.Errorf("refused 4M alone: %v", err)
		}
	})
}

func TestParseRateLimit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want RateLimit
		bad  bool
	}{
		{in: "100M", want: RateLimit{100e6, 5 * time.Second}},
		{in: "1g/10", want: RateLimit{1e9, 10 * time.Second}},
		{in: "2.5K/0.5", want: RateLimit{2500, 500 * time.Millisecond}},
		{in: "0", want: RateLimit{0, 5 * time.Second}},
		{in: "fast", bad: true},
		{in: "", bad: true},
		{in: "/5", bad: true},
		{in: "1G/0", bad: true},
		{in: "1G/61", bad: true},
		{in: "1G/x", bad: true},
		{in: "1G/5/5", bad: true},
		{in: "-1M", bad: true},
	} {
		got, err := ParseRateLimit(tc.in)
		switch {
		case tc.bad && err == nil:
			t.Errorf("ParseRateLimit(%q) = %v, want an error", tc.in, got)
		case tc.bad && !strings.Contains(err.Error(), "100M"):
			t.Errorf("ParseRateLimit(%q): %v does not show what to write", tc.in, err)
		case !tc.bad && (err != nil || got != tc.want):
			t.Errorf("ParseRateLimit(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// A sender slower than --rcv-timeout: the server ends its test with
// iperf3's IENOMSG. The server's checks run on a fake clock, one at a
// time: the test ends at the first check 300 ms of the clock's time after
// the last byte came.
func TestServerRcvTimeout(t *testing.T) {
	fake := clock.NewFake()
	started := make(chan struct{})
	_, port, log := blastServer(t, ServerConfig{RcvTimeout: 300 * time.Millisecond, Interval: 0, NoNIC: true, Clock: fake,
		OnStart: func(*result.Result) { close(started) }})
	// 100-byte blocks at 1 kbit/s: one block each 0.8 s.
	slow := Config{Port: port, Rate: 1000, RateSet: true, BlockLen: 100, Duration: 5 * time.Second}
	ended := make(chan error, 1)
	go func() {
		_, err := runMay(t, slow)
		ended <- err
	}()
	// From here the server's only timer is its check of the test.
	waitClosed(t, started, "the test's streams")
	r := stepUntilResult(t, fake, log, 150*time.Millisecond)
	if want := "idle timeout for receiving data: nothing from the client for 300ms (--rcv-timeout 300 ms): its sender stalled, or it is gone"; r.Err == nil || r.Err.Error() != want {
		t.Errorf("server: %v\nwant %s", r.Err, want)
	}
	if err := <-ended; ierrno(err) != wire.IENoMsg || !strings.Contains(err.Error(), "idle timeout for receiving data") {
		t.Errorf("a stalled sender: %v, want iperf3's error 144 (IENOMSG)", err)
	}

	// On the real clock: a server that only sends waits for nothing, and
	// iperf3's client is told as blast's.
	_, port, _ = blastServer(t, ServerConfig{RcvTimeout: 300 * time.Millisecond, Interval: 0, NoNIC: true})
	slow.Port, slow.Reverse, slow.Duration = port, true, 2*time.Second
	if _, err := runMay(t, slow); err != nil {
		t.Errorf("-R at 1 kbit/s: %v", err)
	}
	d := iperf3ClientMay(t, port, "-t", "5", "-b", "1k", "-l", "100")
	if !strings.Contains(d.Error, "idle timeout for receiving data") {
		t.Errorf("iperf3 at 1 kbit/s: %q, want error 144", d.Error)
	}
}

// IdleTimeout on a fake clock: a one-off server nobody connects to ends
// exactly when it has passed.
func TestServerIdleTimeoutOneOff(t *testing.T) {
	fake := clock.NewFake()
	srv, err := Listen(ServerConfig{Bind: "127.0.0.1", Port: 0, OneOff: true, IdleTimeout: 300 * time.Millisecond, NoNIC: true, Clock: fake})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background()) }()
	waitClosed(t, fake.Armed(1), "the server's idle timer")
	if due, _ := fake.Next(); due != clock.Epoch.Add(300*time.Millisecond) {
		t.Errorf("the idle timer is due at %v, want 300ms after the start", due.Sub(clock.Epoch))
	}
	fake.Advance(299 * time.Millisecond)
	select {
	case err := <-served:
		t.Fatalf("the server ended before its idle timeout: %v", err)
	default:
	}
	fake.Advance(time.Millisecond)
	select {
	case err := <-served:
		if want := "idle timeout: no client connected within 300ms (--idle-timeout)"; !errors.Is(err, ErrIdle) || err.Error() != want {
			t.Errorf("a one-off server nobody connects to: %v, want %s", err, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the one-off server did not end at its idle timeout")
	}

	// A test longer than the idle timeout is served whole, then Serve
	// returns as -1 does.
	fake = clock.NewFake()
	started := make(chan struct{})
	srv, err = Listen(ServerConfig{Bind: "127.0.0.1", Port: 0, OneOff: true, IdleTimeout: 500 * time.Millisecond, NoNIC: true, Clock: fake,
		OnStart: func(*result.Result) { close(started) }})
	if err != nil {
		t.Fatal(err)
	}
	go func() { served <- srv.Serve(context.Background()) }()
	go func() {
		// While the test runs, twice the idle timeout passes.
		<-started
		fake.Advance(time.Second)
	}()
	runClient(t, Config{Port: srv.Addr().(*net.TCPAddr).Port, Duration: time.Second, NoNIC: true})
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("one-off server after its test: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the one-off server did not end after its test")
	}
}

// Without -1, an idle server restarts its idle state: it closes its UDP
// port, and the next UDP test opens it again. On a fake clock: the restart
// comes when the idle timeout has passed since the last test ended.
func TestServerIdleRestart(t *testing.T) {
	fake := clock.NewFake()
	restarts := make(chan string, 10)
	srv, port, log := blastServer(t, ServerConfig{IdleTimeout: 300 * time.Millisecond, Interval: 0, NoNIC: true, Clock: fake,
		Trace: func(r *result.Result, line string) {
			if r == nil && strings.Contains(line, "Server restart") {
				restarts <- line
			}
		}})
	udp := Config{Port: port, UDP: true, Rate: 10e6, RateSet: true, Duration: time.Second}
	runClient(t, udp)
	// The test is over: the idle timer is the server's only one.
	log.wait(t, 1)
	waitClosed(t, fake.Armed(1), "the server's idle timer")
	fake.Advance(299 * time.Millisecond)
	select {
	case line := <-restarts:
		t.Fatalf("a restart before the idle timeout: %q", line)
	default:
	}
	fake.Advance(time.Millisecond)
	select {
	case line := <-restarts:
		if want := "Server restart (#1) in idle state as no connection request was received for 0.3 sec"; line != want {
			t.Errorf("restart line %q, want %q", line, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no idle restart")
	}
	srv.udpMu.Lock()
	gate := srv.udp
	srv.udpMu.Unlock()
	if gate != nil {
		t.Error("the UDP port is still open after the idle restart")
	}
	runClient(t, udp)
	runClient(t, Config{Port: port, Bytes: 1 << 20})
}

// Shutting down: running tests are told SERVER_TERMINATE, and their
// clients (blast's and iperf3) print what they measured and say so.
func TestServerShutdownRunning(t *testing.T) {
	needIperf3(t)
	var mu sync.Mutex
	var results []*result.Result
	moving := map[*result.Result]bool{} // tests that moved bytes
	srv, err := Listen(ServerConfig{Bind: "127.0.0.1", Port: 0, Interval: 100 * time.Millisecond, NoNIC: true,
		OnInterval: func(r *result.Result, iv *result.Interval) {
			mu.Lock()
			defer mu.Unlock()
			for _, st := range iv.Streams {
				if st.Bytes > 0 {
					moving[r] = true
				}
			}
		},
		OnResult: func(r *result.Result) { mu.Lock(); results = append(results, r); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	port := srv.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()

	started := make(chan struct{})
	type out struct {
		r   *result.Result
		err error
	}
	blast := make(chan out, 1)
	go func() {
		r, err := runMay(t, Config{Port: port, Duration: 20 * time.Second, Interval: 200 * time.Millisecond,
			OnStart: func(*result.Result) { close(started) }})
		blast <- out{r, err}
	}()
	iperf := make(chan *iperfJSON, 1)
	go func() { iperf <- iperf3ClientMay(t, port, "-t", "20", "-R") }()
	<-started
	testkit.WaitFor(t, 30*time.Second, "both tests moving bytes", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(moving) == 2
	})
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Serve did not return after the cancel")
	}
	b := <-blast
	if b.err == nil || !strings.Contains(b.err.Error(), "the server has terminated") {
		t.Errorf("blast client: %v, want the server has terminated", b.err)
	}
	if b.r == nil || len(b.r.Streams) != 1 || b.r.Streams[0].Bytes == 0 {
		t.Errorf("blast client: no partial results: %+v", b.r)
	}
	d := <-iperf
	if !strings.Contains(d.Error, "the server has terminated") {
		t.Errorf("iperf3 client: %q, want the server has terminated", d.Error)
	}
	if len(d.End.Streams) == 0 || d.End.Streams[0].Receiver.Bytes == 0 {
		t.Errorf("iperf3 client: no partial results: %+v", d.End)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(results) != 2 {
		t.Fatalf("%d results, want 2", len(results))
	}
	for _, r := range results {
		if !errors.Is(r.Err, ErrShutdown) || len(r.Streams) == 0 || r.Streams[0].Bytes == 0 {
			t.Errorf("server result: err %v, streams %v", r.Err, r.Streams)
		}
	}
}

// Shutting down: a test being set up is told SERVER_TERMINATE; a test
// whose client sent TEST_END gets its results.
func TestServerShutdownResults(t *testing.T) {
	srv, err := Listen(ServerConfig{Bind: "127.0.0.1", Port: 0, Interval: 0, NoNIC: true})
	if err != nil {
		t.Fatal(err)
	}
	addr, port := srv.Addr().String(), srv.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()

	setup := dialRaw(t, port)
	setup.expect(wire.ParamExchange)

	done := dialRaw(t, port)
	done.expect(wire.ParamExchange)
	if err := wire.WriteJSON(done.ctrl, &wire.Params{TCP: true, Time: 1, Parallel: 1, Len: 4096, ClientVersion: "3.12"}); err != nil {
		t.Fatal(err)
	}
	done.expect(wire.CreateStreams)
	data := done.stream()
	done.expect(wire.TestStart, wire.TestRunning)
	data.Write(make([]byte, 64<<10))
	wire.WriteState(done.ctrl, wire.TestEnd)
	done.expect(wire.ExchangeResults)

	cancel()
	// The listener closes once the server has taken the cancellation in.
	testkit.WaitFor(t, 30*time.Second, "the server to stop listening", func() bool {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return true
		}
		c.Close()
		return false
	})
	setup.expect(wire.ServerTerminate)

	mine := `{"cpu_util_total":1,"cpu_util_user":0.5,"cpu_util_system":0.5,"sender_has_retransmits":0,` +
		`"streams":[{"id":1,"bytes":65536,"retransmits":0,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":1}]}`
	if err := wire.WriteJSON(done.ctrl, json.RawMessage(mine)); err != nil {
		t.Fatal(err)
	}
	b, err := wire.ReadFrame(done.ctrl, wire.MaxResultsJSON)
	if err != nil {
		t.Fatalf("no results from a server shutting down: %v", err)
	}
	pr, err := wire.DecodeResults(b)
	if err != nil || len(pr.Streams) != 1 || pr.Streams[0].Bytes != 64<<10 {
		t.Errorf("server results %s (%v), want 64 KiB received", b, err)
	}
	done.expect(wire.DisplayResults)
	wire.WriteState(done.ctrl, wire.IperfDone)
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
}

// consoleServer serves on a free port with a Console writing to out.
func consoleServer(t *testing.T, o ConsoleOptions, cfg ServerConfig) (int, *testkit.SyncBuffer, func()) {
	t.Helper()
	out := &testkit.SyncBuffer{}
	cfg.Bind, cfg.Port, cfg.NoNIC = "127.0.0.1", 0, true
	if o.MaxClients == 0 {
		o.MaxClients = 8
	}
	cfg.MaxClients = o.MaxClients
	c := NewConsole(out, o)
	c.Attach(&cfg)
	srv, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Listening(srv.Addr())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}
	t.Cleanup(func() {
		select {
		case <-ctx.Done():
		default:
			stop()
		}
	})
	return srv.Addr().(*net.TCPAddr).Port, out, stop
}

// One test alone prints what iperf3 -s prints, untagged.
func TestConsoleOneTest(t *testing.T) {
	port, out, stop := consoleServer(t, ConsoleOptions{}, ServerConfig{Interval: 500 * time.Millisecond})
	runClient(t, Config{Port: port, Duration: time.Second, Parallel: 2})
	stop()
	got := out.String()
	want := []string{
		`^-{59}$`,
		`^Server listening on 127\.0\.0\.1:` + strconv.Itoa(port) + ` \(up to 8 tests at once\)$`,
		`^-{59}$`,
		`^Accepted connection from 127\.0\.0\.1, port \d+$`,
		`^\[ *\d+\] local 127\.0\.0\.1 port \d+ connected to 127\.0\.0\.1 port \d+$`,
		`^\[ *\d+\] local 127\.0\.0\.1 port \d+ connected to 127\.0\.0\.1 port \d+$`,
		`^\[ ID\] Interval +Transfer +Bitrate`,
	}
	lines := strings.Split(got, "\n")
	for i, re := range want {
		if i >= len(lines) || !regexp.MustCompile(re).MatchString(lines[i]) {
			t.Fatalf("line %d does not match %s:\n%s", i+1, re, got)
		}
	}
	// The first interval ends when its counts were read: at 0.50 s, or
	// later on a busy host.
	if !regexp.MustCompile(`\[SUM\]   0\.00-\d+\.\d\d +sec`).MatchString(got) {
		t.Errorf("no [SUM] line of the first interval in:\n%s", got)
	}
	for _, s := range []string{"receiver\n", "Server listening on 127.0.0.1:" + strconv.Itoa(port) + " (test #2)"} {
		if !strings.Contains(got, s) {
			t.Errorf("no %q in:\n%s", s, got)
		}
	}
	if strings.Contains(got, "#1: ") || strings.Contains(got, "Backend:") {
		t.Errorf("a lone test is tagged, or has -V lines:\n%s", got)
	}
}

// firstTick is the first interval of a test with -i 0.2: its end is
// when the counts were read, at 0.20 s or later on a busy host.
var firstTick = regexp.MustCompile(`\b0\.00-\d+\.\d\d +sec`)

// Tests at the same time: each line of a test running beside another
// carries its number, from the moment it has company.
func TestConsoleTwoTests(t *testing.T) {
	port, out, stop := consoleServer(t, ConsoleOptions{MaxClients: 2}, ServerConfig{Interval: 200 * time.Millisecond})
	started := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := runMay(t, Config{Port: port, Duration: 3 * time.Second, Interval: time.Second, OnStart: func(*result.Result) { close(started) }})
		first <- err
	}()
	<-started
	testkit.WaitFor(t, 30*time.Second, "the first test's first interval", func() bool { return firstTick.MatchString(out.String()) })
	runClient(t, Config{Port: port, Duration: time.Second, UDP: true, Rate: 10e6, RateSet: true})
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	stop()
	got := out.String()
	var seen1, seen2, untagged1 bool
	for _, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "#1: "):
			seen1 = true
		case strings.HasPrefix(line, "#2: "):
			seen2 = true
		case seen1:
			// Once tagged, test 1 stays tagged: only the banner and the
			// server's own lines are not.
			if !strings.HasPrefix(line, "-") && !strings.HasPrefix(line, "Server listening") {
				t.Errorf("untagged line after the tests overlapped: %q", line)
			}
		case strings.HasPrefix(line, "Accepted") || strings.HasPrefix(line, "[  "):
			untagged1 = true
		}
	}
	if !seen1 || !seen2 || !untagged1 {
		t.Errorf("want test 1 untagged alone, then #1: and #2: lines:\n%s", got)
	}
	if !regexp.MustCompile(`(?m)^#2: Accepted connection from 127\.0\.0\.1, port \d+$`).MatchString(got) ||
		!regexp.MustCompile(`(?m)^#2: \[ ID\] Interval .*Jitter`).MatchString(got) ||
		!regexp.MustCompile(`(?m)^#1: \[ *\d+\] +0\.00-3\.\d\d +sec .* receiver$`).MatchString(got) {
		t.Errorf("tagged lines missing:\n%s", got)
	}
}

// -V, -d, and the refusal of a client too many.
func TestConsoleVerboseDebug(t *testing.T) {
	port, out, stop := consoleServer(t, ConsoleOptions{MaxClients: 1, Debug: true, Text: render.Text{Verbose: true}}, ServerConfig{Interval: time.Second})
	started := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := runMay(t, Config{Port: port, Duration: 2 * time.Second, OnStart: func(*result.Result) { close(started) }})
		first <- err
	}()
	<-started
	if _, err := runMay(t, Config{Port: port, Bytes: 1 << 20}); !errors.Is(err, wire.ErrBusy) {
		t.Errorf("a second client beside --max-clients 1: %v", err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	stop()
	got := out.String()
	how := `locked thread\(s\)`
	if os.Getenv("BLAST_THREADS") == "free" {
		how = `free flow\(s\) \(unlocked goroutines in raw calls\)`
	}
	for _, re := range []string{
		`(?m)^` + regexp.QuoteMeta(result.Version) + `$`,
		`(?m)^Time: \w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT$`,
		`(?m)^      Cookie: [a-z2-7]{36}$`,
		`(?m)^      TCP MSS: \d+ \(default\)$`,
		`(?m)^Starting Test: protocol: TCP, 1 streams, 131072 byte blocks, omitting 0 seconds, 2 second test, tos 0$`,
		`(?m)^Test Complete\. Summary Results:$`,
		`(?m)^Backend: local readwrite, remote readwrite$`,
		// The server's stream is readwrite's: on a locked thread unless
		// BLAST_THREADS=free asks it free (engine v3), and the client's
		// results carry the peer's thread.
		`(?m)^Threads: local 1 ` + how + `, CPU \d+% of a core each on average, [\d.]+ voluntary and [\d.]+ involuntary context switches per 10 ms$`,
		`(?m)^Threads: remote 1 ` + how + `, `,
		// Each side's stop-the-world pauses over the test (a test of 2 s
		// may have none: the count is what is asserted to be there).
		`(?m)^Pauses: local \d+ stop-the-world pauses, [\d.]+ ms in all, p99 at most [\d.]+ ms, the longest at most [\d.]+ ms$`,
		`(?m)^Pauses: remote \d+ stop-the-world pauses`,
		`(?m)^State change: State set to 9-PARAM_EXCHANGE \(from 15-IPERF_START\)$`,
		`(?m)^get_parameters: \{.*"time":2`,
		`(?m)^State change: server received and changed State to 4-TEST_END$`,
		`(?m)^State change: server received and changed State to 16-IPERF_DONE$`,
		`(?m)^Refused connection from 127\.0\.0\.1, port \d+: the server is busy \(1 tests running, --max-clients 1\)$`,
	} {
		if !regexp.MustCompile(re).MatchString(got) {
			t.Errorf("no line matches %s in:\n%s", re, got)
		}
	}
}

// -J: each test's document, on a line of its own.
func TestConsoleJSON(t *testing.T) {
	port, out, stop := consoleServer(t, ConsoleOptions{JSON: true}, ServerConfig{Interval: time.Second, MaxDuration: 5 * time.Second})
	runClient(t, Config{Port: port, Duration: time.Second})
	if _, err := runMay(t, Config{Port: port, Duration: 10 * time.Second}); err == nil {
		t.Error("a test over --server-max-duration ran")
	}
	runClient(t, Config{Port: port, Reverse: true, Duration: time.Second})
	stop()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3 (one a test):\n%s", len(lines), out.String())
	}
	// A test's line comes when the server is done with it, which may be
	// after the client has gone on to the next.
	errs := 0
	for i, line := range lines {
		var d iperfJSON
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("line %d: %v: %s", i+1, err, line)
		}
		if d.Error != "" {
			errs++
			if !strings.Contains(d.Error, "--server-max-duration") {
				t.Errorf("line %d: error %q", i+1, d.Error)
			}
		} else if d.End.Sum == nil && d.End.SumReceived == nil {
			t.Errorf("line %d has no end: %s", i+1, line)
		}
	}
	if errs != 1 {
		t.Errorf("%d documents with an error, want 1", errs)
	}
}

// goroutines waits until no more goroutines run than want, and fails
// the test with their stacks if that does not happen.
func goroutinesBack(t *testing.T, want int) {
	t.Helper()
	if !testkit.Eventually(30*time.Second, func() bool { return runtime.NumGoroutine() <= want }) {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), want, buf[:runtime.Stack(buf, true)])
	}
}

// Nothing outlives a server with every service option on, nor the tests
// it refused, aborted, or ended by shutting down.
func TestServerServiceNoLeaks(t *testing.T) {
	openFDs := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	// Warm up what lasts (the runtime's descriptors, the engine's).
	_, port, _ := blastServer(t, ServerConfig{Interval: 0, NoNIC: true})
	runClient(t, Config{Port: port, Bytes: 1 << 20})
	runClient(t, Config{Port: port, UDP: true, Rate: 1e6, RateSet: true, Bytes: 64 << 10})
	runtime.GC()
	goroutinesBefore, fdsBefore := runtime.NumGoroutine(), openFDs()

	out := &testkit.SyncBuffer{}
	cfg := ServerConfig{Bind: "127.0.0.1", Port: 0, NoNIC: true, Interval: 100 * time.Millisecond,
		RateLimit: RateLimit{Bits: 500e6, Window: time.Second}, MaxDuration: 5 * time.Second,
		RcvTimeout: time.Second, IdleTimeout: 200 * time.Millisecond}
	c := NewConsole(out, ConsoleOptions{Debug: true, Text: render.Text{Verbose: true}, MaxClients: 8})
	c.Attach(&cfg)
	srv, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Listening(srv.Addr())
	port = srv.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	for i, tc := range []struct {
		cfg  Config
		fail bool
	}{
		{Config{Bytes: 4 << 20}, true}, // no time limit: refused
		{Config{Duration: time.Second, Rate: 100e6, RateSet: true, Parallel: 2}, false},
		{Config{Duration: 4 * time.Second}, true}, // unpaced: over the limit
		// Stalls: one 100-byte block each 8 s, and --rcv-timeout 1 s
		// (long enough that a busy host's pause in the others is not
		// taken for a stall), which ends it within 2 s of its 5.
		{Config{Duration: 5 * time.Second, Rate: 100, RateSet: true, BlockLen: 100}, true},
		{Config{Duration: time.Second, UDP: true, Rate: 50e6, RateSet: true, Bidir: true}, false},
		{Config{Duration: 10 * time.Second}, true}, // too long
	} {
		tc.cfg.Port = port
		if _, err := runMay(t, tc.cfg); (err != nil) != tc.fail {
			t.Errorf("test %d: %v", i+1, err)
		}
	}
	started := make(chan struct{})
	last := make(chan error, 1)
	go func() {
		_, err := runMay(t, Config{Port: port, Duration: 5 * time.Second, Rate: 10e6, RateSet: true, OnStart: func(*result.Result) { close(started) }})
		last <- err
	}()
	<-started
	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if err := <-last; err == nil {
		t.Error("the test running when the server stopped succeeded")
	}
	goroutinesBack(t, goroutinesBefore)
	// More open than before is a leak. Fewer is not: the warm-up
	// server may still have held its last connection when they were
	// counted (make test once saw 14 before, 13 after).
	if after := openFDs(); after > fdsBefore {
		t.Errorf("%d descriptors open, %d before", after, fdsBefore)
	}
	if t.Failed() {
		fmt.Println(out.String())
	}
}
