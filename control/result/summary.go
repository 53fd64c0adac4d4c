package result

import (
	"github.com/blastnet/blast/control/wire"
)

// Summary is a test's figures added up once from a Result: for each
// direction, in iperf3's order, each stream's sender's and receiver's
// view of the whole test and the direction's sums. The text, JSON and
// CSV renderers print from it (and from IntervalSummary for each
// interval) and add nothing up themselves, so they cannot disagree.
type Summary struct {
	// Dirs has each direction of the test, with or without streams.
	Dirs []DirSummary
}

// DirSummary is one direction of a test: the streams whose data goes one
// way. A direction without streams (a test that failed before they
// connected) has no sums: its Totals are not Known.
type DirSummary struct {
	// Sender is iperf3's sender flag: this side sends in this direction.
	Sender bool
	// Reverse marks a --bidir test's direction from the server to the
	// client (iperf3's *_bidir_reverse sums).
	Reverse bool
	// Retransmits: the direction's sending side reports retransmits.
	Retransmits bool
	Streams     []StreamSummary
	// Sent and Received are the sums of the streams' sender's and
	// receiver's views.
	Sent, Received Total
	// Packets is iperf3's datagram total of a UDP direction: each
	// stream's sender's count where known, its receiver's otherwise. The
	// direction's loss is a share of it.
	Packets int64
	// Drained is what the direction's receivers got after a time-limited
	// test's end (nil: nothing, or not known).
	Drained *wire.Drained
}

// StreamSummary is one stream's sender's and receiver's view of the
// whole test.
type StreamSummary struct {
	*StreamResult
	Sent, Received View
	// SndUDP and RcvUDP are the sender's and the receiver's datagram
	// counts of a UDP stream (nil: not known).
	SndUDP, RcvUDP *wire.UDPStats
	// Packets is iperf3's datagram total of the stream: the sender's
	// count where it has one, the receiver's otherwise.
	Packets int64
}

// View is one side's count of a stream: Bytes (-1: not known) over
// Seconds. On UDP a side whose seconds are not known takes this side's,
// as iperf3 does.
type View struct {
	Bytes   int64
	Seconds float64
}

// Known reports whether the side's count arrived.
func (v View) Known() bool { return v.Bytes >= 0 }

// Total is the sum of one view of a direction's streams.
type Total struct {
	// Known: every stream's count is known (iperf3 prints no sum
	// otherwise).
	Known bool
	// Bytes are those of the streams known, Seconds the longest.
	Bytes   int64
	Seconds float64
	// Retransmits of the streams that report them; RetrKnown: all do.
	Retransmits int64
	RetrKnown   bool
	// UDP adds up the datagram counts of this view (Jitter is the mean
	// over -P, as iperf3's); UDPKnown: every stream's count is known.
	UDP      wire.UDPStats
	UDPKnown bool
}

// Summarize adds r's streams up, direction by direction.
func Summarize(r *Result) *Summary {
	s := &Summary{}
	for _, sender := range r.Groups() {
		d := DirSummary{Sender: sender, Reverse: r.Bidir() && !r.Upstream(sender), Retransmits: r.GroupHasRetransmits(sender),
			Sent: newTotal(), Received: newTotal(), Drained: r.DrainedSum(sender)}
		for _, st := range r.Streams {
			if st.Sender != sender {
				continue
			}
			ss := summarizeStream(r, st)
			d.Sent.add(ss.Sent, st.Retransmits, ss.SndUDP)
			d.Received.add(ss.Received, 0, ss.RcvUDP)
			d.Packets += ss.Packets
			d.Streams = append(d.Streams, ss)
		}
		d.Sent.UDP.Jitter /= float64(r.NumStreams())
		d.Received.UDP.Jitter /= float64(r.NumStreams())
		s.Dirs = append(s.Dirs, d)
	}
	return s
}

func summarizeStream(r *Result, st *StreamResult) StreamSummary {
	ss := StreamSummary{StreamResult: st}
	ss.Sent.Bytes, ss.Sent.Seconds = st.SentBytes()
	ss.Received.Bytes, ss.Received.Seconds = st.ReceivedBytes()
	if r.UDP() {
		if ss.Sent.Seconds < 0 {
			ss.Sent.Seconds = st.Seconds
		}
		if ss.Received.Seconds < 0 {
			ss.Received.Seconds = st.Seconds
		}
	}
	ss.SndUDP, ss.RcvUDP = st.UDPSides()
	ss.Packets = UDPOf(ss.SndUDP).Packets
	if ss.Packets == 0 {
		ss.Packets = UDPOf(ss.RcvUDP).Packets
	}
	return ss
}

func newTotal() Total { return Total{Known: true, RetrKnown: true, UDPKnown: true} }

// empty reports whether the direction has no streams.
func (d *DirSummary) Empty() bool { return len(d.Streams) == 0 }

func (t *Total) add(v View, retr int64, u *wire.UDPStats) {
	t.Known = t.Known && v.Known()
	t.Bytes += max(v.Bytes, 0)
	t.Seconds = max(t.Seconds, v.Seconds)
	t.RetrKnown = t.RetrKnown && retr >= 0
	t.Retransmits += max(retr, 0)
	t.UDPKnown = t.UDPKnown && u != nil
	if u != nil {
		t.UDP.Packets += u.Packets
		t.UDP.Lost += u.Lost
		t.UDP.OutOfOrder += u.OutOfOrder
		t.UDP.Duplicates += u.Duplicates
		t.UDP.LossRuns += u.LossRuns
		t.UDP.Jitter += u.Jitter
	}
}

// IntervalSummary is one interval's figures, direction by direction, in
// iperf3's order.
type IntervalSummary struct {
	*Interval
	Dirs []IntervalDir
}

// IntervalDir is one direction's streams over one interval and their sum.
type IntervalDir struct {
	Sender, Reverse bool
	Streams         []*StreamInterval
	// Start and End are the first stream's (iperf3's sum line takes
	// them); Bytes is the streams' sum.
	Start, End float64
	Bytes      int64
	// TCP: a sending stream had TCP_INFO; Retransmits adds up those
	// streams' counts.
	TCP         bool
	Retransmits int64
	// UDP adds up the streams' datagrams (Jitter is the mean over -P, as
	// iperf3's).
	UDP wire.UDPStats
}

// Seconds is the length of the direction's interval.
func (d *IntervalDir) Seconds() float64 { return d.End - d.Start }

// SummarizeInterval adds one interval's streams up, direction by
// direction.
func SummarizeInterval(r *Result, iv *Interval) *IntervalSummary {
	s := &IntervalSummary{Interval: iv}
	for _, sender := range r.Groups() {
		d := IntervalDir{Sender: sender, Reverse: r.Bidir() && !r.Upstream(sender)}
		for i := range iv.Streams {
			si := &iv.Streams[i]
			if si.Sender != sender {
				continue
			}
			if len(d.Streams) == 0 {
				d.Start, d.End = si.Start, si.End
			}
			d.Streams = append(d.Streams, si)
			d.Bytes += si.Bytes
			if si.TCP != nil {
				d.TCP = true
				d.Retransmits += si.Retransmits
			}
			if u := si.UDP; u != nil {
				d.UDP.Packets += u.Packets
				d.UDP.Lost += u.Lost
				d.UDP.OutOfOrder += u.OutOfOrder
				d.UDP.Duplicates += u.Duplicates
				d.UDP.LossRuns += u.LossRuns
				d.UDP.Jitter += u.Jitter
			}
		}
		if len(d.Streams) == 0 {
			continue
		}
		d.UDP.Jitter /= float64(r.NumStreams())
		s.Dirs = append(s.Dirs, d)
	}
	return s
}
