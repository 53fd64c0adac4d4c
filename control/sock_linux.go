package control

import (
	"fmt"
	"net"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

// TCPInfo is what blast reads of TCP_INFO for one stream: iperf3's fields
// (retransmits, cwnd, send window, RTT, RTT variance, path MTU, reordering)
// and the rates the kernel keeps (pacing, delivery).
type TCPInfo struct {
	TotalRetrans int64 // segments retransmitted since the connection began
	SndCwnd      int64 // bytes: snd_cwnd * snd_mss, as iperf3 reports it
	SndWnd       int64 // bytes: the peer's advertised window
	RTT          int64 // microseconds, smoothed
	RTTVar       int64 // microseconds
	MinRTT       int64 // microseconds
	PMTU         int64
	Reordering   int64
	PacingRate   int64 // bytes per second
	DeliveryRate int64 // bytes per second
	BytesAcked   int64
	NotSent      int64
}

// readTCPInfo samples TCP_INFO on c.
func readTCPInfo(c *engine.Socket) (TCPInfo, bool) {
	var ti *unix.TCPInfo
	if err := c.Control(func(fd int) (err error) {
		ti, err = unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		return err
	}); err != nil {
		return TCPInfo{}, false
	}
	return TCPInfo{
		TotalRetrans: int64(ti.Total_retrans),
		SndCwnd:      int64(ti.Snd_cwnd) * int64(ti.Snd_mss),
		SndWnd:       int64(ti.Snd_wnd),
		RTT:          int64(ti.Rtt),
		RTTVar:       int64(ti.Rttvar),
		MinRTT:       int64(ti.Min_rtt),
		PMTU:         int64(ti.Pmtu),
		Reordering:   int64(ti.Reordering),
		PacingRate:   int64(ti.Pacing_rate),
		DeliveryRate: int64(ti.Delivery_rate),
		BytesAcked:   int64(ti.Bytes_acked),
		NotSent:      int64(ti.Notsent_bytes),
	}, true
}

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
