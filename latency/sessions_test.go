package latency

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/internal/testkit"
)

// The watch opens a session from a greeting however the client's bytes
// were cut, for the TCP peer's address and the greeting's port and rate,
// and opens none for anything else.
func TestGreetingWatch(t *testing.T) {
	host := netip.MustParseAddr("198.18.0.7")
	g := UDPGreeting(4242, 100)
	for _, tc := range []struct {
		name  string
		reads [][]byte
		open  bool
	}{
		{"whole", [][]byte{g[:]}, true},
		{"in three reads", [][]byte{g[:5], g[5:20], g[20:]}, true},
		{"with bytes after it", [][]byte{append(g[:], "more"...)}, true},
		{"Hello", [][]byte{Hello[:]}, false},
		{"a line", [][]byte{[]byte("hello\n")}, false},
		{"a greeting's first half, then other bytes", [][]byte{g[:10], make([]byte, 30)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSessions(time.Now)
			w := &greetingWatch{sessions: s, host: host}
			for _, r := range tc.reads {
				w.see(r)
			}
			if got := s.MayEcho(netip.AddrPortFrom(host, 4242)); got != tc.open {
				t.Fatalf("a request from the greeting's port answered: %v, want %v", got, tc.open)
			}
			if s.MayEcho(netip.AddrPortFrom(host, 4243)) {
				t.Errorf("a request from another port answered")
			}
			w.close()
			if s.MayEcho(netip.AddrPortFrom(host, 4242)) {
				t.Errorf("a request answered after the session closed")
			}
		})
	}
}

// request is a UDP latency request with sequence number seq.
func request(seq uint64) []byte {
	b := make([]byte, 64)
	putHeader(b, kindRequest, seq)
	return b
}

// openSession opens u's latency session on port over TCP, its greeting
// written in two parts, and reads the greeting back.
func openSession(t *testing.T, u *net.UDPConn, port int) net.Conn {
	t.Helper()
	la := u.LocalAddr().(*net.UDPAddr)
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: la.IP}}
	c, err := d.Dial("tcp", hostPort("127.0.0.1", port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	g := UDPGreeting(uint16(la.Port), 0)
	c.SetDeadline(time.Now().Add(time.Minute))
	for _, part := range [][]byte{g[:7], g[7:]} {
		if _, err := c.Write(part); err != nil {
			t.Fatal(err)
		}
	}
	var back [len(g)]byte
	if _, err := io.ReadFull(c, back[:]); err != nil || back != g {
		t.Fatalf("the greeting back: %v, %q", err, back)
	}
	return c
}

// answered sends a request from u and says whether its reply came: a
// request from mark, which holds a session, is sent after it and
// answered, and the server reads its UDP port in order, so by the
// marker's reply u's has come if it ever will.
func answered(t *testing.T, u, mark *net.UDPConn, seq uint64) bool {
	t.Helper()
	if _, err := u.Write(request(seq)); err != nil {
		t.Fatal(err)
	}
	if _, err := mark.Write(request(seq)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2048)
	mark.SetReadDeadline(time.Now().Add(time.Minute))
	if n, err := mark.Read(buf); err != nil || n != 64 {
		t.Fatalf("the marker's reply: %d bytes, %v", n, err)
	}
	// u's reply is in its queue by now, or never comes: look without
	// waiting.
	rc, err := u.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	n, rerr := 0, error(nil)
	if err := rc.Read(func(fd uintptr) bool {
		n, _, rerr = unix.Recvfrom(int(fd), buf, unix.MSG_DONTWAIT)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if rerr != nil && !errors.Is(rerr, unix.EAGAIN) {
		t.Fatal(rerr)
	}
	return rerr == nil && n == 64
}

// blast lat -s answers UDP requests only from an address and port that
// holds a session over TCP, and only while it lasts: a request from any
// other source (a spoofed one, aimed at its "source") gets no answer.
func TestServerEchoesUDPOnlyToSessions(t *testing.T) {
	var log syncWriter
	s, err := Listen(Config{Server: true, Bind: "127.0.0.1", Sock: Defaults().Sock}, &log)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Serve(t, s.Serve)
	port := s.Port()

	mark := testkit.UDPFrom(t, "127.0.0.1", port)
	openSession(t, mark, port)
	spoofed := testkit.UDPFrom(t, "127.0.0.2", port)
	if answered(t, spoofed, mark, 1) {
		t.Errorf("a request from a source without a session was answered")
	}
	u := testkit.UDPFrom(t, "127.0.0.3", port)
	sess := openSession(t, u, port)
	if !answered(t, u, mark, 2) {
		t.Errorf("a request from a source with a session was not answered")
	}
	sess.Close()
	la := u.LocalAddr().(*net.UDPAddr)
	testkit.WaitFor(t, time.Minute, "the session's end in the log", func() bool {
		return strings.Contains(log.String(), "the session of UDP port "+strconv.Itoa(la.Port)+" done")
	})
	if answered(t, u, mark, 3) {
		t.Errorf("a request answered after its session ended")
	}
}
