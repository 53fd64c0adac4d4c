package engine

import "golang.org/x/sys/unix"

// TCPInfo samples the socket's TCP_INFO.
func (s *Socket) TCPInfo() (TCPInfo, error) {
	var ti *unix.TCPInfo
	if err := s.Control(func(fd int) (err error) {
		ti, err = unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		return err
	}); err != nil {
		return TCPInfo{}, err
	}
	return TCPInfo{
		TotalRetrans:  int64(ti.Total_retrans),
		SndCwnd:       int64(ti.Snd_cwnd) * int64(ti.Snd_mss),
		SndWnd:        int64(ti.Snd_wnd),
		RTT:           int64(ti.Rtt),
		RTTVar:        int64(ti.Rttvar),
		MinRTT:        int64(ti.Min_rtt),
		PMTU:          int64(ti.Pmtu),
		SndMSS:        int64(ti.Snd_mss),
		Reordering:    int64(ti.Reordering),
		PacingRate:    int64(ti.Pacing_rate),
		DeliveryRate:  int64(ti.Delivery_rate),
		BytesAcked:    int64(ti.Bytes_acked),
		NotSent:       int64(ti.Notsent_bytes),
		BusyTime:      int64(ti.Busy_time),
		RwndLimited:   int64(ti.Rwnd_limited),
		SndbufLimited: int64(ti.Sndbuf_limited),
		TotalRTO:      int64(ti.Total_rto),
		RTOTimeMs:     int64(ti.Total_rto_time),
	}, nil
}
