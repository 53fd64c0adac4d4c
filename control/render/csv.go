package render

import (
	"encoding/csv"
	"io"
	"strconv"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
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
func WriteCSV(w io.Writer, r *result.Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	if r.Connected() {
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
	row[csvBitsPerSec] = csvFloat(8*result.Rate(bytes, end-start), 0)
}

// csvUDP fills a UDP count: the packets alone for a sender, the
// receiver's figures otherwise.
func csvUDP(row []string, u wire.UDPStats, sender bool) {
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
func csvInterval(r *result.Result, iv *result.Interval) [][]string {
	var rows [][]string
	for _, d := range result.SummarizeInterval(r, iv).Dirs {
		for _, si := range d.Streams {
			row := csvRow("interval")
			row[csvStream] = strconv.Itoa(si.ID)
			row[csvSender] = strconv.FormatBool(si.Sender)
			row[csvOmitted] = strconv.FormatBool(si.Omitted)
			csvSpan(row, si.Start, si.End, si.Bytes)
			if t := si.TCP; t != nil {
				row[csvRetransmits] = csvInt(si.Retransmits)
				row[csvCwnd] = csvInt(t.SndCwnd)
				row[csvRTT] = csvInt(t.RTT)
			}
			if si.UDP != nil {
				csvUDP(row, *si.UDP, si.Sender)
			}
			rows = append(rows, row)
		}
		row := csvRow("interval_sum")
		row[csvSender] = strconv.FormatBool(d.Sender)
		row[csvOmitted] = strconv.FormatBool(iv.Omitted)
		csvSpan(row, d.Start, d.End, d.Bytes)
		if d.TCP {
			row[csvRetransmits] = csvInt(d.Retransmits)
		}
		if r.UDP() {
			csvUDP(row, d.UDP, d.Sender)
		}
		rows = append(rows, row)
	}
	return rows
}

// csvSummary is the rows after the intervals: per direction, each
// stream's sent and received views, then the direction's sums.
func csvSummary(r *result.Result) [][]string {
	var rows [][]string
	for _, d := range result.Summarize(r).Dirs {
		if d.Empty() {
			continue
		}
		retrOK := !r.UDP() && d.Retransmits
		for _, ss := range d.Streams {
			rows = append(rows, csvStreamRows(r, &d, &ss, retrOK)...)
		}
		if snt := &d.Sent; snt.Known {
			row := csvRow("sum_sent")
			row[csvSender] = strconv.FormatBool(d.Sender)
			csvSpan(row, 0, snt.Seconds, snt.Bytes)
			if retrOK && snt.RetrKnown {
				row[csvRetransmits] = csvInt(snt.Retransmits)
			}
			if snt.UDPKnown {
				csvUDP(row, snt.UDP, true)
			}
			rows = append(rows, row)
		}
		if rcv := &d.Received; rcv.Known {
			row := csvRow("sum_received")
			row[csvSender] = strconv.FormatBool(d.Sender)
			csvSpan(row, 0, rcv.Seconds, rcv.Bytes)
			if rcv.UDPKnown {
				// As iperf3: the jitter averaged over the streams.
				csvUDP(row, rcv.UDP, false)
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// csvStreamRows is a stream's stream_sent and stream_received rows, those
// whose view is known.
func csvStreamRows(r *result.Result, d *result.DirSummary, ss *result.StreamSummary, retrOK bool) [][]string {
	var rows [][]string
	if snt := ss.Sent; snt.Known() {
		row := csvRow("stream_sent")
		row[csvStream] = strconv.Itoa(ss.ID)
		row[csvSender] = strconv.FormatBool(d.Sender)
		csvSpan(row, 0, snt.Seconds, snt.Bytes)
		if retrOK && ss.Retransmits >= 0 {
			row[csvRetransmits] = csvInt(ss.Retransmits)
		}
		csvSenderTCP(row, r, ss.StreamResult)
		if ss.SndUDP != nil {
			csvUDP(row, *ss.SndUDP, true)
		}
		rows = append(rows, row)
	}
	if rcv := ss.Received; rcv.Known() {
		row := csvRow("stream_received")
		row[csvStream] = strconv.Itoa(ss.ID)
		row[csvSender] = strconv.FormatBool(d.Sender)
		csvSpan(row, 0, rcv.Seconds, rcv.Bytes)
		if ss.RcvUDP != nil {
			csvUDP(row, *ss.RcvUDP, false)
		}
		rows = append(rows, row)
	}
	return rows
}

// csvSenderTCP fills the whole-test TCP_INFO figures of a stream's
// sender: this side's when it sends, the peer's when it does and is
// blast (which reports no maximum RTT).
func csvSenderTCP(row []string, r *result.Result, st *result.StreamResult) {
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
