package control

import (
	"bytes"
	"fmt"
	"github.com/blastnet/blast/report"
	"io"
	"strings"

	"github.com/blastnet/blast/nicinfo"
)

// The line formats of iperf3's text output (iperf_locale.c).
const (
	fmtBW             = "[%3d]%s %6.2f-%-6.2f sec  %ss  %ss/sec                  %s\n"
	fmtBWRetrans      = "[%3d]%s %6.2f-%-6.2f sec  %ss  %ss/sec  %3d             %s\n"
	fmtBWRetransCwnd  = "[%3d]%s %6.2f-%-6.2f sec  %ss  %ss/sec  %3d   %ss       %s\n"
	fmtSumBW          = "[SUM]%s %6.2f-%-6.2f sec  %ss  %ss/sec                  %s\n"
	fmtSumBWRetrans   = "[SUM]%s %6.2f-%-6.2f sec  %ss  %ss/sec  %3d             %s\n"
	hdrBW             = "[ ID] Interval           Transfer     Bitrate\n"
	hdrBWBidir        = "[ ID][Role] Interval           Transfer     Bitrate\n"
	hdrBWRetrans      = "[ ID] Interval           Transfer     Bitrate         Retr\n"
	hdrBWRetransBidir = "[ ID][Role] Interval           Transfer     Bitrate         Retr\n"
	hdrBWCwnd         = "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd\n"
	hdrBWCwndBidir    = "[ ID][Role] Interval           Transfer     Bitrate         Retr  Cwnd\n"
	separator         = "- - - - - - - - - - - - - - - - - - - - - - - - -\n"
	fmtCPU            = "CPU Utilization: %s/%s %.1f%% (%.1f%%u/%.1f%%s), %s/%s %.1f%% (%.1f%%u/%.1f%%s)\n"
)

func rate(bytes int64, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return float64(bytes) / secs
}

// role is the [TX-C] tag of bidirectional output.
func (r *Result) role(sender bool) string {
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
func (r *Result) groups() []bool {
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
func (r *Result) localSends() bool {
	if r.Bidir() {
		return true
	}
	return r.Reverse() != (r.Role == "client")
}

// WriteStart writes what iperf3 prints before the first interval.
func WriteStart(w io.Writer, r *Result) {
	if r.Role == "client" {
		host := r.Host
		if host == "" {
			host = r.Peer.Addr().String()
		}
		fmt.Fprintf(w, "Connecting to host %s, port %d\n", host, r.Peer.Port())
		if r.Reverse() {
			fmt.Fprintf(w, "Reverse mode, remote host %s is sending\n", host)
		}
	} else {
		fmt.Fprintf(w, "Accepted connection from %s, port %d\n", r.Peer.Addr(), r.Peer.Port())
	}
	for _, st := range r.streamsConnected() {
		fmt.Fprintf(w, "[%3d] local %s port %d connected to %s port %d\n", st.Socket, st.Local.Addr(), st.Local.Port(), st.Remote.Addr(), st.Remote.Port())
	}
}

// streamsConnected are the streams known when the test starts (the
// Result's Streams are filled only at the end; the session's are copied
// here by OnStart callers through connected).
func (r *Result) streamsConnected() []*StreamResult {
	return r.Streams
}

// WriteInterval writes one interval as iperf3 does.
func WriteInterval(w io.Writer, r *Result, iv *Interval, first bool) {
	cwnd := r.HasRetransmits || r.localSendsTCP(iv)
	if first {
		switch {
		case cwnd && r.Bidir():
			io.WriteString(w, hdrBWCwndBidir)
		case cwnd:
			io.WriteString(w, hdrBWCwnd)
		case r.Bidir():
			io.WriteString(w, hdrBWBidir)
		default:
			io.WriteString(w, hdrBW)
		}
	} else if r.NumStreams() > 1 {
		// As iperf3: -P 1 has no separator, bidirectional or not.
		io.WriteString(w, separator)
	}
	omitted := ""
	if iv.Omitted {
		omitted = "(omitted)"
	}
	for _, sender := range r.groups() {
		var sum int64
		var retr int64
		var st0 *StreamInterval
		for i := range iv.Streams {
			si := &iv.Streams[i]
			if si.Sender != sender {
				continue
			}
			if st0 == nil {
				st0 = si
			}
			sum += si.Bytes
			tr := report.IperfBytes(float64(si.Bytes))
			bw := report.IperfBits(rate(si.Bytes, si.Seconds()))
			if si.Sender && si.TCP != nil {
				retr += si.Retransmits
				fmt.Fprintf(w, fmtBWRetransCwnd, si.Socket, r.role(si.Sender), si.Start, si.End, tr, bw, si.Retransmits, report.IperfBytes(float64(si.TCP.SndCwnd)), omitted)
			} else {
				fmt.Fprintf(w, fmtBW, si.Socket, r.role(si.Sender), si.Start, si.End, tr, bw, omitted)
			}
		}
		if st0 == nil || r.NumStreams() < 2 {
			continue
		}
		tr := report.IperfBytes(float64(sum))
		bw := report.IperfBits(rate(sum, st0.Seconds()))
		if sender && st0.TCP != nil {
			fmt.Fprintf(w, fmtSumBWRetrans, r.role(sender), st0.Start, st0.End, tr, bw, retr, omitted)
		} else {
			fmt.Fprintf(w, fmtSumBW, r.role(sender), st0.Start, st0.End, tr, bw, omitted)
		}
	}
}

// peerResults reports whether the peer's results arrived: a test that
// failed may end before they do, and then nothing is known of the peer.
func (r *Result) peerResults() bool {
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

func (r *Result) localSendsTCP(iv *Interval) bool {
	for _, si := range iv.Streams {
		if si.Sender && si.TCP != nil {
			return true
		}
	}
	return false
}

// groupHasRetransmits: the sending side of a direction reported
// retransmits (this side for its senders, the peer for its).
func (r *Result) groupHasRetransmits(sender bool) bool {
	if sender {
		return r.HasRetransmits
	}
	return r.RemoteHasRetransmits
}

// WriteSummary writes iperf3's closing summary, then blast's lines.
func WriteSummary(w io.Writer, r *Result) {
	io.WriteString(w, separator)
	client := r.Role == "client"
	// Retr heads a column only where a sender line fills it: the server
	// shows only its own senders (iperf3's server prints its summary
	// before it has the client's results).
	anyRetr := r.HasRetransmits || (client && r.RemoteHasRetransmits)
	switch {
	case anyRetr && r.Bidir():
		io.WriteString(w, hdrBWRetransBidir)
	case anyRetr:
		io.WriteString(w, hdrBWRetrans)
	case r.Bidir():
		io.WriteString(w, hdrBWBidir)
	default:
		io.WriteString(w, hdrBW)
	}
	for _, sender := range r.groups() {
		retrOK := r.groupHasRetransmits(sender)
		role := r.role(sender)
		var sent, recv, retr int64
		var sentSecs, recvSecs float64
		sentOK, recvOK := true, true
		n := 0
		for _, st := range r.Streams {
			if st.Sender != sender {
				continue
			}
			n++
			sb, ss := st.SentBytes()
			rb, rs := st.ReceivedBytes()
			if sb < 0 {
				sentOK = false
			}
			if rb < 0 {
				recvOK = false
			}
			sent += sb
			recv += rb
			sentSecs = max(sentSecs, ss)
			recvSecs = max(recvSecs, rs)
			if st.Retransmits > 0 {
				retr += st.Retransmits
			}
			showSent := client || st.Sender
			showRecv := client || !st.Sender
			if showSent {
				if sb < 0 {
					fmt.Fprintf(w, "[%3d]%s (sender statistics not available)\n", st.Socket, role)
				} else if retrOK {
					fmt.Fprintf(w, fmtBWRetrans, st.Socket, role, 0.0, ss, report.IperfBytes(float64(sb)), report.IperfBits(rate(sb, ss)), max(st.Retransmits, 0), "sender")
				} else {
					fmt.Fprintf(w, fmtBW, st.Socket, role, 0.0, ss, report.IperfBytes(float64(sb)), report.IperfBits(rate(sb, ss)), "sender")
				}
			}
			if showRecv {
				if rb < 0 {
					fmt.Fprintf(w, "[%3d]%s (receiver statistics not available)\n", st.Socket, role)
				} else {
					fmt.Fprintf(w, fmtBW, st.Socket, role, 0.0, rs, report.IperfBytes(float64(rb)), report.IperfBits(rate(rb, rs)), "receiver")
				}
			}
		}
		if n == 0 || r.NumStreams() < 2 {
			continue
		}
		if (client || sender) && sentOK {
			if retrOK {
				fmt.Fprintf(w, fmtSumBWRetrans, role, 0.0, sentSecs, report.IperfBytes(float64(sent)), report.IperfBits(rate(sent, sentSecs)), retr, "sender")
			} else {
				fmt.Fprintf(w, fmtSumBW, role, 0.0, sentSecs, report.IperfBytes(float64(sent)), report.IperfBits(rate(sent, sentSecs)), "sender")
			}
		}
		if (client || !sender) && recvOK {
			fmt.Fprintf(w, fmtSumBW, role, 0.0, recvSecs, report.IperfBytes(float64(recv)), report.IperfBits(rate(recv, recvSecs)), "receiver")
		}
	}
	local, remote := "receiver", "sender"
	if r.localSends() {
		local, remote = "sender", "receiver"
	}
	if r.Bidir() {
		local, remote = "sender+receiver", "sender+receiver"
	}
	peerKnown := r.peerResults()
	if peerKnown {
		fmt.Fprintf(w, fmtCPU, "local", local, r.CPU.Total, r.CPU.User, r.CPU.System, "remote", remote, r.RemoteCPU.Total, r.RemoteCPU.User, r.RemoteCPU.System)
	} else {
		fmt.Fprintf(w, "CPU Utilization: %s/%s %.1f%% (%.1f%%u/%.1f%%s), %s/%s unknown (no results from the peer)\n", "local", local, r.CPU.Total, r.CPU.User, r.CPU.System, "remote", remote)
	}
	if r.Congestion != "" || r.RemoteCongestion != "" {
		snd, rcv := r.Congestion, r.RemoteCongestion
		if !r.localSends() {
			snd, rcv = rcv, snd
		}
		if snd != "" {
			fmt.Fprintf(w, "snd_tcp_congestion %s\n", snd)
		}
		if rcv != "" {
			fmt.Fprintf(w, "rcv_tcp_congestion %s\n", rcv)
		}
	}
	remoteBackend := r.RemoteBackend
	if remoteBackend == "" {
		remoteBackend = "not blast (iperf3?)"
		if !peerKnown {
			remoteBackend = "unknown (no results from the peer)"
		}
	}
	fmt.Fprintf(w, "Backend: local %s, remote %s\n", r.Backend, remoteBackend)
	if r.SockBufSize > 0 {
		fmt.Fprintf(w, "TCP window: requested %ss, kernel granted SO_SNDBUF %ss, SO_RCVBUF %ss (Linux doubles the request)\n",
			report.IperfBytes(float64(r.SockBufSize)), report.IperfBytes(float64(r.SndBufActual)), report.IperfBytes(float64(r.RcvBufActual)))
	}
	if r.NIC != nil && r.NIC.Interface != nil {
		nicinfo.WriteBrief(w, "local ", r.NIC)
	}
	if r.RemoteNIC != nil && r.RemoteNIC.Interface != nil {
		nicinfo.WriteBrief(w, "remote ", r.RemoteNIC)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "Note: %s\n", n)
	}
	if r.ServerOutputText != "" {
		fmt.Fprintf(w, "\nServer output:\n%s\n", r.ServerOutputText)
	}
	if len(r.ServerOutputJSON) > 0 {
		var b bytes.Buffer
		if jsonIndent(&b, r.ServerOutputJSON) == nil {
			fmt.Fprintf(w, "\nServer JSON output:\n%s\n", b.String())
		}
	}
}

// WriteText writes a whole test as iperf3's text output: start, every
// interval, summary.
func WriteText(w io.Writer, r *Result) {
	WriteStart(w, r)
	for i, iv := range r.Intervals {
		WriteInterval(w, r, iv, i == 0)
	}
	WriteSummary(w, r)
	if r.Err != nil {
		fmt.Fprintf(w, "error: %v\n", r.Err)
	}
}

// TextString is WriteText into a string.
func TextString(r *Result) string {
	var b strings.Builder
	WriteText(&b, r)
	return b.String()
}
