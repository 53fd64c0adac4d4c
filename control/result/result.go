package result

import (
	"encoding/json"
	"net/netip"
	"time"

	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/internal/hostload"
	"github.com/blastnet/blast/internal/verify"
	"github.com/blastnet/blast/nicinfo"
	"github.com/blastnet/blast/pathinfo"
)

// Version is what blast calls itself on the wire and in results.
const Version = "blast 0.1 (iperf3 3.x protocol)"

// Result is everything one side of a test knows when it ends: its own
// measurements, and the peer's totals as exchanged. Every renderer reads
// only this.
type Result struct {
	Role       string // "client" or "server"
	Version    string
	SystemInfo string
	Time       time.Time // when the control connection was made

	// Peer is the host:port connected to (client) or accepted from
	// (server, the control connection's remote address).
	Peer   netip.AddrPort
	Host   string // the host name as given (client)
	Cookie string

	Params        wire.Params // as sent (client) or received (server)
	TCPMSSDefault int
	SockBufSize   int // -w as asked (0: autotuning)
	SndBufActual  int // what the kernel granted on the first stream
	RcvBufActual  int

	// Streams in id order.
	Streams []*StreamResult
	// Intervals in time order; the last one may be short.
	Intervals []*Interval

	CPU, RemoteCPU CPUUtil
	// HasRetransmits / RemoteHasRetransmits: the side sent and can read
	// retransmits (iperf3's sender_has_retransmits == 1).
	HasRetransmits, RemoteHasRetransmits bool
	Congestion, RemoteCongestion         string

	// Backend actually used here and by the peer ("" if the peer is not
	// blast).
	Backend, RemoteBackend string
	RemoteVersion          string
	// RemoteErrors are the peer's data stream failures, if it is blast.
	RemoteErrors []string
	Notes        []string

	// Load is this side's host load over the measured test (--sys);
	// RemoteLoad and RemoteLoadIntervals the peer's, if it is blast.
	Load, RemoteLoad    *hostload.Load
	RemoteLoadIntervals []hostload.Load

	// NIC is the interface that carried the traffic on this side (state,
	// counter deltas, findings); RemoteNIC the peer's, if it is blast.
	NIC, RemoteNIC *nicinfo.Result
	// Path is this side's host path facts over the test (its qdiscs and
	// policers with their counter deltas, SNMP counter deltas), Sysctls
	// its buffer settings; RemotePath and RemoteSysctls the peer's, if it
	// is blast. RemoteSndBuf and RemoteRcvBuf are the buffers the peer's
	// kernel granted.
	Path, RemotePath           *pathinfo.Delta
	Sysctls, RemoteSysctls     map[string]string
	RemoteSndBuf, RemoteRcvBuf int
	// SendStall and RecvStall are the longest stalls of this side's
	// senders and receivers between their first and last bytes (the
	// client's watch; none on the server).
	SendStall, RecvStall Stall
	// Findings are the path and transport findings of the test (pathdiag,
	// D14 and up, and D7 for --bidir), both ends' facts judged together;
	// the interfaces' own findings are in NIC and RemoteNIC.
	Findings []finding.Finding

	ServerOutputText string
	ServerOutputJSON json.RawMessage

	// File is the client's -F file: what it sent from or received into.
	File *DiskFile
	// BlockLenAuto: the UDP block size followed the control connection's
	// MSS, as iperf3 chooses it when -l is not given.
	BlockLenAuto bool

	// Err is set when the test failed; what was measured up to then is
	// still in the Result.
	Err error
}

// DiskFile is a test's -F file: its name and its size once the test was
// over (what was sent from it, or what was written to it).
type DiskFile struct {
	Name string
	Size int64
}

// connected reports whether the control connection was made (Time is
// set then): a Result without one has no start, intervals or summary.
func (r *Result) Connected() bool { return !r.Time.IsZero() }

// ReceivedBitsPerSecond is the rate at which the receivers got the test's
// bytes, both directions together, over the longest stream's seconds (0
// when no receiver's count is known).
func (r *Result) ReceivedBitsPerSecond() float64 {
	var b int64
	var secs float64
	for _, st := range r.Streams {
		got, s := st.ReceivedBytes()
		if got < 0 {
			continue
		}
		b += got
		secs = max(secs, s)
	}
	if secs <= 0 {
		return 0
	}
	return 8 * float64(b) / secs
}

// Reverse reports whether the server sends (-R).
func (r *Result) Reverse() bool { return bool(r.Params.Reverse) }

// Bidir reports whether both sides send (--bidir).
func (r *Result) Bidir() bool { return bool(r.Params.Bidirectional) }

// NumStreams is the -P figure (streams per direction).
func (r *Result) NumStreams() int {
	if r.Params.Parallel < 1 {
		return 1
	}
	return int(r.Params.Parallel)
}

// TCPInfo is a sending stream's TCP_INFO sample.
type TCPInfo = engine.TCPInfo

// StreamResult is one stream's totals, seen from this side, plus the
// peer's totals for the same stream.
type StreamResult struct {
	ID     int
	Socket int // this side's descriptor number (iperf3 labels lines with it)
	// Sender is true when this side sends on the stream.
	Sender        bool
	Local, Remote netip.AddrPort

	// Bytes this side moved after the omit period, and the seconds from
	// the start of the measured period to the end.
	Bytes   int64
	Seconds float64
	// PeerBytes and PeerSeconds are the peer's figures (-1: not received).
	PeerBytes   int64
	PeerSeconds float64
	// Retransmits by the sending side (-1: not known).
	Retransmits int64
	// TCP_INFO summary of a sending stream on this side.
	MaxSndCwnd, MaxSndWnd, MinRTT, MaxRTT, MeanRTT int64
	// PMTU and MSS are the sending stream's last path MTU and send MSS;
	// Acked the bytes the peer acknowledged since the connection began.
	PMTU, MSS, Acked int64
	// Limits are the sending stream's busy and limited times over the
	// test.
	Limits wire.TCPLimits
	// PeerTCP is the same summary from the peer when it sent on the
	// stream and is blast.
	PeerTCP *wire.TCPSummary

	// UDP is this side's datagram count on a UDP stream (nil on TCP);
	// PeerUDP the peer's, from its results.
	UDP, PeerUDP *wire.UDPStats

	IO     engine.Sample  // this side's I/O counters
	PeerIO *engine.Sample // the peer's, if it is blast
	// Facts are what this side's backend reported (engine.Facts);
	// PeerFacts the peer's, if it is blast and reported any.
	Facts     engine.FactSample
	PeerFacts *engine.FactSample
	// Verify is what this side's receiver found on the stream with
	// --verify; PeerVerify what the peer's did (nil: not checked there).
	Verify, PeerVerify *verify.Counts
	// Drained is what this side received after a time-limited test's end
	// (nil: nothing): bytes still queued on the path when the senders
	// stopped. They are in none of the stream's figures (Bytes, the
	// intervals), which cover the test's time only. PeerDrained is the
	// peer's, if it is blast.
	Drained, PeerDrained *wire.Drained
	// Thread is what this side's data thread of the stream spent (nil:
	// not measured); PeerThread the peer's, if it is blast.
	Thread, PeerThread *wire.ThreadTimes
}

// drained sums what the receivers of the streams this side sends on
// (sender) or receives on got after the test's end: this side's counts
// or the peer's. Nil when nothing came after the end, or it is not known.
func (r *Result) DrainedSum(sender bool) *wire.Drained {
	var sum *wire.Drained
	for _, st := range r.Streams {
		if st.Sender != sender {
			continue
		}
		d := st.Drained
		if st.Sender {
			d = st.PeerDrained
		}
		if d == nil {
			continue
		}
		if sum == nil {
			sum = &wire.Drained{}
		}
		sum.Bytes += d.Bytes
		sum.Datagrams += d.Datagrams
		sum.Seconds = max(sum.Seconds, d.Seconds)
	}
	return sum
}

// SentBytes and ReceivedBytes give the sender's and receiver's view of the
// stream whichever side this is, with the seconds each measured over.
func (s *StreamResult) SentBytes() (int64, float64) {
	if s.Sender {
		return s.Bytes, s.Seconds
	}
	return s.PeerBytes, s.PeerSeconds
}

// ReceivedBytes: see SentBytes.
func (s *StreamResult) ReceivedBytes() (int64, float64) {
	if !s.Sender {
		return s.Bytes, s.Seconds
	}
	return s.PeerBytes, s.PeerSeconds
}

// Interval is one reporting interval.
type Interval struct {
	Streams []StreamInterval
	Omitted bool
	// Load is this side's host load over the interval (--sys).
	Load *hostload.Load
}

// StreamInterval is one stream during one interval. Start and End are
// seconds since the start of the test (of the measured period after the
// omit period ends).
type StreamInterval struct {
	ID      int
	Socket  int
	Sender  bool
	Start   float64
	End     float64
	Bytes   int64
	Omitted bool
	// TCP is set for sending streams when TCP_INFO could be read;
	// Retransmits is the count in this interval.
	TCP         *TCPInfo
	Retransmits int64
	IO          engine.Sample // I/O calls in this interval
	// UDP is set on UDP streams: the datagrams of this interval (Jitter
	// is the running value at its end).
	UDP *wire.UDPStats
}

// UDP reports whether the test runs over UDP.
func (r *Result) UDP() bool { return bool(r.Params.UDP) }

// Seconds is the length of the interval.
func (s StreamInterval) Seconds() float64 { return s.End - s.Start }

// sumGroups splits streams by direction: streams whose data goes from the
// client to the server first, then those going the other way (iperf3's
// "sum" and "sum_bidir_reverse" in bidirectional tests).
func (r *Result) Upstream(sender bool) bool {
	if r.Role == "client" {
		return sender
	}
	return !sender
}
