package control

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
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

// socketFD returns the descriptor number of c (iperf3 labels streams with
// it), or -1.
func socketFD(c net.Conn) int {
	rc, err := fdOf(c)
	if err != nil {
		return -1
	}
	fd := -1
	rc.Control(func(f uintptr) { fd = int(f) })
	return fd
}

// readTCPInfo samples TCP_INFO on c.
func readTCPInfo(c net.Conn) (TCPInfo, bool) {
	rc, err := fdOf(c)
	if err != nil {
		return TCPInfo{}, false
	}
	var ti *unix.TCPInfo
	var gerr error
	if err := rc.Control(func(fd uintptr) { ti, gerr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil || gerr != nil {
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
func queued(c net.Conn, in bool) (int, error) {
	rc, err := fdOf(c)
	if err != nil {
		return 0, err
	}
	req := uint(unix.SIOCOUTQ)
	if in {
		req = unix.SIOCINQ
	}
	var n int
	var ierr error
	if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), req) }); err != nil {
		return 0, err
	}
	return n, ierr
}

// tcpOptions are the TCP options iperf3 sets that sockets.Options does
// not: the MSS and the congestion control algorithm.
type tcpOptions struct {
	MSS        int
	Congestion string
}

func (o tcpOptions) apply(fd int) error {
	if o.MSS > 0 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_MAXSEG, o.MSS); err != nil {
			return fmt.Errorf("set TCP_MAXSEG %d: %w", o.MSS, err)
		}
	}
	if o.Congestion != "" {
		if err := unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, o.Congestion); err != nil {
			if err == unix.ENOENT {
				return fmt.Errorf("congestion control %q is not available here (see /proc/sys/net/ipv4/tcp_available_congestion_control)", o.Congestion)
			}
			if err == unix.EPERM {
				return fmt.Errorf("congestion control %q is not allowed for unprivileged use (add it to net.ipv4.tcp_allowed_congestion_control, or run as root)", o.Congestion)
			}
			return fmt.Errorf("set TCP_CONGESTION %q: %w", o.Congestion, err)
		}
	}
	return nil
}

// applyConn sets o on a connected socket.
func (o tcpOptions) applyConn(c net.Conn) error {
	rc, err := fdOf(c)
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = o.apply(int(fd)) }); err != nil {
		return err
	}
	return serr
}

// congestionOf reads the congestion control algorithm of c.
func congestionOf(c net.Conn) string {
	rc, err := fdOf(c)
	if err != nil {
		return ""
	}
	var s string
	rc.Control(func(fd uintptr) {
		v, err := unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
		if err == nil {
			s = v
		}
	})
	return s
}

// mssOf reads TCP_MAXSEG of c (0 if unknown).
func mssOf(c net.Conn) int {
	rc, err := fdOf(c)
	if err != nil {
		return 0
	}
	v := 0
	rc.Control(func(fd uintptr) {
		if m, err := unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_MAXSEG); err == nil {
			v = m
		}
	})
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
