package control

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/internal/clock"
	"github.com/blastnet/blast/internal/testkit"
	"github.com/blastnet/blast/latency"
)

// latRequest is a blast lat UDP request with sequence number seq.
func latRequest(seq uint64) []byte {
	b := make([]byte, 64)
	copy(b, "bLat")
	b[4] = 1 // a request
	binary.BigEndian.PutUint64(b[8:], seq)
	return b
}

// openSession opens a latency session for u at rate over TCP, as blast
// lat -u does; closing the returned connection ends it.
func openSession(t *testing.T, u *net.UDPConn, port int, rate float64) net.Conn {
	t.Helper()
	la := u.LocalAddr().(*net.UDPAddr)
	c := dialFrom(t, la.IP.String(), port)
	g := latency.UDPGreeting(uint16(la.Port), rate)
	c.SetDeadline(time.Now().Add(time.Minute))
	if _, err := c.Write(g[:]); err != nil {
		t.Fatal(err)
	}
	var back [len(g)]byte
	if _, err := io.ReadFull(c, back[:]); err != nil || back != g {
		t.Fatalf("session greeting: %v, answered %q", err, back)
	}
	return c
}

// replies counts the datagrams waiting on u, without waiting for more.
func replies(t *testing.T, u *net.UDPConn) int {
	t.Helper()
	rc, err := u.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2048)
	for n := 0; ; n++ {
		var rerr error
		if err := rc.Read(func(fd uintptr) bool {
			_, _, rerr = unix.Recvfrom(int(fd), buf, unix.MSG_DONTWAIT)
			return true
		}); err != nil {
			t.Fatal(err)
		}
		switch {
		case errors.Is(rerr, unix.EAGAIN):
			return n
		case rerr != nil:
			t.Fatal(rerr)
		}
	}
}

// marker sends a request from m, which holds a session, and waits for
// its reply: the server's UDP port reads datagrams in order, so every
// datagram sent before it has been answered (or not) by then.
func marker(t *testing.T, m *net.UDPConn, seq uint64) {
	t.Helper()
	if _, err := m.Write(latRequest(seq)); err != nil {
		t.Fatal(err)
	}
	m.SetReadDeadline(time.Now().Add(time.Minute))
	buf := make([]byte, 2048)
	n, err := m.Read(buf)
	if err != nil || n != 64 || binary.BigEndian.Uint64(buf[8:]) != seq {
		t.Fatalf("the marker's reply: %d bytes, %v", n, err)
	}
}

// The server's UDP port echoes blast lat requests only to an address and
// port that opened a latency session over TCP, at no more than the
// session's rate, and only while the session lasts: a request from any
// other source (a spoofed one, aimed at its "source") gets no answer.
func TestEchoUDPOnlyToSessions(t *testing.T) {
	fake := clock.NewFake()
	srv, port, _ := blastServer(t, ServerConfig{NoNIC: true, Clock: fake})
	mark := testkit.UDPFrom(t, "127.0.0.1", port)
	openSession(t, mark, port, 0)

	// No session: a request from another address, and one from another
	// port of the session's address.
	spoofed := testkit.UDPFrom(t, "127.0.0.2", port)
	otherPort := testkit.UDPFrom(t, "127.0.0.1", port)
	spoofed.Write(latRequest(1))
	otherPort.Write(latRequest(1))
	marker(t, mark, 1)
	if n := replies(t, spoofed) + replies(t, otherPort); n != 0 {
		t.Errorf("%d replies to requests from sources without a session, want none", n)
	}

	// A session at 20 requests a second: a second's worth and 64 at
	// once, then a quarter over its rate. (The requests go 50 at a time,
	// each lot followed by the marker: a few hundred at once would
	// overflow the server's socket buffer.)
	const rate = 20
	u := testkit.UDPFrom(t, "127.0.0.3", port)
	sess := openSession(t, u, port, rate)
	seq := uint64(10)
	send := func(n int) {
		for range n {
			seq++
			u.Write(latRequest(seq))
		}
		marker(t, mark, seq)
	}
	send(50)
	send(50)
	send(50)
	if n := replies(t, u); n != rate+64 {
		t.Errorf("150 requests at once: %d replies, want %d (the session's burst)", n, rate+64)
	}
	fake.Advance(time.Second)
	send(50)
	if n := replies(t, u); n != rate*5/4 {
		t.Errorf("50 requests a second later: %d replies, want %d (1.25 times the rate)", n, rate*5/4)
	}

	// The session ends with its connection.
	sess.Close()
	testkit.WaitFor(t, time.Minute, "the session to end", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.echoes.Len() == 1 // the marker's
	})
	fake.Advance(time.Minute)
	u.Write(latRequest(1))
	marker(t, mark, 1000)
	if n := replies(t, u); n != 0 {
		t.Errorf("%d replies after the session ended, want none", n)
	}
}

// blast lat -u against blast server's port: served whole.
func TestEchoUDPLatencyRun(t *testing.T) {
	_, port, _ := blastServer(t, ServerConfig{NoNIC: true})
	for _, rate := range []float64{0, 2000} {
		t.Run(strconv.FormatFloat(rate, 'f', -1, 64), func(t *testing.T) {
			cfg := latency.Defaults()
			cfg.Host, cfg.Port, cfg.UDP, cfg.Count, cfg.Rate, cfg.Timeout = "127.0.0.1", port, true, 500, rate, 30*time.Second
			r, err := latency.Run(context.Background(), cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.RoundTrips != cfg.Count || r.Lost != 0 {
				t.Errorf("%d round trips, %d lost; want %d, none lost", r.RoundTrips, r.Lost, cfg.Count)
			}
		})
	}
}
