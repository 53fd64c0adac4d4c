//go:build linux

package sockets_test

import (
	"context"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

// The socket options a mode asks for are engine.SockOpts, applied by
// engine.Dial and engine.Listen; these tests read them back from the
// kernel with getsockopt.

// sockState is what getsockopt says about the options SockOpts sets.
type sockState struct {
	SndBuf, RcvBuf int // granted: Linux doubles the request
	TOS            int // IP_TOS, or IPV6_TCLASS on a v6 socket
	NoDelay        int
	MSS            int // TCP_MAXSEG: the segment size in use, at most the one asked for
	Congestion     string
}

func readBack(t *testing.T, s *engine.Socket) sockState {
	t.Helper()
	var st sockState
	err := s.Control(func(fd int) error {
		get := func(level, opt int) int {
			v, err := unix.GetsockoptInt(fd, level, opt)
			if err != nil {
				t.Fatalf("getsockopt %d/%d: %v", level, opt, err)
			}
			return v
		}
		st.SndBuf = get(unix.SOL_SOCKET, unix.SO_SNDBUF)
		st.RcvBuf = get(unix.SOL_SOCKET, unix.SO_RCVBUF)
		if s.LocalAddr().Addr().Is4() {
			st.TOS = get(unix.IPPROTO_IP, unix.IP_TOS)
		} else {
			st.TOS = get(unix.IPPROTO_IPV6, unix.IPV6_TCLASS)
		}
		if s.Protocol() == engine.TCP {
			st.NoDelay = get(unix.IPPROTO_TCP, unix.TCP_NODELAY)
			st.MSS = get(unix.IPPROTO_TCP, unix.TCP_MAXSEG)
			cc, err := unix.GetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION)
			if err != nil {
				t.Fatalf("getsockopt TCP_CONGESTION: %v", err)
			}
			st.Congestion = cc
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// asked are the options the tests ask for, and want what the kernel must
// report for them on TCP (MSS: at most).
var (
	asked = engine.SockOpts{SndBuf: 65536, RcvBuf: 131072, TOS: 0x10, Nagle: true, MSS: 1000, Congestion: "reno"}
	want  = sockState{SndBuf: 2 * 65536, RcvBuf: 2 * 131072, TOS: 0x10, NoDelay: 0, MSS: 1000, Congestion: "reno"}
)

// checkState compares got with want, MSS as an upper bound (the kernel
// takes room for TCP options out of it).
func checkState(t *testing.T, got, want sockState) {
	t.Helper()
	if got.MSS > want.MSS || got.MSS <= 0 {
		t.Errorf("TCP_MAXSEG = %d, want at most %d", got.MSS, want.MSS)
	}
	got.MSS, want.MSS = 0, 0
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("socket options (-want +got):\n%s", diff)
	}
}

func TestSockOptsDial(t *testing.T) {
	for _, tc := range []struct {
		network, addr string
	}{
		{"tcp4", "127.0.0.1:0"},
		{"tcp6", "[::1]:0"},
		{"udp4", "127.0.0.1:0"},
	} {
		t.Run(tc.network, func(t *testing.T) {
			var peer string
			if strings.HasPrefix(tc.network, "udp") {
				c, err := net.ListenPacket(tc.network, tc.addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				peer = c.LocalAddr().String()
			} else {
				ln, err := net.Listen(tc.network, tc.addr)
				if err != nil {
					t.Skipf("no %s loopback: %v", tc.network, err)
				}
				defer ln.Close()
				peer = ln.Addr().String()
			}
			s, err := engine.Dial(context.Background(), tc.network, peer, asked)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			w := want
			if s.Protocol() == engine.UDP {
				w = sockState{SndBuf: want.SndBuf, RcvBuf: want.RcvBuf, TOS: want.TOS}
				if got := readBack(t, s); got != w {
					t.Errorf("socket options (-want +got):\n%s", cmp.Diff(w, got))
				}
				return
			}
			checkState(t, readBack(t, s), w)
			// BufSize reports what the kernel granted, which is what
			// ttcp prints.
			if got, err := s.BufSize(true); err != nil || got != w.SndBuf {
				t.Errorf("BufSize(send) = %d, %v; want %d", got, err, w.SndBuf)
			}
			if got, err := s.BufSize(false); err != nil || got != w.RcvBuf {
				t.Errorf("BufSize(receive) = %d, %v; want %d", got, err, w.RcvBuf)
			}
		})
	}
}

// TestSockOptsListen checks that the options set on a listener reach the
// sockets it accepts.
func TestSockOptsListen(t *testing.T) {
	ctx := context.Background()
	ln, err := engine.Listen(ctx, "tcp4", "127.0.0.1:0", asked)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if got, err := ln.BufSize(false); err != nil || got != want.RcvBuf {
		t.Errorf("listener BufSize(receive) = %d, %v; want %d", got, err, want.RcvBuf)
	}
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkState(t, readBack(t, s), want)
}

// TestSockOptsDefaults checks that options not asked for are left as the
// kernel makes them.
func TestSockOptsDefaults(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s, err := engine.Dial(context.Background(), "tcp4", ln.Addr().String(), engine.SockOpts{TOS: engine.NoTOS})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cc, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
	if err != nil {
		t.Fatal(err)
	}
	got := readBack(t, s)
	if got.TOS != 0 || got.NoDelay != 1 || got.Congestion != strings.TrimSpace(string(cc)) {
		t.Errorf("TOS %#x, TCP_NODELAY %d, congestion control %q without options; want 0, 1 (blast's default) and the system's %q",
			got.TOS, got.NoDelay, got.Congestion, strings.TrimSpace(string(cc)))
	}
}

// TestSockOptsLocal dials from a chosen local address.
func TestSockOptsLocal(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	from := netip.MustParseAddr("127.0.0.2")
	s, err := engine.Dial(context.Background(), "tcp4", ln.Addr().String(), engine.SockOpts{TOS: engine.NoTOS, Local: netip.AddrPortFrom(from, 0)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := s.LocalAddr().Addr(); got != from {
		t.Errorf("local address %v, want %v", got, from)
	}
	if got := c.RemoteAddr().(*net.TCPAddr).AddrPort(); got != s.LocalAddr() {
		t.Errorf("the peer sees %v, the socket says it is %v", got, s.LocalAddr())
	}
}

// TestSockOptsRefused checks that options the system cannot honour fail
// the dial with words a user can act on.
func TestSockOptsRefused(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tc := range []struct {
		opts engine.SockOpts
		want string
	}{
		{engine.SockOpts{TOS: engine.NoTOS, Device: "nosuchdev0"}, "bind to interface nosuchdev0: no such interface (see 'ip link')"},
		{engine.SockOpts{TOS: engine.NoTOS, Congestion: "nosuchcc"}, `congestion control "nosuchcc" is not available here`},
	} {
		s, err := engine.Dial(context.Background(), "tcp4", ln.Addr().String(), tc.opts)
		if err == nil {
			s.Close()
			t.Errorf("dial with %+v succeeded, want it refused", tc.opts)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("dial with %+v: error %q does not say %q", tc.opts, err, tc.want)
		}
	}
}
