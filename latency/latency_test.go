package latency

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blastnet/blast/internal/testkit"
)

// startServer runs blast's own server on a free loopback port until the
// test ends; the channel is closed when Serve returns (with once, after
// the first client), and *serveErr holds what it returned.
func startServer(t *testing.T, once bool) (port int, served <-chan struct{}, serveErr *error) {
	t.Helper()
	var log syncWriter
	s, err := Listen(Config{Server: true, Once: once, Bind: "127.0.0.1", Sock: Defaults().Sock}, &log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var serr error
	go func() { serr = s.Serve(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		t.Logf("server log:\n%s", log.String())
	})
	return s.Port(), done, &serr
}

type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func clientConfig(port int, udp bool, n int64) Config {
	c := Defaults()
	c.Host, c.Port, c.UDP, c.Count, c.Warmup = "127.0.0.1", port, udp, n, 5
	return c
}

// TestLoopback runs exact -n counts over TCP and UDP, against a server
// with -1 that must exit once the client is done.
func TestLoopback(t *testing.T) {
	for _, tc := range []struct {
		name string
		udp  bool
		size int
	}{
		{"tcp 1 byte", false, 1},
		{"tcp 64 KiB", false, 64 << 10},
		{"udp 16 bytes", true, 16},
		{"udp 1400 bytes", true, 1400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port, served, serr := startServer(t, true)
			cfg := clientConfig(port, tc.udp, 700)
			cfg.Size = tc.size
			cfg.Interval = 10 * time.Millisecond
			var ivs []Interval
			res, err := Run(context.Background(), cfg, func(iv Interval) { ivs = append(ivs, iv) })
			if err != nil {
				t.Fatal(err)
			}
			if res.Requests != 700 || res.RoundTrips != 700 || res.RTT.Count != 700 || res.Lost != 0 || res.Late != 0 {
				t.Errorf("requests %d, round trips %d, rtt count %d, lost %d, late %d; want 700, 700, 700, 0, 0",
					res.Requests, res.RoundTrips, res.RTT.Count, res.Lost, res.Late)
			}
			var inBuckets, inIntervals int64
			for _, b := range res.Buckets {
				inBuckets += b.Count
			}
			for _, iv := range ivs {
				inIntervals += iv.RoundTrips
			}
			if inBuckets != 700 || inIntervals != 700 || len(res.Intervals) != len(ivs) {
				t.Errorf("buckets hold %d, intervals %d (%d reported, %d kept); want 700 each", inBuckets, inIntervals, len(ivs), len(res.Intervals))
			}
			s := res.RTT
			if !(0 < s.Min && s.Min <= s.P50 && s.P50 <= s.P90 && s.P90 <= s.P99 && s.P99 <= s.P999 && s.P999 <= s.P9999 && s.P9999 <= s.Max) {
				t.Errorf("figures out of order: %+v", s)
			}
			if want := "udp"; tc.udp && res.Protocol != want || !tc.udp && res.Protocol != "tcp" {
				t.Errorf("protocol %q", res.Protocol)
			}
			select {
			case <-served:
				if *serr != nil {
					t.Errorf("server: %v", *serr)
				}
			case <-time.After(time.Minute):
				t.Error("server with Once still running a minute after its client finished")
			}
		})
	}
}

func TestDuration(t *testing.T) {
	port, _, _ := startServer(t, false)
	cfg := clientConfig(port, false, 0)
	cfg.Duration = 200 * time.Millisecond
	res, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Elapsed < cfg.Duration || res.RoundTrips == 0 || res.RoundTrips != res.Requests {
		t.Errorf("elapsed %v (want >= %v), round trips %d of %d requests", res.Elapsed, cfg.Duration, res.RoundTrips, res.Requests)
	}
}

// lossyServer is a UDP echo server of the test's own: it holds back every
// k-th request; with release, it sends the held reply just before the
// next one (late), otherwise never (lost).
func lossyServer(t *testing.T, k int, release bool) int {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 65536)
		var held []byte
		n := 0
		for {
			m, from, err := c.ReadFromUDP(buf)
			if err != nil {
				return
			}
			if kind, _, ok := header(buf[:m]); !ok || kind != kindRequest {
				continue
			}
			n++
			if n%k == 0 {
				held = append(held[:0], buf[:m]...)
				continue
			}
			if release && held != nil {
				c.WriteToUDP(held, from)
				held = nil
			}
			c.WriteToUDP(buf[:m], from)
		}
	}()
	t.Cleanup(func() { c.Close(); <-done })
	return c.LocalAddr().(*net.UDPAddr).Port
}

func TestUDPLoss(t *testing.T) {
	for _, tc := range []struct {
		name          string
		release       bool
		n, k          int64
		lost, late    int64
		roundTripsNum int64
	}{
		// every 5th of 20 requests dropped: 4 lost, none late
		{"drop every 5th", false, 20, 5, 4, 0, 16},
		// every 10th held until the next request: 3 lost, 2 of them late
		// (the 30th is never released)
		{"delay every 10th", true, 30, 10, 3, 2, 27},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port := lossyServer(t, int(tc.k), tc.release)
			cfg := clientConfig(port, true, tc.n)
			cfg.Warmup = 0
			// A request is lost when no reply came within the timeout: long
			// enough that a busy host answers every other one in time.
			cfg.Timeout = 250 * time.Millisecond
			res, err := Run(context.Background(), cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Requests != tc.n || res.RoundTrips != tc.roundTripsNum || res.Lost != tc.lost || res.Late != tc.late {
				t.Errorf("requests %d, round trips %d, lost %d, late %d; want %d, %d, %d, %d",
					res.Requests, res.RoundTrips, res.Lost, res.Late, tc.n, tc.roundTripsNum, tc.lost, tc.late)
			}
			var text bytes.Buffer
			WriteText(&text, res)
			if want := "lost (no reply within 250ms)"; !strings.Contains(text.String(), want) {
				t.Errorf("text report lacks %q:\n%s", want, text.String())
			}
		})
	}
}

func TestRunErrors(t *testing.T) {
	// A port with nothing on it: TCP is refused at connect, UDP at the
	// first reply (ICMP port unreachable).
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	for _, udp := range []bool{false, true} {
		cfg := clientConfig(port, udp, 10)
		_, err := Run(context.Background(), cfg, nil)
		if err == nil || !strings.Contains(err.Error(), "connection refused: is blast lat -s running there") || IsUsage(err) {
			t.Errorf("udp=%v: err = %v, want a run-time 'connection refused' with the fix", udp, err)
		}
	}
	cfg := clientConfig(port, true, 10)
	cfg.Size = 8
	if _, err := Run(context.Background(), cfg, nil); !IsUsage(err) {
		t.Errorf("-u -l 8: err = %v, want a usage error", err)
	}
}

// runBounded runs the client in a goroutine and waits up to a minute for
// it to return: a client that ignores its context would run for its hour.
func runBounded(t *testing.T, ctx context.Context, cfg Config, progress func(Interval)) *Result {
	t.Helper()
	type ran struct {
		res *Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := Run(ctx, cfg, progress)
		done <- ran{res, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.res
	case <-time.After(time.Minute):
		t.Fatal("the client still runs a minute after it was interrupted")
		return nil
	}
}

// TestInterrupt cancels a running client once it reported round trips:
// it stops, with the figures so far.
func TestInterrupt(t *testing.T) {
	for _, udp := range []bool{false, true} {
		t.Run(map[bool]string{false: "tcp", true: "udp"}[udp], func(t *testing.T) {
			port, _, _ := startServer(t, false)
			cfg := clientConfig(port, udp, 0)
			cfg.Duration, cfg.Interval = time.Hour, 10*time.Millisecond
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			res := runBounded(t, ctx, cfg, func(iv Interval) {
				if iv.RoundTrips > 0 {
					cancel()
				}
			})
			if !res.Interrupted || res.RoundTrips == 0 || res.RoundTrips != res.RTT.Count {
				t.Errorf("interrupted %v with %d round trips (rtt count %d); want a stop with the figures so far", res.Interrupted, res.RoundTrips, res.RTT.Count)
			}
		})
	}
}

// TestInterruptWaiting cancels a client blocked on a reply that never
// comes (a server that reads and does not answer), once its request (TCP:
// its greeting) arrived: it must return, not wait out its hour of timeout.
func TestInterruptWaiting(t *testing.T) {
	for _, udp := range []bool{false, true} {
		t.Run(map[bool]string{false: "tcp", true: "udp"}[udp], func(t *testing.T) {
			var port int
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if udp {
				c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				port = c.LocalAddr().(*net.UDPAddr).Port
				go func() {
					buf := make([]byte, 65536)
					if _, _, err := c.ReadFromUDP(buf); err == nil {
						cancel()
					}
				}()
			} else {
				l, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				port = l.Addr().(*net.TCPAddr).Port
				go func() {
					c, err := l.Accept()
					if err != nil {
						return
					}
					defer c.Close()
					var hi [len(Hello)]byte
					if _, err := io.ReadFull(c, hi[:]); err == nil {
						cancel()
					}
					io.Copy(io.Discard, c) // held open until the client closes
				}()
			}
			cfg := clientConfig(port, udp, 0)
			cfg.Warmup, cfg.Duration, cfg.Timeout = 0, time.Hour, time.Hour
			if res := runBounded(t, ctx, cfg, nil); !res.Interrupted {
				t.Errorf("interrupted %v; want an interrupted result", res.Interrupted)
			}
		})
	}
}

// TestNoLeak runs clients against a server and stops it, then counts the
// process's open descriptors and goroutines: both back where they were.
func TestNoLeak(t *testing.T) {
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skipf("cannot count descriptors here: %v", err)
		}
		return len(ents)
	}
	fd0, g0 := fds(), runtime.NumGoroutine()
	s, err := Listen(Config{Server: true, Bind: "127.0.0.1", Sock: Defaults().Sock}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	for _, udp := range []bool{false, true, false, true} {
		if _, err := Run(context.Background(), clientConfig(s.Port(), udp, 50), nil); err != nil {
			t.Fatal(err)
		}
	}
	// A TCP client still connected when the server stops: the server
	// stops once the client reported round trips.
	ictx, icancel := context.WithCancel(context.Background())
	idone := make(chan struct{})
	measuring := make(chan struct{})
	var once sync.Once
	go func() {
		defer close(idone)
		cfg := clientConfig(s.Port(), false, 0)
		cfg.Duration, cfg.Interval = time.Hour, 10*time.Millisecond
		Run(ictx, cfg, func(Interval) { once.Do(func() { close(measuring) }) })
	}()
	select {
	case <-measuring:
	case <-idone:
		t.Fatal("the client ended before it measured")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Serve still running a minute after its context ended")
	}
	icancel()
	<-idone
	testkit.Eventually(10*time.Second, func() bool { return fds() == fd0 && runtime.NumGoroutine() <= g0 })
	if fd, g := fds(), runtime.NumGoroutine(); fd != fd0 || g > g0 {
		t.Errorf("after the runs: %d descriptors, %d goroutines; before: %d, %d", fd, g, fd0, g0)
	}
}
