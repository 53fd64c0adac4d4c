package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/internal/clock"
	"github.com/blastnet/blast/internal/testkit"
)

// fakeConn is a connection from an address, for the guard's unit test.
type fakeConn struct {
	net.Conn
	name string
	from netip.Addr
}

func (c *fakeConn) RemoteAddr() net.Addr {
	return net.TCPAddrFromAddrPort(netip.AddrPortFrom(c.from, 40000))
}

// TestGuardAdmit: the guard's choices, step by step: the allow list, the
// per-address limit, and who gives way when all places are taken.
func TestGuardAdmit(t *testing.T) {
	A, B, C, D := netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3"), netip.MustParseAddr("127.0.0.4"), netip.MustParseAddr("127.0.0.5")
	g := newConnGuard(ControlLimits{MaxConns: 4, MaxPerAddr: 3, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/29")}},
		clock.NewFake(), func(string, ...any) {})
	conns := map[string]*fakeConn{}
	n := 0
	admit := func(from netip.Addr) (string, string, string) {
		n++
		c := &fakeConn{name: fmt.Sprint(n), from: from}
		conns[c.name] = c
		victim, why := g.admit(c)
		v := ""
		if victim != nil {
			v = victim.(*fakeConn).name
		}
		return c.name, v, why
	}
	type step struct {
		from        netip.Addr
		active      []string // connections that started a request first
		victim, why string
	}
	for i, s := range []step{
		{from: A}, // 1
		{from: A}, // 2
		{from: A}, // 3
		{from: A, why: "3 connections from its address already (the most)"}, // 4
		{from: netip.MustParseAddr("127.0.0.9"), why: "not in --allow"},     // 5
		{from: B}, // 6: the last place
		// 7: full; A holds the most (3), its oldest gives way.
		{from: C, victim: "1"},
		// 8: A's are serving; B, C and D (the newcomer) hold one each:
		// the oldest idle of them gives way.
		{from: D, active: []string{"2", "3"}, victim: "6"},
		// 9: D, with the newcomer, holds the most (2): its own oldest.
		{from: D, victim: "8"},
		// 10: C's is serving: again D's own.
		{from: D, active: []string{"7"}, victim: "9"},
		// 11: A, with the newcomer, holds the most (3) and has no idle
		// connection: the newcomer is refused, not D's one.
		{from: A, why: "all 4 places are taken and its address holds the most"},
	} {
		for _, name := range s.active {
			g.state(conns[name], http.StateActive)
		}
		name, victim, why := admit(s.from)
		if victim != s.victim || why != s.why {
			t.Errorf("step %d (connection %s from %v): victim %q, refused %q; want %q, %q", i+1, name, s.from, victim, why, s.victim, s.why)
		}
		if victim != "" {
			g.state(conns[victim], http.StateClosed) // the server sees it closed: nothing changes
		}
	}
	held, accepted := g.open()
	if held != 4 || accepted != 11 {
		t.Errorf("%d held, %d accepted; want 4 and 11", held, accepted)
	}
	// Everyone serving: a newcomer is refused.
	for _, c := range conns {
		g.state(c, http.StateActive)
	}
	if _, _, why := admit(C); why != "all 4 places are serving requests" {
		t.Errorf("all serving: refused %q", why)
	}
	// A connection that ends frees its place.
	g.state(conns["2"], http.StateClosed)
	if _, victim, why := admit(C); victim != "" || why != "" {
		t.Errorf("after one closed: victim %q, refused %q; want a place", victim, why)
	}
	want := map[netip.Addr]int{A: 1, C: 2, D: 1}
	if diff := cmp.Diff(want, g.byAddr, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("places by address (-want +got):\n%s", diff)
	}
}

// fds is how many descriptors this process holds.
func fds(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// TestControlFlood: connections from ten loopback addresses, held idle or
// with half a request header sent, many more than the control endpoint's
// bound, leave the agent within its bound of descriptors, and a request
// as the mesh sends it (a real test) is still served; an address outside
// --allow is closed unanswered; when the flood ends, the descriptors are
// back.
func TestControlFlood(t *testing.T) {
	const (
		maxConns, perAddr = 32, 8
		addrs, each       = 10, 20 // 127.0.0.2 .. 127.0.0.11
	)
	var logs syncBuffer
	a, c := start(t, func(cfg *Config) {
		cfg.Server.Allow = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/28")}
		cfg.Control = ControlLimits{MaxConns: maxConns, MaxPerAddr: perAddr}
		cfg.Log = &logs
	})
	ctx := context.Background()
	// The client signs for the agent before the flood, as a mesh that
	// asked who the agents are.
	if _, err := c.Info(ctx); err != nil {
		t.Fatal(err)
	}
	http.DefaultClient.CloseIdleConnections()
	testkit.WaitFor(t, time.Minute, "the agent's connections to close", func() bool { held, _ := a.guard.open(); return held == 0 })
	_, accepted0 := a.guard.open()
	before := fds(t)

	var flood []net.Conn
	t.Cleanup(func() {
		for _, fc := range flood {
			fc.Close()
		}
	})
	for i := range addrs {
		src := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i))}
		d := net.Dialer{LocalAddr: src, Timeout: time.Minute}
		for j := range each {
			fc, err := d.Dial("tcp", a.ControlAddr().String())
			if err != nil {
				t.Fatalf("flood connection %d from %v: %v", j, src.IP, err)
			}
			flood = append(flood, fc)
			if j%2 == 1 {
				fc.Write([]byte("GET " + PathInfo + " HTTP/1.1\r\nHost: x\r\n")) // and no more
			}
		}
	}
	testkit.WaitFor(t, time.Minute, "the agent to take every flood connection", func() bool {
		_, acc := a.guard.open()
		return acc-accepted0 >= addrs*each
	})
	held, _ := a.guard.open()
	if held > maxConns {
		t.Errorf("the guard holds %d connections, want at most %d", held, maxConns)
	}
	a.guard.mu.Lock()
	for addr, n := range a.guard.byAddr {
		if n > perAddr {
			t.Errorf("%v holds %d places, want at most %d", addr, n, perAddr)
		}
	}
	a.guard.mu.Unlock()
	// This process holds the flood's ends (the test's) and the agent's:
	// at most maxConns of those (one more being closed), a few for the
	// test's request.
	if n, bound := fds(t), before+len(flood)+maxConns+1+8; n > bound {
		t.Errorf("%d descriptors during the flood, %d before it: want at most %d (the flood's %d ends and the agent's %d)", n, before, bound, len(flood), maxConns)
	}

	// The mesh's request is served: a real test to the agent's own data
	// server.
	r, err := c.Test(ctx, TestRequest{Host: "127.0.0.1", Port: dataPort(a), Seconds: 1, Streams: 1})
	if err != nil {
		t.Fatalf("the mesh's request during the flood: %v", err)
	}
	if r.Err != "" || r.Bytes == 0 {
		t.Errorf("the test during the flood: %+v", r)
	}

	// An address outside --allow: closed unanswered.
	out := &Client{Addr: c.Addr, Token: token, HTTP: &http.Client{Transport: &http.Transport{
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 100)}}).DialContext}}}
	out.keyid = c.KeyID()
	if _, err := out.Info(ctx); err == nil || errors.Is(err, ErrAuth) {
		t.Errorf("a request from 127.0.0.100, outside --allow 127.0.0.0/28: %v, want the connection closed unanswered", err)
	}
	testkit.WaitFor(t, time.Minute, "the refusal in the log", func() bool { return strings.Contains(logs.String(), "not in --allow") })

	for _, fc := range flood {
		fc.Close()
	}
	flood = nil
	http.DefaultClient.CloseIdleConnections()
	testkit.WaitFor(t, time.Minute, "the agent to close the flood's connections", func() bool { held, _ := a.guard.open(); return held == 0 })
	if n := fds(t); n > before+2 {
		t.Errorf("%d descriptors after the flood, %d before it", n, before)
	}
}

// TestControlTimeouts: a request header that does not end within the
// header timeout, and a body that does not arrive within the body timeout
// (408), end their connections; a test that outlasts the body timeout is
// not cut short by it.
func TestControlTimeouts(t *testing.T) {
	a, c := start(t, func(cfg *Config) {
		cfg.Control = ControlLimits{HeaderTimeout: 100 * time.Millisecond, BodyTimeout: 300 * time.Millisecond}
	})
	for _, tc := range []struct {
		what, send, want string
	}{
		{"half a header", "GET " + PathInfo + " HTTP/1.1\r\nHost: x\r\n", ""},
		{"half a body", "POST " + PathTest + " HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"host\":", "HTTP/1.1 408 Request Timeout"},
	} {
		conn, err := net.Dial("tcp", a.ControlAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.Write([]byte(tc.send))
		conn.SetReadDeadline(time.Now().Add(time.Minute))
		br := bufio.NewReader(conn)
		line, _ := br.ReadString('\n')
		var err2 error
		for err2 == nil {
			_, err2 = br.ReadByte()
		}
		if strings.TrimSpace(line) != tc.want {
			t.Errorf("%s: the agent answered %q, want %q", tc.what, line, tc.want)
		}
		var ne net.Error
		if errors.As(err2, &ne) && ne.Timeout() {
			t.Errorf("%s: the agent kept the connection open for a minute", tc.what)
		}
	}
	r, err := c.Test(context.Background(), TestRequest{Host: "127.0.0.1", Port: dataPort(a), Seconds: 1, Streams: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Err != "" || r.Seconds < 0.9 {
		t.Errorf("a 1 s test with a body timeout of 300 ms: %+v", r)
	}
}
