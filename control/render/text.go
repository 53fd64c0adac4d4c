package render

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/internal/safetext"
	"github.com/blastnet/blast/units"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/hostload"
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

// The UDP formats (iperf_locale.c of iperf3 3.21: report_bw_udp_header,
// report_bw_udp_header_bidir, report_bw_udp_sender_header,
// report_bw_udp_format, report_bw_udp_sender_format,
// report_sum_bw_udp_format, report_sum_bw_udp_sender_format,
// report_sum_outoforder). The sender formats take iperf3's zbuf: ten
// spaces in bidirectional tests, nothing otherwise.
const (
	hdrUDP            = "[ ID] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams\n"
	hdrUDPBidir       = "[ ID][Role] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams\n"
	hdrUDPSender      = "[ ID] Interval           Transfer     Bitrate         Total Datagrams\n"
	fmtBWUDP          = "[%3d]%s %6.2f-%-6.2f sec  %ss  %ss/sec  %5.3f ms  %d/%d (%.2g%%)  %s\n"
	fmtBWUDPSender    = "[%3d]%s %6.2f-%-6.2f sec  %ss  %ss/sec %s %d  %s\n"
	fmtSumBWUDP       = "[SUM]%s %6.2f-%-6.2f sec  %ss  %ss/sec  %5.3f ms  %d/%d (%.2g%%)  %s\n"
	fmtSumBWUDPSender = "[SUM]%s %6.2f-%-6.2f sec  %ss  %ss/sec %s %d  %s\n"
	fmtSumOutOfOrder  = "[SUM]%s %4.1f-%4.1f sec  %d datagrams received out-of-order\n"
	udpZbuf           = "          "
)

// Text renders Results as iperf3's text output. The zero value writes
// what iperf3 writes by default.
type Text struct {
	// Verbose is iperf3's -V: the lines iperf3 writes before the test
	// (version, system, control connection MSS, time, cookie, MSS,
	// target bitrate, "Starting Test"), "Test Complete. Summary
	// Results:", the CPU utilization and the congestion controls where
	// iperf3 writes them; and blast's lines after the summary: the
	// backends, the socket buffers granted, the NICs.
	Verbose bool
	// Format is iperf3's -f, the unit of every Bitrate: k, m, g or t for
	// 1000-based bits per second, K, M, G or T for 1024-based bytes per
	// second; 0 (or 'a') picks a bit unit for each value, as iperf3 does.
	// Transfer and Cwnd keep their own adaptive byte units, as in iperf3.
	Format byte

	// tail writes the CPU, congestion and blast lines at the end of the
	// summary without Verbose: what the package-level functions write,
	// the blast server's report.
	tail bool
}

// serverText is what the package-level functions write: iperf3's default
// lines, then after the summary the CPU and congestion lines and blast's
// (the report a blast server keeps and sends for --get-server-output).
var serverText = Text{tail: true}

// bits renders a rate given in bytes per second in t's Format, as
// iperf3's unit_snprintf does with -f (the caller adds "s/sec").
func (t Text) bits(bytesPerSec float64) string {
	if t.Format == 0 {
		return units.Iperf(bytesPerSec, 'a')
	}
	return units.Iperf(bytesPerSec, t.Format)
}

// WriteStart writes what iperf3 prints before the first interval, as the
// blast server reports it (see Text for the client's options).
func WriteStart(w io.Writer, r *result.Result) { serverText.WriteStart(w, r) }

// WriteStart writes what iperf3 prints before the first interval: who
// connected to whom and the streams; with Verbose also the version, the
// system, the control connection's MSS, the time, the cookie, the MSS and
// target bitrate, and the "Starting Test" line.
func (t Text) WriteStart(w io.Writer, r *result.Result) {
	client := r.Role == "client"
	if t.Verbose && client {
		fmt.Fprintf(w, "%s\n%s\n", r.Version, r.SystemInfo)
		fmt.Fprintf(w, "Control connection MSS %d\n", r.TCPMSSDefault)
		if r.UDP() && r.BlockLenAuto {
			fmt.Fprintf(w, "Setting UDP block size to %d\n", r.Params.BlockLen())
		}
	}
	if t.Verbose {
		fmt.Fprintf(w, "Time: %s\n", r.Time.UTC().Format(rfc1123GMT))
	}
	if client {
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
	if t.Verbose {
		fmt.Fprintf(w, "      Cookie: %s\n", r.Cookie)
		if !r.UDP() {
			if r.Params.MSS > 0 {
				fmt.Fprintf(w, "      TCP MSS: %d\n", r.Params.MSS)
			} else {
				fmt.Fprintf(w, "      TCP MSS: %d (default)\n", r.TCPMSSDefault)
			}
		}
		if r.Params.Bandwidth > 0 {
			fmt.Fprintf(w, "      Target Bitrate: %d\n", r.Params.Bandwidth)
		}
	}
	for _, st := range r.Streams {
		fmt.Fprintf(w, "[%3d] local %s port %d connected to %s port %d\n", st.Socket, st.Local.Addr(), st.Local.Port(), st.Remote.Addr(), st.Remote.Port())
	}
	if t.Verbose {
		proto := "TCP"
		if r.UDP() {
			proto = "UDP"
		}
		fmt.Fprintf(w, "Starting Test: protocol: %s, %d streams, %d byte blocks, omitting %d seconds, ", proto, r.NumStreams(), r.Params.BlockLen(), r.Params.Omit)
		switch {
		case r.Params.Num > 0:
			fmt.Fprintf(w, "%d bytes to send", r.Params.Num)
		case r.Params.BlockCount > 0:
			fmt.Fprintf(w, "%d blocks to send", r.Params.BlockCount)
		default:
			fmt.Fprintf(w, "%d second test", r.Params.Time)
		}
		fmt.Fprintf(w, ", tos %d\n", r.Params.TOS)
	}
}

// rfc1123GMT is iperf3's strftime("%a, %d %b %Y %H:%M:%S %Z") of gmtime.
const rfc1123GMT = "Mon, 02 Jan 2006 15:04:05 GMT"

// WriteInterval writes one interval as iperf3 does (first: the test's
// first, which gets the column titles).
func WriteInterval(w io.Writer, r *result.Result, iv *result.Interval, first bool) {
	serverText.WriteInterval(w, r, iv, first)
}

// WriteInterval writes one interval as iperf3 does (first: the test's
// first, which gets the column titles).
func (t Text) WriteInterval(w io.Writer, r *result.Result, iv *result.Interval, first bool) {
	if r.UDP() {
		t.writeIntervalUDP(w, r, iv, first)
	} else {
		t.writeIntervalTCP(w, r, iv, first)
	}
	if iv.Load != nil && len(iv.Streams) > 0 {
		writeLoad(w, iv.Streams[0].Start, iv.Streams[0].End, iv.Load, "")
	}
}

// writeIntervalTCP writes a TCP test's interval lines.
func (t Text) writeIntervalTCP(w io.Writer, r *result.Result, iv *result.Interval, first bool) {
	cwnd := r.HasRetransmits || localSendsTCP(iv)
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
	for _, d := range result.SummarizeInterval(r, iv).Dirs {
		role := r.RoleTag(d.Sender)
		for _, si := range d.Streams {
			tr := units.IperfBytes(float64(si.Bytes))
			bw := t.bits(result.Rate(si.Bytes, si.Seconds()))
			if si.Sender && si.TCP != nil {
				fmt.Fprintf(w, fmtBWRetransCwnd, si.Socket, role, si.Start, si.End, tr, bw, si.Retransmits, units.IperfBytes(float64(si.TCP.SndCwnd)), omitted)
			} else {
				fmt.Fprintf(w, fmtBW, si.Socket, role, si.Start, si.End, tr, bw, omitted)
			}
		}
		if r.NumStreams() < 2 {
			continue
		}
		tr := units.IperfBytes(float64(d.Bytes))
		bw := t.bits(result.Rate(d.Bytes, d.Seconds()))
		if d.Sender && d.TCP {
			fmt.Fprintf(w, fmtSumBWRetrans, role, d.Start, d.End, tr, bw, d.Retransmits, omitted)
		} else {
			fmt.Fprintf(w, fmtSumBW, role, d.Start, d.End, tr, bw, omitted)
		}
	}
}

func localSendsTCP(iv *result.Interval) bool {
	for _, si := range iv.Streams {
		if si.Sender && si.TCP != nil {
			return true
		}
	}
	return false
}

// WriteSummary writes iperf3's closing summary, then the CPU, congestion
// and blast's lines, as the blast server reports it.
func WriteSummary(w io.Writer, r *result.Result) { serverText.WriteSummary(w, r) }

// WriteSummary writes iperf3's closing summary, then blast's lines.
func (t Text) WriteSummary(w io.Writer, r *result.Result) {
	io.WriteString(w, separator)
	if t.Verbose {
		io.WriteString(w, "Test Complete. Summary Results:\n")
	}
	if r.UDP() {
		t.writeSummaryUDP(w, r)
	} else {
		t.writeSummaryTCP(w, r)
	}
	t.writeSummaryTail(w, r)
}

// groupTail writes what iperf3 writes after the summary lines of one
// direction (iperf_print_results): with -V, where that direction is this
// side's sending one, the CPU utilization (twice in a bidirectional
// test, once per role) and, on TCP, the congestion controls of every
// direction; then, after the first direction, the server's output if the
// client asked for it. (iperf3 leaves the CPU line out of a -R client's
// report; so does this.) The package-level functions write all of it
// after the summary instead (writeSummaryTail).
func (t Text) groupTail(w io.Writer, r *result.Result, sender, first bool) {
	if t.tail {
		return
	}
	if t.Verbose && sender {
		if r.Bidir() {
			t.writeCPU(w, r, "sender", "receiver")
			t.writeCPU(w, r, "receiver", "sender")
		} else {
			t.writeCPU(w, r, "sender", "receiver")
		}
	}
	if t.Verbose && !r.UDP() {
		snd, rcv := r.Congestion, r.RemoteCongestion
		if !sender {
			snd, rcv = rcv, snd
		}
		if snd != "" {
			fmt.Fprintf(w, "snd_tcp_congestion %s\n", snd)
		}
		if rcv != "" {
			fmt.Fprintf(w, "rcv_tcp_congestion %s\n", rcv)
		}
	}
	if first {
		writeServerOutput(w, r)
	}
}

// writeCPU writes iperf3's CPU utilization line, or blast's when the
// peer's results never came.
func (t Text) writeCPU(w io.Writer, r *result.Result, local, remote string) {
	if r.PeerResults() {
		fmt.Fprintf(w, fmtCPU, "local", local, r.CPU.Total, r.CPU.User, r.CPU.System, "remote", remote, r.RemoteCPU.Total, r.RemoteCPU.User, r.RemoteCPU.System)
		return
	}
	fmt.Fprintf(w, "CPU Utilization: %s/%s %.1f%% (%.1f%%u/%.1f%%s), %s/%s unknown (no results from the peer)\n", "local", local, r.CPU.Total, r.CPU.User, r.CPU.System, "remote", remote)
}

// writeServerOutput writes the server's report a client asked for with
// --get-server-output, JSON first, as iperf3 does; nothing if it did not
// ask.
func writeServerOutput(w io.Writer, r *result.Result) {
	if r.Role != "client" || r.Params.GetServerOutput == 0 {
		return
	}
	if len(r.ServerOutputJSON) > 0 {
		var b bytes.Buffer
		if jsonIndent(&b, r.ServerOutputJSON) == nil {
			fmt.Fprintf(w, "\nServer JSON output:\n%s\n", b.String())
		}
	}
	if r.ServerOutputText != "" {
		fmt.Fprintf(w, "\nServer output:\n%s\n", r.ServerOutputText)
	}
}

// writeSummaryTCP writes the header and the stream lines of a TCP test's
// summary.
func (t Text) writeSummaryTCP(w io.Writer, r *result.Result) {
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
	for gi, d := range result.Summarize(r).Dirs {
		role := r.RoleTag(d.Sender)
		for _, ss := range d.Streams {
			t.writeStreamTCP(w, r, &d, &ss)
		}
		if !d.Empty() && r.NumStreams() > 1 {
			snt, rcv := &d.Sent, &d.Received
			if (client || d.Sender) && snt.Known {
				if d.Retransmits {
					fmt.Fprintf(w, fmtSumBWRetrans, role, 0.0, snt.Seconds, units.IperfBytes(float64(snt.Bytes)), t.bits(result.Rate(snt.Bytes, snt.Seconds)), snt.Retransmits, "sender")
				} else {
					fmt.Fprintf(w, fmtSumBW, role, 0.0, snt.Seconds, units.IperfBytes(float64(snt.Bytes)), t.bits(result.Rate(snt.Bytes, snt.Seconds)), "sender")
				}
			}
			if (client || !d.Sender) && rcv.Known {
				fmt.Fprintf(w, fmtSumBW, role, 0.0, rcv.Seconds, units.IperfBytes(float64(rcv.Bytes)), t.bits(result.Rate(rcv.Bytes, rcv.Seconds)), "receiver")
			}
		}
		if dr := d.Drained; dr != nil && (client || !d.Sender) {
			fmt.Fprintf(w, "[SUM]%s drained after the end: %ss in %.0f ms, counted in no figure above\n", role, units.IperfBytes(float64(dr.Bytes)), 1000*dr.Seconds)
		}
		t.groupTail(w, r, d.Sender, gi == 0)
	}
}

// writeStreamTCP writes a TCP stream's summary lines: its sender's view
// and its receiver's (the server only its own), and the -F file's line.
func (t Text) writeStreamTCP(w io.Writer, r *result.Result, d *result.DirSummary, ss *result.StreamSummary) {
	client := r.Role == "client"
	role := r.RoleTag(d.Sender)
	snt, rcv := ss.Sent, ss.Received
	if client || ss.StreamResult.Sender {
		switch {
		case !snt.Known():
			fmt.Fprintf(w, "[%3d]%s (sender statistics not available)\n", ss.Socket, role)
		case d.Retransmits:
			fmt.Fprintf(w, fmtBWRetrans, ss.Socket, role, 0.0, snt.Seconds, units.IperfBytes(float64(snt.Bytes)), t.bits(result.Rate(snt.Bytes, snt.Seconds)), max(ss.Retransmits, 0), "sender")
		default:
			fmt.Fprintf(w, fmtBW, ss.Socket, role, 0.0, snt.Seconds, units.IperfBytes(float64(snt.Bytes)), t.bits(result.Rate(snt.Bytes, snt.Seconds)), "sender")
		}
	}
	if r.File != nil {
		moved := snt.Bytes
		if !d.Sender {
			moved = rcv.Bytes
		}
		writeDiskFile(w, r.File, moved)
	}
	if client || !ss.StreamResult.Sender {
		if !rcv.Known() {
			fmt.Fprintf(w, "[%3d]%s (receiver statistics not available)\n", ss.Socket, role)
		} else {
			fmt.Fprintf(w, fmtBW, ss.Socket, role, 0.0, rcv.Seconds, units.IperfBytes(float64(rcv.Bytes)), t.bits(result.Rate(rcv.Bytes, rcv.Seconds)), "receiver")
		}
	}
}

// writeDiskFile writes iperf3's line for the -F file under a stream's
// summary: the bytes the stream moved out of the file's size (what was
// sent of it, or what was written to it), in percent.
func writeDiskFile(w io.Writer, f *result.DiskFile, moved int64) {
	pct := 100
	if f.Size > 0 {
		pct = int(float64(max(moved, 0)) / float64(f.Size) * 100)
	}
	fmt.Fprintf(w, "        Sent %s / %s (%d%%) of %s\n", units.IperfBytes(float64(max(moved, 0))), units.IperfBytes(float64(f.Size)), pct, f.Name)
}

// writePauses writes one side's stop-the-world pauses over the test:
// "Pauses: local 12 stop-the-world pauses, 1.23 ms in all, p99 at most
// 0.26 ms, the longest at most 0.26 ms". Nothing when unknown.
func writePauses(w io.Writer, side string, p *engine.Pauses) {
	if p == nil {
		return
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	fmt.Fprintf(w, "Pauses: %s %d stop-the-world pauses, %.2f ms in all, p99 at most %.2f ms, the longest at most %.2f ms\n",
		side, p.Count, ms(p.Total), ms(p.P99), ms(p.Max))
}

// writeThreads writes how one side's streams ran (engine.Free or locked
// threads), what CPU they used and how often they left it: "Threads:
// local 4 free flows (unlocked goroutines in raw calls), CPU 38% of a
// core each on average, 12 voluntary and 3 involuntary context switches
// per 10 ms". Nothing when no stream's thread was measured.
func writeThreads(w io.Writer, side string, r *result.Result, get func(*result.StreamResult) *wire.ThreadTimes) {
	var n, free int
	var wall, cpu, vol, invol int64
	for i := range r.Streams {
		t := get(r.Streams[i])
		if t == nil || t.WallNs <= 0 {
			continue
		}
		n++
		if t.Free {
			free++
		}
		wall += t.WallNs
		cpu += t.CPUNs
		vol += t.VolSwitches
		invol += t.InvolSwitches
	}
	if n == 0 {
		return
	}
	how := fmt.Sprintf("%d free flow(s) (unlocked goroutines in raw calls)", n)
	switch free {
	case 0:
		how = fmt.Sprintf("%d locked thread(s)", n)
	case n:
	default:
		how = fmt.Sprintf("%d free flow(s) and %d locked thread(s)", free, n-free)
	}
	per10ms := func(c int64) float64 { return float64(c) / (float64(wall) / float64(10*time.Millisecond)) }
	fmt.Fprintf(w, "Threads: %s %s, CPU %.0f%% of a core each on average, %.1f voluntary and %.1f involuntary context switches per 10 ms\n",
		side, how, 100*float64(cpu)/float64(wall), per10ms(vol), per10ms(invol))
}

// writeSummaryTail writes what follows the stream lines. The
// package-level functions write the CPU line and the congestion controls
// here, then blast's lines and the server's output; a Text writes blast's
// lines with Verbose only, notes always.
func (t Text) writeSummaryTail(w io.Writer, r *result.Result) {
	if t.tail {
		local, remote := "receiver", "sender"
		if r.LocalSends() {
			local, remote = "sender", "receiver"
		}
		if r.Bidir() {
			local, remote = "sender+receiver", "sender+receiver"
		}
		t.writeCPU(w, r, local, remote)
		// iperf3 prints the congestion control of TCP tests only.
		if !r.UDP() && (r.Congestion != "" || r.RemoteCongestion != "") {
			snd, rcv := r.Congestion, r.RemoteCongestion
			if !r.LocalSends() {
				snd, rcv = rcv, snd
			}
			if snd != "" {
				fmt.Fprintf(w, "snd_tcp_congestion %s\n", snd)
			}
			if rcv != "" {
				fmt.Fprintf(w, "rcv_tcp_congestion %s\n", rcv)
			}
		}
	}
	if t.tail || t.Verbose {
		remoteBackend := r.RemoteBackend
		if remoteBackend == "" {
			remoteBackend = "not blast (iperf3?)"
			if !r.PeerResults() {
				remoteBackend = "unknown (no results from the peer)"
			}
		}
		fmt.Fprintf(w, "Backend: local %s, remote %s\n", r.Backend, remoteBackend)
		writeThreads(w, "local", r, func(sr *result.StreamResult) *wire.ThreadTimes { return sr.Thread })
		writePauses(w, "local", r.CPU.Pauses)
		writePauses(w, "remote", r.RemoteCPU.Pauses)
		writeThreads(w, "remote", r, func(sr *result.StreamResult) *wire.ThreadTimes { return sr.PeerThread })
		if r.SockBufSize > 0 {
			what := "TCP window"
			if r.UDP() {
				what = "UDP buffer"
			}
			fmt.Fprintf(w, "%s: requested %ss, kernel granted SO_SNDBUF %ss, SO_RCVBUF %ss (Linux doubles the request)\n", what,
				units.IperfBytes(float64(r.SockBufSize)), units.IperfBytes(float64(r.SndBufActual)), units.IperfBytes(float64(r.RcvBufActual)))
		}
		if r.NIC != nil && r.NIC.Interface != nil {
			nicinfo.WriteBrief(w, "local ", r.NIC)
		}
		if r.RemoteNIC != nil && r.RemoteNIC.Interface != nil {
			nicinfo.WriteBrief(w, "remote ", r.RemoteNIC)
		}
	}
	// The path findings say why it was slow: WARN and ERROR always,
	// INFO with -V.
	ew := safetext.Writer(w)
	for _, f := range r.Findings {
		if f.Severity >= finding.Warn || t.Verbose {
			fmt.Fprintf(ew, "path %s: %s (%s). Fix: %s\n", f.Head(), f.Summary, f.Evidence, f.Fix)
		}
	}
	writeLoads(w, r)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "Note: %s\n", n)
	}
	if r.UDP() {
		writeDuplicates(w, r)
		writeSendWaits(w, r)
	}
	writePaceBehind(w, r)
	writeVerify(w, r)
	if t.tail {
		writeServerOutput(w, r)
	}
}

// WriteText writes a whole test as iperf3's text output, as the blast
// server reports it.
func WriteText(w io.Writer, r *result.Result) { serverText.WriteText(w, r) }

// WriteText writes a whole test as iperf3's text output: start, every
// interval, summary, and the error that ended it, if one did.
func (t Text) WriteText(w io.Writer, r *result.Result) {
	t.WriteStart(w, r)
	for i, iv := range r.Intervals {
		t.WriteInterval(w, r, iv, i == 0)
	}
	t.WriteSummary(w, r)
	if r.Err != nil {
		fmt.Fprintf(w, "error: %v\n", r.Err)
	}
}

// TextString is WriteText into a string.
func TextString(r *result.Result) string { return serverText.String(r) }

// String is WriteText into a string.
func (t Text) String(r *result.Result) string {
	var b strings.Builder
	t.WriteText(&b, r)
	return b.String()
}

// lostPercent is iperf3's loss figure, 100*lost/packets (0 without
// packets).
func lostPercent(lost, packets int64) float64 {
	if packets <= 0 {
		return 0
	}
	return 100 * float64(lost) / float64(packets)
}

// outOfOrder is the out-of-order count iperf3 would show for u: iperf3
// counts a duplicate as a datagram out of order (iperf_udp_recv).
func outOfOrder(u *wire.UDPStats) int64 {
	if u == nil {
		return 0
	}
	return u.OutOfOrder + u.Duplicates
}

// writeIntervalUDP is WriteInterval for UDP tests (iperf_print_intermediate
// and print_interval_results in iperf_api.c): the sender's header on a
// side that only sends, the receiver's otherwise, even in bidirectional
// tests where the sending streams' lines leave Jitter and Lost blank.
func (t Text) writeIntervalUDP(w io.Writer, r *result.Result, iv *result.Interval, first bool) {
	if first {
		switch {
		case r.Bidir():
			io.WriteString(w, hdrUDPBidir)
		case r.LocalSends():
			io.WriteString(w, hdrUDPSender)
		default:
			io.WriteString(w, hdrUDP)
		}
	} else if r.NumStreams() > 1 {
		io.WriteString(w, separator)
	}
	omitted := ""
	if iv.Omitted {
		omitted = "(omitted)"
	}
	zbuf := ""
	if r.Bidir() {
		zbuf = udpZbuf
	}
	for _, d := range result.SummarizeInterval(r, iv).Dirs {
		role := r.RoleTag(d.Sender)
		for _, si := range d.Streams {
			u := result.UDPOf(si.UDP)
			tr := units.IperfBytes(float64(si.Bytes))
			bw := t.bits(result.Rate(si.Bytes, si.Seconds()))
			if si.Sender {
				fmt.Fprintf(w, fmtBWUDPSender, si.Socket, role, si.Start, si.End, tr, bw, zbuf, u.Packets, omitted)
			} else {
				fmt.Fprintf(w, fmtBWUDP, si.Socket, role, si.Start, si.End, tr, bw, 1000*u.Jitter, u.Lost, u.Packets, lostPercent(u.Lost, u.Packets), omitted)
			}
		}
		if r.NumStreams() < 2 {
			continue
		}
		tr := units.IperfBytes(float64(d.Bytes))
		bw := t.bits(result.Rate(d.Bytes, d.Seconds()))
		if u := d.UDP; d.Sender {
			fmt.Fprintf(w, fmtSumBWUDPSender, role, d.Start, d.End, tr, bw, zbuf, u.Packets, omitted)
		} else {
			// iperf3 averages the jitter over -P, and counts the loss
			// over the datagrams the receivers saw.
			fmt.Fprintf(w, fmtSumBWUDP, role, d.Start, d.End, tr, bw, 1000*u.Jitter, u.Lost, u.Packets, lostPercent(u.Lost, u.Packets), omitted)
		}
	}
}

// writeSummaryUDP writes the header and the stream lines of a UDP test's
// summary (iperf_print_results in iperf_api.c). A sender line shows the
// datagrams sent with no jitter or loss, a receiver line what the
// receiver saw; the out-of-order line, which iperf3 labels [SUM] even for
// one stream, comes between them, from this side's own count only (iperf3
// does not exchange it). The server shows only its own side: iperf3's
// server prints its summary before the client's results arrive.
func (t Text) writeSummaryUDP(w io.Writer, r *result.Result) {
	client := r.Role == "client"
	if r.Bidir() {
		io.WriteString(w, hdrUDPBidir)
	} else {
		io.WriteString(w, hdrUDP)
	}
	for gi, d := range result.Summarize(r).Dirs {
		role := r.RoleTag(d.Sender)
		for _, ss := range d.Streams {
			t.writeStreamUDP(w, r, &d, &ss)
		}
		if !d.Empty() && r.NumStreams() > 1 {
			snt, rcv := &d.Sent, &d.Received
			if (client || d.Sender) && snt.Known {
				fmt.Fprintf(w, fmtSumBWUDP, role, 0.0, snt.Seconds, units.IperfBytes(float64(snt.Bytes)), t.bits(result.Rate(snt.Bytes, snt.Seconds)), 0.0, int64(0), snt.UDP.Packets, 0.0, "sender")
			}
			if (client || !d.Sender) && rcv.Known {
				// As iperf3: the jitter averaged over -P, the loss as a
				// share of the datagrams sent, printed over those
				// received. iperf3's server has no sender's counts.
				total := d.Packets
				if !client {
					total = rcv.UDP.Packets
				}
				fmt.Fprintf(w, fmtSumBWUDP, role, 0.0, rcv.Seconds, units.IperfBytes(float64(rcv.Bytes)), t.bits(result.Rate(rcv.Bytes, rcv.Seconds)),
					1000*rcv.UDP.Jitter, rcv.UDP.Lost, rcv.UDP.Packets, lostPercent(rcv.UDP.Lost, total), "receiver")
			}
		}
		if dr := d.Drained; dr != nil && (client || !d.Sender) {
			fmt.Fprintf(w, "[SUM]%s drained after the end: %d datagrams (%ss) in %.0f ms, counted in no figure above\n", role, dr.Datagrams, units.IperfBytes(float64(dr.Bytes)), 1000*dr.Seconds)
		}
		if n := r.SentAfterCount(d.Sender); n > 0 {
			fmt.Fprintf(w, "[SUM]%s sent after the receiver had the count, until TEST_END: %d datagrams, no part of the test and no loss\n", role, n)
		}
		t.groupTail(w, r, d.Sender, gi == 0)
	}
}

// writeStreamUDP writes a UDP stream's summary lines: its sender's view,
// the out-of-order line, its receiver's view (the server only its own).
func (t Text) writeStreamUDP(w io.Writer, r *result.Result, d *result.DirSummary, ss *result.StreamSummary) {
	client := r.Role == "client"
	role := r.RoleTag(d.Sender)
	snt, rcv := ss.Sent, ss.Received
	if client || ss.StreamResult.Sender {
		if !snt.Known() {
			fmt.Fprintf(w, "[%3d]%s (sender statistics not available)\n", ss.Socket, role)
		} else {
			fmt.Fprintf(w, fmtBWUDP, ss.Socket, role, 0.0, snt.Seconds, units.IperfBytes(float64(snt.Bytes)), t.bits(result.Rate(snt.Bytes, snt.Seconds)), 0.0, int64(0), result.UDPOf(ss.SndUDP).Packets, 0.0, "sender")
		}
	}
	if ooo := outOfOrder(ss.UDP); !ss.StreamResult.Sender && ooo > 0 {
		// iperf3 ends it at the sender's time, which it knows only from
		// the peer's results.
		end := snt.Seconds
		if !client || !snt.Known() {
			end = ss.Seconds
		}
		fmt.Fprintf(w, fmtSumOutOfOrder, role, 0.0, end, ooo)
	}
	if client || !ss.StreamResult.Sender {
		if !rcv.Known() {
			fmt.Fprintf(w, "[%3d]%s (receiver statistics not available)\n", ss.Socket, role)
		} else {
			ru := result.UDPOf(ss.RcvUDP)
			fmt.Fprintf(w, fmtBWUDP, ss.Socket, role, 0.0, rcv.Seconds, units.IperfBytes(float64(rcv.Bytes)), t.bits(result.Rate(rcv.Bytes, rcv.Seconds)), 1000*ru.Jitter, ru.Lost, ru.Packets, lostPercent(ru.Lost, ru.Packets), "receiver")
		}
	}
}

// writeDuplicates writes blast's line for each UDP stream whose receiver
// saw datagrams twice, which iperf3 cannot tell from datagrams out of
// order.
func writeDuplicates(w io.Writer, r *result.Result) {
	for _, sender := range r.Groups() {
		for _, st := range r.Streams {
			if st.Sender != sender {
				continue
			}
			rcv, where := st.UDP, "local"
			if st.Sender {
				rcv, where = st.PeerUDP, "remote"
			}
			if rcv == nil || rcv.Duplicates <= 0 {
				continue
			}
			fmt.Fprintf(w, "Duplicates: [%3d]%s %d datagrams arrived twice at the %s receiver, %d out of order (iperf3 counts both as out-of-order)\n",
				st.Socket, r.RoleTag(sender), rcv.Duplicates, where, rcv.OutOfOrder)
		}
	}
}

// senderFacts calls fn, group by group, with each stream whose sender's
// facts hold a count called name above 0: this side's facts or the
// peer's, and which it is ("local" or "remote").
func senderFacts(r *result.Result, name string, fn func(st *result.StreamResult, sender bool, f *engine.FactSample, where string)) {
	for _, sender := range r.Groups() {
		for _, st := range r.Streams {
			if st.Sender != sender {
				continue
			}
			f, where := &st.Facts, "local"
			if !st.Sender {
				f, where = st.PeerFacts, "remote"
			}
			if f != nil && f.Counts[name] > 0 {
				fn(st, sender, f, where)
			}
		}
	}
}

// writeSendWaits writes blast's line for each UDP stream whose sender
// found its own host's queue full (ENOBUFS): how often, and how long it
// waited for room before it sent those datagrams again. They are no loss.
func writeSendWaits(w io.Writer, r *result.Result) {
	senderFacts(r, engine.FactNoBufs, func(st *result.StreamResult, sender bool, f *engine.FactSample, where string) {
		fmt.Fprintf(w, "Send waits: [%3d]%s the %s sender waited %.1f ms for its host's full queue, %d times, and sent those datagrams again (no loss)\n",
			st.Socket, r.RoleTag(sender), where, float64(f.Counts[engine.FactNoBufsWait])/1e6, f.Counts[engine.FactNoBufs])
	})
}

// writePaceBehind writes blast's line for each paced stream (-b) whose
// sender fell behind its rate and did not make it up (a thread the host
// held up for longer than the pacer catches up): how long, and the bytes
// that time is at the rate. Its figures are then short of -b by that.
func writePaceBehind(w io.Writer, r *result.Result) {
	senderFacts(r, engine.FactPaceBehind, func(st *result.StreamResult, sender bool, f *engine.FactSample, where string) {
		behind := time.Duration(f.Counts[engine.FactPaceBehind])
		fmt.Fprintf(w, "Pace: [%3d]%s the %s sender fell %.1f ms behind its -b rate (its thread was held up) and did not make it up: %ss short\n",
			st.Socket, r.RoleTag(sender), where, float64(behind)/1e6, units.IperfBytes(behind.Seconds()*float64(r.Params.Bandwidth)/8))
	})
}

// fmtLoad is blast's host-load line (--sys), lmbench's and vmstat's
// columns: CPU user, system and idle, interrupts and context switches per
// second, and the packets per second of the interface of the test.
const fmtLoad = "[SYS] %6.2f-%-6.2f sec  cpu %5.1f%% us %5.1f%% sy %5.1f%% id %5.1f%% st  %6s intr/s  %6s cs/s%s%s\n"

// writeLoad writes one host-load line; who is "", "  local" or
// "  remote".
func writeLoad(w io.Writer, start, end float64, l *hostload.Load, who string) {
	pkts := ""
	if l.Iface != "" {
		pkts = fmt.Sprintf("  %s %s/%s pkt/s in/out", l.Iface, count(l.RxPackets), count(l.TxPackets))
	}
	fmt.Fprintf(w, fmtLoad, start, end, l.User, l.System, l.Idle, l.Steal, count(l.Interrupts), count(l.ContextSwitches), pkts, who)
}

// writeLoads writes the host load over the test here and at the peer, and
// the peer's per interval (its own lines were on its console).
func writeLoads(w io.Writer, r *result.Result) {
	if r.Load == nil && r.RemoteLoad == nil {
		return
	}
	if r.Load != nil {
		writeLoad(w, 0, r.Load.Seconds, r.Load, "  local")
	}
	if r.RemoteLoad != nil {
		at := 0.0
		for i := range r.RemoteLoadIntervals {
			l := &r.RemoteLoadIntervals[i]
			writeLoad(w, at, at+l.Seconds, l, "  remote")
			at += l.Seconds
		}
		writeLoad(w, 0, r.RemoteLoad.Seconds, r.RemoteLoad, "  remote")
	}
}

// count writes a rate with 3 significant digits and a k or M suffix:
// units.Count.
func count(x float64) string { return units.Count(x) }
