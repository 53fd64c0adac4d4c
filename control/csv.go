package control

import (
	"encoding/csv"
	"io"
	"strconv"
)

// csvHeader is the one header line of WriteCSV. The unit of each
// figure is in its name; a cell holds a plain decimal number, true or
// false, or nothing where the figure does not apply.
var csvHeader = []string{
	"kind", "stream", "sender", "omitted", "start_s", "end_s", "bytes", "bits_per_second",
	"retransmits", "cwnd_bytes", "rtt_us", "max_cwnd_bytes", "min_rtt_us", "mean_rtt_us", "max_rtt_us",
	"packets", "lost", "out_of_order", "duplicates", "jitter_ms",
}

// Column indexes of csvHeader.
const (
	csvKind = iota
	csvStream
	csvSender
	csvOmitted
	csvStart
	csvEnd
	csvBytes
	csvBitsPerSec
	csvRetransmits
	csvCwnd
	csvRTT
	csvMaxCwnd
	csvMinRTT
	csvMeanRTT
	csvMaxRTT
	csvPackets
	csvLost
	csvOutOfOrder
	csvDuplicates
	csvJitter
	csvColumns
)

// WriteCSV writes r as CSV: one header line, then for each interval and
// direction (in iperf3's order) a row per stream and the direction's sum,
// then for each direction a stream's two views of the whole test, stream
// by stream, and the direction's two sums. The kind column says which:
//
//   - interval: one stream over one interval, as this side counted it.
//     cwnd_bytes and rtt_us are the sending stream's TCP_INFO at the
//     interval's end; packets, lost, out_of_order, duplicates and
//     jitter_ms are the UDP stream's datagrams of the interval (a sender
//     counts only packets; jitter is the running value at the end).
//   - interval_sum: the streams of one direction over one interval, as
//     iperf3's per-interval sum (the jitter averaged over the streams).
//   - stream_sent and stream_received: one stream over the whole test
//     (the omitted intervals left out), as its sender and as its
//     receiver counted it, as iperf3's "sender" and "receiver" lines;
//     the max_ and min_/mean_ TCP figures are the sender's.
//   - sum_sent and sum_received: the streams of one direction over the
//     whole test, as iperf3's sum_sent and sum_received (the jitter
//     averaged over the streams).
//
// stream is the stream's id (empty on sums). sender is iperf3's: true
// when this side sends on the stream or direction, so that the two
// directions of a --bidir test are told apart by it. omitted applies to
// intervals only. A figure that does not apply, or that the side it
// belongs to did not report (the peer's totals of a test that failed,
// TCP_INFO a peer keeps to itself), is an empty cell; a view of the
// totals that is not known at all has no row. A Result that never
// connected has the header alone.
//
// Seconds have 6 decimals, bits per second none, the jitter 6 (to the
// nanosecond); counts are integers.
func WriteCSV(w io.Writer, r *Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	if r.connected() {
		for _, iv := range r.Intervals {
			for _, row := range csvInterval(r, iv) {
				if err := cw.Write(row); err != nil {
					return err
				}
			}
		}
		for _, row := range csvSummary(r) {
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// csvRow is an empty row of kind.
func csvRow(kind string) []string {
	row := make([]string, csvColumns)
	row[csvKind] = kind
	return row
}

func csvInt(v int64) string { return strconv.FormatInt(v, 10) }

func csvFloat(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }

// csvSpan fills the span and the rate of bytes over it.
func csvSpan(row []string, start, end float64, bytes int64) {
	row[csvStart], row[csvEnd] = csvFloat(start, 6), csvFloat(end, 6)
	row[csvBytes] = csvInt(bytes)
	row[csvBitsPerSec] = csvFloat(8*rate(bytes, end-start), 0)
}

// csvUDP fills a UDP count: the packets alone for a sender, the
// receiver's figures otherwise.
func csvUDP(row []string, u UDPStats, sender bool) {
	row[csvPackets] = csvInt(u.Packets)
	if sender {
		return
	}
	row[csvLost] = csvInt(u.Lost)
	row[csvOutOfOrder] = csvInt(u.OutOfOrder)
	row[csvDuplicates] = csvInt(u.Duplicates)
	row[csvJitter] = csvFloat(1000*u.Jitter, 6)
}

// csvInterval is one interval's rows: each direction's streams, then its
// sum.
func csvInterval(r *Result, iv *Interval) [][]string {
	var rows [][]string
	for _, sender := range r.groups() {
		var sum UDPStats
		var bytes, retr int64
		var st0 *StreamInterval
		hasTCP := false
		n := 0
		for i := range iv.Streams {
			si := &iv.Streams[i]
			if si.Sender != sender {
				continue
			}
			if st0 == nil {
				st0 = si
			}
			n++
			row := csvRow("interval")
			row[csvStream] = strconv.Itoa(si.ID)
			row[csvSender] = strconv.FormatBool(si.Sender)
			row[csvOmitted] = strconv.FormatBool(si.Omitted)
			csvSpan(row, si.Start, si.End, si.Bytes)
			if t := si.TCP; t != nil {
				row[csvRetransmits] = csvInt(si.Retransmits)
				row[csvCwnd] = csvInt(t.SndCwnd)
				row[csvRTT] = csvInt(t.RTT)
				retr += si.Retransmits
				hasTCP = true
			}
			if si.UDP != nil {
				u := *si.UDP
				csvUDP(row, u, si.Sender)
				sum.Packets += u.Packets
				sum.Lost += u.Lost
				sum.OutOfOrder += u.OutOfOrder
				sum.Duplicates += u.Duplicates
				sum.Jitter += u.Jitter
			}
			bytes += si.Bytes
			rows = append(rows, row)
		}
		if st0 == nil {
			continue
		}
		row := csvRow("interval_sum")
		row[csvSender] = strconv.FormatBool(sender)
		row[csvOmitted] = strconv.FormatBool(iv.Omitted)
		csvSpan(row, st0.Start, st0.End, bytes)
		if hasTCP {
			row[csvRetransmits] = csvInt(retr)
		}
		if r.UDP() {
			sum.Jitter /= float64(n)
			csvUDP(row, sum, sender)
		}
		rows = append(rows, row)
	}
	return rows
}

// csvSummary is the rows after the intervals: per direction, each
// stream's sent and received views, then the direction's sums.
func csvSummary(r *Result) [][]string {
	var rows [][]string
	for _, sender := range r.groups() {
		retrOK := !r.UDP() && r.groupHasRetransmits(sender)
		sent, recv := newCSVTotal(), newCSVTotal()
		n := 0
		for _, st := range r.Streams {
			if st.Sender != sender {
				continue
			}
			n++
			snd, rcv := st.udpSides()
			sb, ss := st.SentBytes()
			if sb >= 0 {
				row := csvRow("stream_sent")
				row[csvStream] = strconv.Itoa(st.ID)
				row[csvSender] = strconv.FormatBool(sender)
				csvSpan(row, 0, ss, sb)
				if retrOK && st.Retransmits >= 0 {
					row[csvRetransmits] = csvInt(st.Retransmits)
				}
				csvSenderTCP(row, r, st)
				if snd != nil {
					csvUDP(row, *snd, true)
				}
				rows = append(rows, row)
			}
			sent.add(sb, ss, st.Retransmits, snd)
			rb, rs := st.ReceivedBytes()
			if rb >= 0 {
				row := csvRow("stream_received")
				row[csvStream] = strconv.Itoa(st.ID)
				row[csvSender] = strconv.FormatBool(sender)
				csvSpan(row, 0, rs, rb)
				if rcv != nil {
					csvUDP(row, *rcv, false)
				}
				rows = append(rows, row)
			}
			recv.add(rb, rs, 0, rcv)
		}
		if n == 0 {
			continue
		}
		if sent.known {
			row := csvRow("sum_sent")
			row[csvSender] = strconv.FormatBool(sender)
			csvSpan(row, 0, sent.secs, sent.bytes)
			if retrOK && sent.retrOK {
				row[csvRetransmits] = csvInt(sent.retr)
			}
			if sent.udpOK {
				csvUDP(row, sent.udp, true)
			}
			rows = append(rows, row)
		}
		if recv.known {
			row := csvRow("sum_received")
			row[csvSender] = strconv.FormatBool(sender)
			csvSpan(row, 0, recv.secs, recv.bytes)
			if recv.udpOK {
				// As iperf3: the jitter averaged over the streams.
				recv.udp.Jitter /= float64(n)
				csvUDP(row, recv.udp, false)
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// csvSenderTCP fills the whole-test TCP_INFO figures of a stream's
// sender: this side's when it sends, the peer's when it does and is
// blast (which reports no maximum RTT).
func csvSenderTCP(row []string, r *Result, st *StreamResult) {
	if r.UDP() {
		return
	}
	switch {
	case st.Sender && st.MaxSndCwnd > 0:
		row[csvMaxCwnd] = csvInt(st.MaxSndCwnd)
		row[csvMinRTT] = csvInt(st.MinRTT)
		row[csvMeanRTT] = csvInt(st.MeanRTT)
		row[csvMaxRTT] = csvInt(st.MaxRTT)
	case !st.Sender && st.PeerTCP != nil:
		row[csvMaxCwnd] = csvInt(st.PeerTCP.MaxSndCwnd)
		row[csvMinRTT] = csvInt(st.PeerTCP.MinRTT)
		row[csvMeanRTT] = csvInt(st.PeerTCP.MeanRTT)
	}
}

// csvTotal adds up one view (sent or received) of a direction's streams:
// known, retrOK and udpOK stay true while every stream's bytes,
// retransmits and datagram counts are known.
type csvTotal struct {
	known, retrOK, udpOK bool
	bytes, retr          int64
	secs                 float64
	udp                  UDPStats
}

func newCSVTotal() *csvTotal { return &csvTotal{known: true, retrOK: true, udpOK: true} }

func (t *csvTotal) add(bytes int64, secs float64, retr int64, u *UDPStats) {
	t.known = t.known && bytes >= 0
	t.bytes += bytes
	t.secs = max(t.secs, secs)
	t.retrOK = t.retrOK && retr >= 0
	t.retr += retr
	t.udpOK = t.udpOK && u != nil
	if u != nil {
		t.udp.Packets += u.Packets
		t.udp.Lost += u.Lost
		t.udp.OutOfOrder += u.OutOfOrder
		t.udp.Duplicates += u.Duplicates
		t.udp.Jitter += u.Jitter
	}
}
