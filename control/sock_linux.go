package control

import (
	"fmt"
	"net"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

// queued returns the bytes in c's receive queue (in: SIOCINQ) or not yet
// acknowledged in its send queue (SIOCOUTQ).
func queued(c *engine.Socket, in bool) (int, error) {
	req := uint(unix.SIOCOUTQ)
	if in {
		req = unix.SIOCINQ
	}
	var n int
	err := c.Control(func(fd int) (err error) {
		n, err = unix.IoctlGetInt(fd, req)
		return err
	})
	return n, err
}

// congestionOf reads the congestion control algorithm of c.
func congestionOf(c *engine.Socket) string {
	var s string
	c.Control(func(fd int) (err error) {
		s, err = unix.GetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION)
		return err
	})
	return s
}

// mssOf reads TCP_MAXSEG of c (0 if unknown).
func mssOf(c *engine.Socket) int {
	v := 0
	c.Control(func(fd int) (err error) {
		v, err = unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_MAXSEG)
		return err
	})
	return v
}

// ctrlMSS reads TCP_MAXSEG of a control connection (0 if unknown).
func ctrlMSS(c net.Conn) int {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	v := 0
	rc.Control(func(fd uintptr) { v, _ = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_MAXSEG) })
	return v
}

// systemInfo is what iperf3 prints as system_info (uname -a, roughly).
func systemInfo() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	s := func(b []byte) string {
		for i, c := range b {
			if c == 0 {
				return string(b[:i])
			}
		}
		return string(b)
	}
	return fmt.Sprintf("%s %s %s %s %s", s(u.Sysname[:]), s(u.Nodename[:]), s(u.Release[:]), s(u.Version[:]), s(u.Machine[:]))
}

// cpuAllowed reports whether this process may run on CPU c.
func cpuAllowed(c int) bool {
	var set unix.CPUSet
	return c >= 0 && c <= engine.MaxCPU && unix.SchedGetaffinity(0, &set) == nil && set.IsSet(c)
}
