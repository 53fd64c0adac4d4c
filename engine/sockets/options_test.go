package sockets_test

import (
	"context"
	"net"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine/sockets"
)

func sockopt(t *testing.T, c syscall.Conn, level, opt int) int {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var gerr error
	rc.Control(func(fd uintptr) { v, gerr = unix.GetsockoptInt(int(fd), level, opt) })
	if gerr != nil {
		t.Fatal(gerr)
	}
	return v
}

func TestOptionsApplied(t *testing.T) {
	for _, network := range []string{"tcp4", "tcp6"} {
		t.Run(network, func(t *testing.T) {
			addr := "127.0.0.1:0"
			if network == "tcp6" {
				addr = "[::1]:0"
			}
			o := sockets.Options{SndBuf: 65536, RcvBuf: 131072, TOS: 0x10, NoDelay: true}
			ln, err := (&net.ListenConfig{Control: o.Control()}).Listen(context.Background(), network, addr)
			if err != nil {
				t.Skip(err)
			}
			defer ln.Close()
			c, err := (&net.Dialer{Control: o.Control()}).Dial(network, ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			sc := c.(syscall.Conn)
			// Linux doubles the request for its bookkeeping; BufSize reports
			// what it granted, which is what ttcp prints.
			if got, err := sockets.BufSize(sc, true); err != nil || got != 2*65536 {
				t.Errorf("SO_SNDBUF granted %d (%v), want %d", got, err, 2*65536)
			}
			if got, err := sockets.BufSize(sc, false); err != nil || got != 2*131072 {
				t.Errorf("SO_RCVBUF granted %d (%v), want %d", got, err, 2*131072)
			}
			if got := sockopt(t, sc, unix.IPPROTO_TCP, unix.TCP_NODELAY); got != 1 {
				t.Errorf("TCP_NODELAY = %d, want 1", got)
			}
			level, opt := unix.IPPROTO_IP, unix.IP_TOS
			if network == "tcp6" {
				level, opt = unix.IPPROTO_IPV6, unix.IPV6_TCLASS
			}
			if got := sockopt(t, sc, level, opt); got != 0x10 {
				t.Errorf("TOS = %#x, want 0x10", got)
			}
		})
	}
}

func TestOptionsDefaultsLeaveSocketAlone(t *testing.T) {
	o := sockets.Options{TOS: -1}
	c, err := (&net.Dialer{Control: o.Control()}).Dial("udp4", "127.0.0.1:9")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := sockopt(t, c.(syscall.Conn), unix.IPPROTO_IP, unix.IP_TOS); got != 0 {
		t.Errorf("TOS = %#x without -S, want the default 0", got)
	}
}

func TestBindToMissingDevice(t *testing.T) {
	o := sockets.Options{TOS: -1, Device: "nosuchdev0"}
	_, err := (&net.Dialer{Control: o.Control()}).Dial("udp4", "127.0.0.1:9")
	if err == nil {
		t.Fatal("dial bound to a missing interface succeeded")
	}
	if !strings.Contains(err.Error(), "bind to interface nosuchdev0: no such interface (see 'ip link')") {
		t.Errorf("error %q does not name the missing interface", err)
	}
}
