//go:build !linux

package control

import (
	"fmt"
	"net"
	"runtime"

	"github.com/blastnet/blast/engine"
)

// TCPInfo is what blast reads of TCP_INFO; it is never filled here.
type TCPInfo struct {
	TotalRetrans, SndCwnd, SndWnd, RTT, RTTVar, MinRTT, PMTU, Reordering int64
	PacingRate, DeliveryRate, BytesAcked, NotSent                        int64
}

func socketFD(c net.Conn) int                { return -1 }
func readTCPInfo(c net.Conn) (TCPInfo, bool) { return TCPInfo{}, false }
func queued(c net.Conn, in bool) (int, error) {
	return 0, fmt.Errorf("socket queues: %w", engine.ErrNotSupported)
}
func congestionOf(c net.Conn) string { return "" }
func mssOf(c net.Conn) int           { return 0 }
func systemInfo() string             { return runtime.GOOS + " " + runtime.GOARCH }

type tcpOptions struct {
	MSS        int
	Congestion string
}

func (o tcpOptions) apply(fd int) error {
	if o.MSS > 0 || o.Congestion != "" {
		return fmt.Errorf("setting the MSS or congestion control on %s: %w", runtime.GOOS, engine.ErrNotSupported)
	}
	return nil
}

func (o tcpOptions) applyConn(c net.Conn) error { return o.apply(-1) }
