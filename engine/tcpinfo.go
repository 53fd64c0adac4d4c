package engine

// TCPInfo is what blast reads of a TCP socket's TCP_INFO: iperf3's fields
// (retransmits, cwnd, send window, RTT, RTT variance, path MTU, reordering),
// the send MSS, and the rates and counts the kernel keeps.
type TCPInfo struct {
	TotalRetrans int64 // segments retransmitted since the connection began
	SndCwnd      int64 // bytes: snd_cwnd * snd_mss, as iperf3 reports it
	SndWnd       int64 // bytes: the peer's advertised window
	RTT          int64 // microseconds, smoothed
	RTTVar       int64 // microseconds
	MinRTT       int64 // microseconds
	PMTU         int64
	SndMSS       int64 // bytes
	Reordering   int64
	PacingRate   int64 // bytes per second
	DeliveryRate int64 // bytes per second
	BytesAcked   int64
	NotSent      int64
	// Microseconds since the connection began (Linux 4.10+, 0 before):
	// with data in flight (busy), and of that, unable to send more
	// because the peer's advertised window was full (rwnd limited) or
	// the socket's send buffer was (sndbuf limited).
	BusyTime, RwndLimited, SndbufLimited int64
	// Retransmission timeouts since the connection began, and the
	// milliseconds spent recovering from them (Linux 6.7+, 0 before).
	TotalRTO, RTOTimeMs int64
}
