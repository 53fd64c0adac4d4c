package wire

// The UDP datagram sizes of iperf3's protocol.
const (
	// MinUDPBlock is the smallest UDP datagram iperf3 sends: the 4-byte
	// seconds, 4-byte microseconds and 8-byte (room for a 64-bit)
	// sequence number.
	MinUDPBlock = 16
	// MaxUDPBlock is the largest UDP payload over IPv4.
	MaxUDPBlock = 65507
	// DefaultUDPBlock is iperf3's UDP datagram size when the control
	// connection's MSS is not known.
	DefaultUDPBlock = 1460
)

// MaxServerAffinity is the largest CPU iperf3 lets -A name.
const MaxServerAffinity = 1024

// UDPStats are the datagram counts of one UDP stream on one side, as
// iperf3 keeps them (iperf_udp.c). On the sending side only Packets is
// set: the datagrams sent. On the receiving side Packets is the highest
// sequence number seen (iperf3's packet_count, so lost datagrams are in
// it), Lost the gaps in the sequence less the late datagrams that filled
// them, OutOfOrder the datagrams that arrived after a higher-numbered one,
// Duplicates (blast only; iperf3 counts them as out of order) the
// datagrams seen twice, LossRuns (blast only) the gaps the sequence
// jumped over, each a run of one or more datagrams lost (Lost/LossRuns
// is how long the runs were: near 1 for loss at random, hundreds for a
// queue a burst overflowed), and Jitter the RFC 3550 smoothed
// transit-time variation in seconds.
type UDPStats struct {
	Packets    int64   `json:"packets"`
	Lost       int64   `json:"lost"`
	OutOfOrder int64   `json:"out_of_order"`
	Duplicates int64   `json:"duplicates"`
	LossRuns   int64   `json:"loss_runs,omitempty"`
	Jitter     float64 `json:"jitter"`
}

// LostPercent is Lost as a share of Packets, in percent (0 with no
// packets).
func (u *UDPStats) LostPercent() float64 {
	if u == nil || u.Packets <= 0 {
		return 0
	}
	return 100 * float64(u.Lost) / float64(u.Packets)
}

// Drained is what a receiver read after the test's end: Bytes (Datagrams
// on UDP) over the Seconds from the end to the last of them.
type Drained struct {
	Bytes     int64   `json:"bytes"`
	Datagrams int64   `json:"datagrams,omitempty"`
	Seconds   float64 `json:"seconds"`
}

// Sub is u less the counts of base; the jitter stays u's.
func (u UDPStats) Sub(base UDPStats) UDPStats {
	return UDPStats{Packets: u.Packets - base.Packets, Lost: u.Lost - base.Lost,
		OutOfOrder: u.OutOfOrder - base.OutOfOrder, Duplicates: u.Duplicates - base.Duplicates,
		LossRuns: u.LossRuns - base.LossRuns, Jitter: u.Jitter}
}
