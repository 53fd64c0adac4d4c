package result

import (
	"errors"
	"fmt"
	"strings"

	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/nicinfo"
)

// CPUUtil is the CPU the process used over a test, in percent of one CPU
// of wall-clock time, as iperf3 computes it from getrusage: total, user
// and system.
type CPUUtil struct {
	Total, User, System float64
	// UserSeconds and SystemSeconds are the same CPU time in seconds
	// (blast peers exchange them; from iperf3 they are 0).
	UserSeconds, SystemSeconds float64
	// Pauses are the process's stop-the-world pauses over the test (nil:
	// unknown: a peer that is not blast).
	Pauses *engine.Pauses
}

// Stall is the longest time a direction of a test moved no byte between
// its first and its last, as the client's watch saw it (a check every
// 100 ms at most): Start seconds into the test, for Seconds (0: none).
type Stall struct {
	Start, Seconds float64
}

// ErrInvalid fails a test that ran to its end but whose measurement is not
// valid: a finding on either end says so (the link went down during it).
var ErrInvalid = errors.New("the result is not valid")

func Rate(bytes int64, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return float64(bytes) / secs
}

// role is the [TX-C] tag of bidirectional output.
func (r *Result) RoleTag(sender bool) string {
	if !r.Bidir() {
		return ""
	}
	d, side := "RX", "S"
	if sender {
		d = "TX"
	}
	if r.Role == "client" {
		side = "C"
	}
	return "[" + d + "-" + side + "]"
}

// groups are the stream directions in the order iperf3 prints them: the
// client's senders first, the server's receivers first.
func (r *Result) Groups() []bool {
	if !r.Bidir() {
		for _, st := range r.Streams {
			return []bool{st.Sender}
		}
		if len(r.Intervals) > 0 && len(r.Intervals[0].Streams) > 0 {
			return []bool{r.Intervals[0].Streams[0].Sender}
		}
		return []bool{!r.Reverse() == (r.Role == "client")}
	}
	if r.Role == "client" {
		return []bool{true, false}
	}
	return []bool{false, true}
}

// localSends reports whether this side sends on some stream.
func (r *Result) LocalSends() bool {
	if r.Bidir() {
		return true
	}
	return r.Reverse() != (r.Role == "client")
}

// peerResults reports whether the peer's results arrived: a test that
// failed may end before they do, and then nothing is known of the peer.
func (r *Result) PeerResults() bool {
	if r.RemoteBackend != "" || len(r.Streams) == 0 {
		return true
	}
	for _, st := range r.Streams {
		if st.PeerBytes >= 0 {
			return true
		}
	}
	return false
}

// groupHasRetransmits: the sending side of a direction reported
// retransmits (this side for its senders, the peer for its).
func (r *Result) GroupHasRetransmits(sender bool) bool {
	if sender {
		return r.HasRetransmits
	}
	return r.RemoteHasRetransmits
}

// udpOf is a copy of u, zero when u is nil.
func UDPOf(u *wire.UDPStats) wire.UDPStats {
	if u == nil {
		return wire.UDPStats{}
	}
	return *u
}

// udpSides gives the sending and the receiving side's datagram counts of
// a UDP stream, whichever side this is (nil: not known).
func (s *StreamResult) UDPSides() (snd, rcv *wire.UDPStats) {
	if s.Sender {
		return s.UDP, s.PeerUDP
	}
	return s.PeerUDP, s.UDP
}

// streamsConnected are the streams known when the test starts (the
// Result's Streams are filled only at the end; the session's are copied
// here by OnStart callers through connected).
func (r *Result) streamsConnected() []*StreamResult {
	return r.Streams
}

// goodput is the rate of the bytes this side moved, in bits per second.
func (r *Result) Goodput() float64 {
	var b int64
	var secs float64
	for _, st := range r.Streams {
		b += st.Bytes
		secs = max(secs, st.Seconds)
	}
	return 8 * Rate(b, secs)
}

// invalid is ErrInvalid with the finding that makes r invalid, or nil.
func (r *Result) Invalid() error {
	if r == nil {
		return nil
	}
	for _, side := range []struct {
		where string
		nic   *nicinfo.Result
	}{{"here", r.NIC}, {"on the peer", r.RemoteNIC}} {
		if f := side.nic.Invalid(); f != nil {
			return fmt.Errorf("%w: %s, %s", ErrInvalid, f, side.where)
		}
	}
	return nil
}

// verifyErr is the failure of a --verify test, in one line: the peer is
// not blast, it did not check a stream, or blocks arrived corrupt or
// missing (or, on TCP, out of place). nil when the test did not verify.
func (r *Result) VerifyErr() error {
	if r.Params.Blast == nil || !r.Params.Blast.Verify || !r.PeerResults() {
		return nil
	}
	if r.RemoteVersion == "" {
		return errors.New("--verify needs blast at both ends: the server is not blast (iperf3?), so it neither checked the blocks sent to it nor sent blocks to check")
	}
	var fails []string
	for _, st := range r.Streams {
		c, where := st.Verify, "here"
		if st.Sender {
			c, where = st.PeerVerify, "at the server"
		}
		if c == nil {
			fails = append(fails, fmt.Sprintf("stream %d: not verified %s (see its notes)", st.ID, where))
			continue
		}
		if err := c.Err(); err != nil {
			fails = append(fails, fmt.Sprintf("stream %d, checked %s: %v", st.ID, where, err))
		}
	}
	if len(fails) == 0 {
		return nil
	}
	return errors.New(strings.Join(fails, "; "))
}
