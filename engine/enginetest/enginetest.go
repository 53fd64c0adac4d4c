// Package enginetest is the conformance suite every engine.Backend must
// pass, over real loopback sockets: exact byte counts in both directions,
// data delivered byte for byte, prompt cancellation through the context,
// and no file descriptor or goroutine left behind.
package enginetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/blastnet/blast/engine"
)

// Caps says which parts of the contract a backend implements; the suite
// skips the others, saying so.
type Caps struct {
	TCPSend, TCPRecv, UDPSend, UDPRecv bool
	// Source and Sink: the backend honours Spec.Source / Spec.Sink.
	Source, Sink bool
	// Batch is the most datagrams one UDP I/O call may move (sendmmsg,
	// recvmmsg); 0 means one.
	Batch int
}

// All is the full contract.
var All = Caps{TCPSend: true, TCPRecv: true, UDPSend: true, UDPRecv: true, Source: true, Sink: true}

// watchdog bounds every blocking step: a backend that hangs fails the
// suite instead of hanging it.
const watchdog = 20 * time.Second

// Run runs the suite against b.
func Run(t *testing.T, b engine.Backend, caps Caps) {
	if err := b.Probe(); err != nil {
		if errors.Is(err, engine.ErrNotSupported) {
			t.Skipf("%s: %v", b.Name(), err)
		}
		t.Fatalf("%s: probe failed: %v", b.Name(), err)
	}
	fds, gor := countFDs(t), runtime.NumGoroutine()

	for _, network := range []string{"tcp4", "tcp6"} {
		t.Run(network, func(t *testing.T) {
			if !caps.TCPSend {
				t.Skip("backend does not send TCP")
			}
			testTCPSend(t, b, network, 8<<20+12345, 65536)
			testTCPSend(t, b, network, 1000, 1)
		})
	}
	t.Run("tcp/recv", func(t *testing.T) {
		if !caps.TCPRecv {
			t.Skip("backend does not receive TCP")
		}
		testTCPRecv(t, b, caps, 16<<20+7, 8192)
	})
	t.Run("tcp/source", func(t *testing.T) {
		if !caps.TCPSend || !caps.Source {
			t.Skip("backend does not send from a source")
		}
		testTCPSource(t, b, 4<<20+3)
	})
	t.Run("udp/send", func(t *testing.T) {
		if !caps.UDPSend {
			t.Skip("backend does not send UDP")
		}
		testUDPSend(t, b, caps, 300, 1200)
	})
	t.Run("udp/recv", func(t *testing.T) {
		if !caps.UDPRecv {
			t.Skip("backend does not receive UDP")
		}
		testUDPRecv(t, b, caps, 300, 1200)
	})
	t.Run("cancel/recv", func(t *testing.T) {
		if !caps.TCPRecv {
			t.Skip("backend does not receive TCP")
		}
		testCancel(t, b, false)
	})
	t.Run("cancel/send", func(t *testing.T) {
		if !caps.TCPSend {
			t.Skip("backend does not send TCP")
		}
		testCancel(t, b, true)
	})
	t.Run("duration", func(t *testing.T) {
		if !caps.TCPSend {
			t.Skip("backend does not send TCP")
		}
		testDuration(t, b)
	})

	// Leaks: everything the subtests opened is closed by now; give the
	// runtime a moment to retire goroutines that are on their way out.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && (runtime.NumGoroutine() > gor || countFDs(t) > fds) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := countFDs(t); got > fds {
		t.Errorf("%s leaked file descriptors: %d open before the suite, %d after", b.Name(), fds, got)
	}
	if got := runtime.NumGoroutine(); got > gor {
		buf := make([]byte, 1<<16)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("%s leaked goroutines: %d before the suite, %d after:\n%s", b.Name(), gor, got, buf)
	}
}

func countFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("count open fds: %v", err)
	}
	return len(ents)
}

// tcpPair returns a connected pair over loopback: the backend's end and
// the plain peer's end.
func tcpPair(t *testing.T, network string) (mine, peer *net.TCPConn) {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "tcp6" {
		addr = "[::1]:0"
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		if network == "tcp6" {
			t.Skipf("no IPv6 loopback: %v", err)
		}
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial(network, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	p, err := ln.Accept()
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); p.Close() })
	return c.(*net.TCPConn), p.(*net.TCPConn)
}

func run(t *testing.T, what string, fn func(ctx context.Context) error) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), watchdog)
	defer cancel()
	err := fn(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%s did not finish within %v", what, watchdog)
	}
	return err
}

func checkSample(t *testing.T, s engine.Sample, wantBytes int64, bufLen int) {
	t.Helper()
	if s.Bytes != wantBytes {
		t.Errorf("counters say %d bytes, want %d", s.Bytes, wantBytes)
	}
	if s.Calls < 1 || s.MinIO < 1 || s.MaxIO > int64(bufLen) || s.MinIO > s.MaxIO {
		t.Errorf("implausible I/O counters for at most %d bytes per call: %+v", bufLen, s)
	}
	if s.Errors != 0 {
		t.Errorf("counters report %d errors on a clean transfer", s.Errors)
	}
}

func testTCPSend(t *testing.T, b engine.Backend, network string, n int64, bufLen int) {
	mine, peer := tcpPair(t, network)
	got := make(chan int64, 1)
	go func() {
		c, _ := io.Copy(io.Discard, peer)
		got <- c
	}()
	f := &engine.Flow{Conn: mine, Spec: &engine.Spec{Protocol: engine.TCP, BufLen: bufLen, Bytes: n}, Stats: &engine.Counters{}}
	if err := run(t, "send", func(ctx context.Context) error { return b.Send(ctx, f) }); err != nil {
		t.Fatalf("send %d bytes: %v", n, err)
	}
	mine.CloseWrite()
	if g := <-got; g != n {
		t.Errorf("peer received %d bytes, want %d", g, n)
	}
	checkSample(t, f.Stats.Snapshot(), n, bufLen)
}

func testTCPRecv(t *testing.T, b engine.Backend, caps Caps, n int64, bufLen int) {
	mine, peer := tcpPair(t, "tcp4")
	data := randomBytes(t, int(n))
	go func() {
		peer.Write(data)
		peer.CloseWrite()
	}()
	h := sha256.New()
	spec := &engine.Spec{Protocol: engine.TCP, BufLen: bufLen}
	if caps.Sink {
		spec.Sink = h
	}
	f := &engine.Flow{Conn: mine, Spec: spec, Stats: &engine.Counters{}}
	if err := run(t, "recv", func(ctx context.Context) error { return b.Recv(ctx, f) }); err != nil {
		t.Fatalf("recv: %v", err)
	}
	checkSample(t, f.Stats.Snapshot(), n, bufLen)
	if caps.Sink {
		if want := sha256.Sum256(data); !bytes.Equal(h.Sum(nil), want[:]) {
			t.Errorf("data written to the sink differs from what the peer sent")
		}
	}
}

func testTCPSource(t *testing.T, b engine.Backend, n int64) {
	mine, peer := tcpPair(t, "tcp4")
	data := randomBytes(t, int(n))
	sum := make(chan [32]byte, 1)
	go func() {
		h := sha256.New()
		io.Copy(h, peer)
		var s [32]byte
		copy(s[:], h.Sum(nil))
		sum <- s
	}()
	f := &engine.Flow{Conn: mine, Spec: &engine.Spec{Protocol: engine.TCP, BufLen: 8192, Source: bytes.NewReader(data)}, Stats: &engine.Counters{}}
	if err := run(t, "send from source", func(ctx context.Context) error { return b.Send(ctx, f) }); err != nil {
		t.Fatalf("send: %v", err)
	}
	mine.CloseWrite()
	if got := <-sum; got != sha256.Sum256(data) {
		t.Errorf("peer received different bytes than the source held")
	}
	checkSample(t, f.Stats.Snapshot(), n, 8192)
}

func udpPair(t *testing.T) (mine, peer *net.UDPConn) {
	t.Helper()
	a, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialUDP("udp4", nil, a.LocalAddr().(*net.UDPAddr))
	if err != nil {
		a.Close()
		t.Fatal(err)
	}
	a.SetReadBuffer(8 << 20)
	c.SetReadBuffer(8 << 20)
	t.Cleanup(func() { a.Close(); c.Close() })
	return c, a
}

func testUDPSend(t *testing.T, b engine.Backend, caps Caps, count, size int) {
	mine, peer := udpPair(t)
	got := make(chan [2]int64, 1)
	go func() {
		buf := make([]byte, 65536)
		var dg, by int64
		for dg < int64(count) {
			peer.SetReadDeadline(time.Now().Add(2 * time.Second))
			n, err := peer.Read(buf)
			if err != nil {
				break
			}
			dg++
			by += int64(n)
		}
		got <- [2]int64{dg, by}
	}()
	f := &engine.Flow{Conn: mine, Spec: &engine.Spec{Protocol: engine.UDP, BufLen: size, Bytes: int64(count * size), Rate: 50e6}, Stats: &engine.Counters{}}
	if err := run(t, "udp send", func(ctx context.Context) error { return b.Send(ctx, f) }); err != nil {
		t.Fatalf("udp send: %v", err)
	}
	s := f.Stats.Snapshot()
	checkSample(t, s, int64(count*size), size*max(caps.Batch, 1))
	if s.Datagrams != int64(count) {
		t.Errorf("counters say %d datagrams sent, want %d", s.Datagrams, count)
	}
	if g := <-got; g != [2]int64{int64(count), int64(count * size)} {
		t.Errorf("peer received %d datagrams, %d bytes; want %d, %d", g[0], g[1], count, count*size)
	}
}

func testUDPRecv(t *testing.T, b engine.Backend, caps Caps, count, size int) {
	mine, peer := udpPair(t)
	// mine is connected to peer's address; the peer sends back to mine.
	go func() {
		p := make([]byte, size)
		to := mine.LocalAddr()
		for i := 0; i < count; i++ {
			peer.WriteTo(p, to)
			if i%32 == 31 {
				time.Sleep(time.Millisecond) // stay well inside the socket buffer
			}
		}
		peer.WriteTo(p[:4], to) // end sentinel
	}()
	f := &engine.Flow{Conn: mine, Spec: &engine.Spec{Protocol: engine.UDP, BufLen: 65536, SentinelMax: 4}, Stats: &engine.Counters{}}
	if err := run(t, "udp recv", func(ctx context.Context) error { return b.Recv(ctx, f) }); err != nil {
		t.Fatalf("udp recv: %v", err)
	}
	s := f.Stats.Snapshot()
	checkSample(t, s, int64(count*size), 65536*max(caps.Batch, 1))
	if s.Datagrams != int64(count) {
		t.Errorf("counters say %d datagrams received, want %d", s.Datagrams, count)
	}
}

func testCancel(t *testing.T, b engine.Backend, send bool) {
	mine, _ := tcpPair(t, "tcp4") // the peer neither sends nor reads
	ctx, cancel := context.WithCancel(context.Background())
	f := &engine.Flow{Conn: mine, Spec: &engine.Spec{Protocol: engine.TCP, BufLen: 65536}, Stats: &engine.Counters{}}
	done := make(chan error, 1)
	go func() {
		if send {
			done <- b.Send(ctx, f)
		} else {
			done <- b.Recv(ctx, f)
		}
	}()
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("after cancel: got %v, want an error wrapping context.Canceled", err)
		}
	case <-time.After(watchdog):
		t.Fatalf("still blocked %v after the context was cancelled", watchdog)
	}
	// The conn must still be usable for the caller to close cleanly.
	if err := mine.SetDeadline(time.Time{}); err != nil {
		t.Errorf("conn unusable after cancel: %v", err)
	}
}

func testDuration(t *testing.T, b engine.Backend) {
	mine, peer := tcpPair(t, "tcp4")
	got := make(chan int64, 1)
	go func() {
		c, _ := io.Copy(io.Discard, peer)
		got <- c
	}()
	f := &engine.Flow{Conn: mine, Spec: &engine.Spec{Protocol: engine.TCP, BufLen: 65536, Duration: 300 * time.Millisecond}, Stats: &engine.Counters{}}
	if err := run(t, "timed send", func(ctx context.Context) error { return b.Send(ctx, f) }); err != nil {
		t.Fatalf("timed send: %v", err)
	}
	mine.CloseWrite()
	s := f.Stats.Snapshot()
	if g := <-got; g != s.Bytes || g == 0 {
		t.Errorf("peer received %d bytes, counters say %d sent (want equal and non-zero)", g, s.Bytes)
	}
}

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}
