package control

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/internal/clock"
	"github.com/blastnet/blast/internal/testkit"
	"github.com/blastnet/blast/latency"
)

// idleFlood keeps perAddr connections open to port from each of addrs,
// never sending a byte, and opens another each time the server closes
// one, until the test ends. cycles counts the connections the server
// closed.
type idleFlood struct {
	cycles  atomic.Int64
	dialErr atomic.Int64
	stop    context.CancelFunc
	wg      sync.WaitGroup
}

func startIdleFlood(t *testing.T, port int, addrs []netip.Addr, perAddr int) *idleFlood {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f := &idleFlood{stop: cancel}
	for _, a := range addrs {
		for range perAddr {
			f.wg.Go(func() {
				buf := make([]byte, 64)
				for ctx.Err() == nil {
					c, err := faultDial(port, a)
					if err != nil {
						f.dialErr.Add(1)
						continue
					}
					stop := context.AfterFunc(ctx, func() { c.Close() })
					for {
						if _, err := c.Read(buf); err != nil {
							break
						}
					}
					stop()
					c.Close()
					if ctx.Err() == nil {
						f.cycles.Add(1)
					}
				}
			})
		}
	}
	t.Cleanup(f.end)
	return f
}

func (f *idleFlood) end() {
	f.stop()
	f.wg.Wait()
}

// floodAddrs are the flood's 10 source addresses, 127.0.0.2 to .11 (all
// loopback); the real clients come from 127.0.0.1.
func floodAddrs() []netip.Addr {
	var out []netip.Addr
	for i := range 10 {
		out = append(out, netip.AddrFrom4([4]byte{127, 0, 0, byte(2 + i)}))
	}
	return out
}

// 320 idle connections from 10 addresses (32 each, reconnecting each
// time the server closes one) fill the server's 256 places for
// unidentified connections and keep pushing each other out; a real
// client from another address is served in at least 19 of 20 tries (a
// newcomer from an address holding fewer places always gets one, and
// keeps it: only the fullest addresses lose theirs). Before the places
// were shared fairly, 1 of 25 was served.
func TestAdmitIdleFloodFromTenAddresses(t *testing.T) {
	srv, port, _ := blastServer(t, ServerConfig{NoNIC: true})
	f := startIdleFlood(t, port, floodAddrs(), DefaultMaxUnidentifiedPerHost)
	full := func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.pending.Len() == DefaultMaxUnidentified
	}
	// The pool is full, and the flood is pushing its own connections
	// out and coming back.
	testkit.WaitFor(t, time.Minute, "the flood to fill the server's places", full)
	testkit.WaitFor(t, time.Minute, "the flood to reconnect", func() bool { return f.cycles.Load() >= 2*DefaultMaxUnidentified })
	const tries = 20
	t.Run("blast", func(t *testing.T) {
		served := 0
		var errs []string
		for range tries {
			_, err := Run(context.Background(), Config{Host: "127.0.0.1", Port: port, Bytes: 64 << 10, NoNIC: true})
			if err == nil {
				served++
			} else {
				errs = append(errs, err.Error())
			}
		}
		t.Logf("%d of %d blast tests served", served, tries)
		if served < tries-1 {
			t.Errorf("%d of %d tests served during the flood, want at least %d; errors:\n%s", served, tries, tries-1, strings.Join(errs, "\n"))
		}
	})
	t.Run("iperf3", func(t *testing.T) {
		needIperf3(t)
		served := 0
		var errs []string
		for range tries {
			if d := iperf3ClientMay(t, port, "-n", "64K"); d.Error == "" {
				served++
			} else {
				errs = append(errs, d.Error)
			}
		}
		t.Logf("%d of %d iperf3 tests served", served, tries)
		if served < tries-1 {
			t.Errorf("%d of %d iperf3 tests served during the flood, want at least %d; errors:\n%s", served, tries, tries-1, strings.Join(errs, "\n"))
		}
	})
	if !full() {
		t.Error("the flood no longer fills the server's places: the test did not test it")
	}
	cycles := f.cycles.Load()
	f.end()
	t.Logf("%d flood connections closed by the server, %d dials failed", cycles, f.dialErr.Load())
	faultPending(t, srv, 30*time.Second)
}

// A connection that sends nothing is closed when the handshake timeout
// has passed on the server's clock, and not before; one that sent its
// cookie and no parameters is told SERVER_ERROR first.
func TestAdmitHandshakeTimeout(t *testing.T) {
	fake := clock.NewFake()
	const timeout = 3 * time.Second
	// The socket deadlines (StreamTimeout) are far beyond the test.
	srv, port, _ := blastServer(t, ServerConfig{NoNIC: true, Clock: fake, HandshakeTimeout: timeout, StreamTimeout: time.Hour})
	silent, err := faultDial(port, faultAttackerAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	cookieOnly, err := faultDial(port, faultAttackerAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cookieOnly.Close() })
	cookie := wire.NewCookie()
	cookieOnly.Write(cookie[:])
	cookieOnly.SetReadDeadline(time.Now().Add(time.Minute))
	if st, err := wire.ReadState(cookieOnly); err != nil || st != wire.ParamExchange {
		t.Fatalf("cookie-only connection: %v, %v; want PARAM_EXCHANGE", st, err)
	}
	// Both are in, each with its timer armed.
	select {
	case <-fake.Armed(2):
	case <-time.After(time.Minute):
		t.Fatalf("%d timers armed, want the handshake timers of 2 connections", fake.Timers())
	}
	fake.Advance(timeout - time.Millisecond)
	srv.mu.Lock()
	held := srv.pending.Len()
	srv.mu.Unlock()
	if held != 2 {
		t.Errorf("%d connections hold a place before the timeout, want 2", held)
	}
	fake.Advance(time.Millisecond)
	silent.SetReadDeadline(time.Now().Add(time.Minute))
	if n, err := silent.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Errorf("silent connection at the timeout: %d bytes, %v; want closed by the server (EOF)", n, err)
	}
	got, err := io.ReadAll(cookieOnly)
	if err != nil || len(got) == 0 || wire.State(int8(got[0])) != wire.ServerError {
		t.Errorf("cookie-only connection at the timeout: got %v, %v; want SERVER_ERROR, then closed", got, err)
	}
	faultPending(t, srv, 30*time.Second)
}

// lineCounter counts the server's log lines that contain a string.
type lineCounter struct {
	mu   sync.Mutex
	buf  strings.Builder
	want string
	n    int
}

func (l *lineCounter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n += strings.Count(string(p), l.want)
	l.buf.Write(p)
	return len(p), nil
}

func (l *lineCounter) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

func threads(t *testing.T) int {
	t.Helper()
	d, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	return len(d)
}

// 64 latency clients from two addresses that send and never read: the
// echo places are shared by address (4 each here, 8 in all), so a real
// blast lat from a third address is served beside them, taking the
// oldest place of the fullest address; then the flood's clients send and
// never read, and each is dropped once its replies have gone untaken for
// the echo write timeout. The server's threads stay within its places.
func TestEchoNeverReadingClients(t *testing.T) {
	const (
		places, perHost = 8, 4
		flood           = 64
		writeTimeout    = 200 * time.Millisecond
	)
	log := &lineCounter{want: latency.ErrNotReading.Error()}
	_, port, _ := blastServer(t, ServerConfig{NoNIC: true, MaxClients: places, MaxPerHost: perHost, EchoWriteTimeout: writeTimeout, Log: log})
	base := threads(t)
	addrs := []netip.Addr{faultAttackerAddr, netip.MustParseAddr("127.0.0.3")}
	var admitted []*net.TCPConn
	refused := 0
	for i := range flood {
		c, err := faultDial(port, addrs[i%len(addrs)])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(time.Minute))
		if _, err := c.Write(latency.Hello[:]); err != nil {
			t.Fatal(err)
		}
		var back [len(latency.Hello)]byte
		switch _, err := io.ReadFull(c, back[:]); {
		case err == nil && back == latency.Hello:
			admitted = append(admitted, c)
		case errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET):
			refused++
		default:
			t.Fatalf("latency client %d: greeting: %v", i, err)
		}
	}
	if len(admitted) != places {
		t.Fatalf("%d of %d latency clients from 2 addresses admitted, want %d (%d from each)", len(admitted), flood, places, perHost)
	}
	// A real blast lat, from 127.0.0.1.
	cfg := latency.Defaults()
	cfg.Host, cfg.Port, cfg.Count, cfg.Warmup, cfg.Timeout = "127.0.0.1", port, 200, 0, 30*time.Second
	r, err := latency.Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatalf("a real blast lat beside %d latency clients: %v", len(admitted), err)
	}
	if r.RoundTrips != cfg.Count {
		t.Errorf("the real blast lat: %d round trips, want %d", r.RoundTrips, cfg.Count)
	}
	if n := threads(t); n > base+places+16 {
		t.Errorf("%d threads with %d latency clients admitted, want at most %d (the %d before, one per place, and 16 to spare)", n, places, base+places+16, base)
	}
	// Now they send and never read: every one of them is closed by the
	// server (its write fails with a reset), not by its own deadline.
	chunk := make([]byte, 64<<10)
	errs := make([]error, len(admitted))
	var wg sync.WaitGroup
	for i, c := range admitted {
		wg.Go(func() {
			for {
				if _, err := c.Write(chunk); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("never-reading client %d was still open after a minute: %v", i, err)
		}
	}
	// One of them made room for the real client; the others met the
	// write timeout.
	testkit.WaitFor(t, time.Minute, fmt.Sprintf("%d log lines of clients dropped for not reading", places-1), func() bool { return log.count() >= places-1 })
	if n := log.count(); n > places {
		t.Errorf("%d clients dropped for not reading, want at most %d", n, places)
	}
}
