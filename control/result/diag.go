package result

import (
	"time"

	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/nicinfo"
	"github.com/blastnet/blast/pathdiag"
)

// diagnose judges each direction of the test with the path rules, with
// what both ends reported, into r.Findings; and, for --bidir, the two
// directions against each other (D7). It runs on failed tests too: what
// was measured up to the failure is evidence (a black hole ends in one).
func (r *Result) Diagnose() {
	if r == nil || !r.Connected() {
		return
	}
	var lists [][]finding.Finding
	var dirs [2]*pathdiag.Direction
	for i, up := range []bool{true, false} {
		d := r.Direction(up)
		if d == nil {
			continue
		}
		dirs[i] = d
		lists = append(lists, pathdiag.Diagnose(*d))
	}
	if dirs[0] != nil && dirs[1] != nil {
		var nicFindings []finding.Finding
		for _, n := range []*nicinfo.Result{r.NIC, r.RemoteNIC} {
			if n != nil {
				nicFindings = append(nicFindings, n.Findings...)
			}
		}
		lists = append(lists, pathdiag.WithoutCPUAsymmetry(nicinfo.DiagnosePath(nicinfo.Path{
			Forward:  nicDirection(dirs[0]),
			Reverse:  nicDirection(dirs[1]),
			SamePath: true, Findings: nicFindings}), dirs[0], dirs[1]))
	}
	r.Findings = pathdiag.Merge(lists...)
}

// NICDirection is the test's client-to-server direction (up) or the
// other as the interface rules compare two directions (D7): the goodput
// and the share of segments retransmitted (-1: not known).
func (r *Result) NICDirection(up bool) nicinfo.Direction {
	return nicDirection(r.Direction(up))
}

func nicDirection(d *pathdiag.Direction) nicinfo.Direction {
	if d == nil {
		return nicinfo.Direction{RetransPct: -1, QueueMs: -1}
	}
	return nicinfo.Direction{Bps: d.Goodput, RetransPct: retransPct(d), QueueMs: pathdiag.QueueMs(*d)}
}

func retransPct(d *pathdiag.Direction) float64 {
	if d.UDP || d.Retransmits < 0 || d.SentBytes <= 0 {
		return -1
	}
	mss := d.MSS
	if mss <= 0 {
		mss = 1448
	}
	return 100 * float64(d.Retransmits) / (float64(d.SentBytes) / float64(mss))
}

// Direction is the test's client-to-server direction (up) or the other,
// as the path rules see it; nil when the test had no streams that way.
func (r *Result) Direction(up bool) *pathdiag.Direction {
	// This side sends up when it is the client.
	localSends := up == (r.Role == "client")
	local := &pathdiag.End{Name: "local", NIC: r.NIC, Path: r.Path, Sysctls: r.Sysctls,
		CPUPct: -1, SndBuf: r.SndBufActual, RcvBuf: r.RcvBufActual, BufAsked: r.SockBufSize,
		BufLen: int(r.Params.BlockLen())}
	var remote *pathdiag.End
	if r.PeerResults() {
		remote = &pathdiag.End{Name: "remote", NIC: r.RemoteNIC, Path: r.RemotePath, Sysctls: r.RemoteSysctls,
			CPUPct: -1, SndBuf: r.RemoteSndBuf, RcvBuf: r.RemoteRcvBuf, BufAsked: r.SockBufSize,
			BufLen: int(r.Params.BlockLen())}
	}
	d := &pathdiag.Direction{UDP: r.UDP(), Sender: local, Receiver: remote, Retransmits: -1, Rate: float64(r.Params.Bandwidth)}
	d.Stall = pathdiag.Stall(r.SendStall)
	if !localSends {
		d.Sender, d.Receiver = remote, local
		d.Stall = pathdiag.Stall(r.RecvStall)
	}
	a := &dirFacts{r: r, d: d, localSends: localSends, local: local, remote: remote}
	for _, sr := range r.Streams {
		if sr.Sender == localSends {
			a.add(sr)
		}
	}
	if a.n == 0 {
		return nil
	}
	a.finish()
	return d
}

// dirFacts adds up the streams of one direction into d: their counts, the
// sender's TCP figures, the receiver's reads, each end's threads.
type dirFacts struct {
	r             *Result
	d             *pathdiag.Direction
	localSends    bool
	local, remote *pathdiag.End

	n           int
	rtt         float64
	nRTT        int
	recvIO      engine.Sample
	recvIOKnown bool
}

// add adds one stream of the direction.
func (a *dirFacts) add(sr *StreamResult) {
	d := a.d
	a.n++
	sent, secs := sr.SentBytes()
	got, rsecs := sr.ReceivedBytes()
	d.SentBytes += max(sent, 0)
	if got < 0 && sr.Sender && sr.Acked > 0 {
		// The peer's count never came: what it acknowledged is what
		// it got.
		got, rsecs = sr.Acked, secs
	}
	d.ReceivedBytes += max(got, 0)
	d.Seconds = max(d.Seconds, secs, rsecs)
	tcp := sr.PeerTCP
	if a.localSends {
		tcp = sr.TCPSummary()
	}
	if tcp != nil {
		a.addTCP(tcp)
	}
	if sr.Retransmits >= 0 {
		d.Retransmits = max(d.Retransmits, 0) + sr.Retransmits
	}
	// The receiver's reads: this side's counters when it receives.
	io := sr.PeerIO
	if !a.localSends {
		io = &sr.IO
	}
	if io != nil {
		a.recvIO.Bytes += io.Bytes
		a.recvIO.Calls += io.Calls
		a.recvIO.Errors += io.Errors
		a.recvIO.Idle += io.Idle
		a.recvIOKnown = true
	}
	// What each end's data thread of the stream spent.
	addThread(a.local, sr.Thread)
	addThread(a.remote, sr.PeerThread)
	facts := &sr.Facts
	if !a.localSends {
		facts = sr.PeerFacts
	}
	if facts != nil {
		d.Resent += facts.Counts[engine.FactNoBufs]
		d.ResentWait += time.Duration(facts.Counts[engine.FactNoBufsWait])
	}
	sent, lost := a.r.UDPLoss(sr)
	d.Sent += sent
	d.Lost += lost
	if _, rcv := sr.UDPSides(); rcv != nil {
		d.LossRuns += rcv.LossRuns
	}
}

// addTCP adds a sending stream's TCP figures.
func (a *dirFacts) addTCP(tcp *wire.TCPSummary) {
	d := a.d
	d.MaxCwnd = max(d.MaxCwnd, tcp.MaxSndCwnd)
	d.MaxWnd = max(d.MaxWnd, tcp.MaxSndWnd)
	a.rtt += float64(tcp.MeanRTT)
	a.nRTT++
	if p := float64(tcp.PathRTTUs); p > 0 && (d.MinRTTus == 0 || p < d.MinRTTus) {
		d.MinRTTus = p
	}
	d.PMTU, d.MSS = int(tcp.PMTU), int(tcp.MSS)
	d.BusyUs += tcp.BusyUs
	d.RwndLimitedUs += tcp.RwndLimitedUs
	d.SndbufLimitedUs += tcp.SndbufLimitedUs
	d.RTOs += tcp.RTOs
	d.RTOTimeMs = max(d.RTOTimeMs, tcp.RTOTimeMs)
}

// finish derives what the sums give: the mean RTT, the goodput, each
// end's streams and CPU.
func (a *dirFacts) finish() {
	r, d := a.r, a.d
	if a.nRTT > 0 {
		d.RTTus = a.rtt / float64(a.nRTT)
	}
	if d.UDP {
		d.Datagram = int(r.Params.BlockLen())
	}
	if d.Seconds > 0 {
		d.Goodput = 8 * float64(d.ReceivedBytes) / d.Seconds
	}
	for _, e := range []*pathdiag.End{a.local, a.remote} {
		if e != nil {
			e.Streams = a.n
		}
	}
	// CPU in percent of one core: iperf3's figures are of the whole
	// machine, so the rules take blast's seconds.
	if secs := r.CPU.UserSeconds + r.CPU.SystemSeconds; secs > 0 && d.Seconds > 0 {
		a.local.CPUPct = 100 * secs / d.Seconds
	}
	if secs := r.RemoteCPU.UserSeconds + r.RemoteCPU.SystemSeconds; a.remote != nil && secs > 0 && d.Seconds > 0 {
		a.remote.CPUPct = 100 * secs / d.Seconds
	}
	if d.Receiver != nil && a.recvIOKnown {
		d.Receiver.IO = a.recvIO
	}
	d.Failed = r.Err != nil
}

// addThread takes in what one of e's data threads spent: e.Thread holds
// the most CPU and the longest run wait of its threads, in percent of
// their time.
func addThread(e *pathdiag.End, t *wire.ThreadTimes) {
	if e == nil || t == nil || t.WallNs <= 0 {
		return
	}
	if e.Thread == nil {
		e.Thread = &pathdiag.Thread{}
	}
	e.Thread.CPUPct = max(e.Thread.CPUPct, 100*float64(t.CPUNs)/float64(t.WallNs))
	e.Thread.RunWaitPct = max(e.Thread.RunWaitPct, 100*float64(t.RunWaitNs)/float64(t.WallNs))
}

// tcpSummary is the TCP_INFO summary of a stream this side sent on, nil
// when none was read.
func (sr *StreamResult) TCPSummary() *wire.TCPSummary {
	if !sr.Sender || sr.MeanRTT <= 0 {
		return nil
	}
	return &wire.TCPSummary{MaxSndCwnd: sr.MaxSndCwnd, MaxSndWnd: sr.MaxSndWnd, MeanRTT: sr.MeanRTT, MinRTT: sr.MinRTT,
		PMTU: sr.PMTU, MSS: sr.MSS, Acked: sr.Acked, TCPLimits: sr.Limits}
}

// TopFinding is the most serious finding of the test at WARN or above,
// the interfaces' and the path's together; nil when there is none.
func TopFinding(r *Result) *finding.Finding {
	var all [][]finding.Finding
	for _, n := range []*nicinfo.Result{r.NIC, r.RemoteNIC} {
		if n != nil {
			all = append(all, n.Findings)
		}
	}
	fs := pathdiag.Merge(append(all, r.Findings)...)
	if len(fs) == 0 || fs[0].Severity < finding.Warn {
		return nil
	}
	return &fs[0]
}

// sentAfterCount is how many datagrams the senders of the streams this
// side sends on (sender) or receives on sent after their receivers had a
// UDP count: the server sends until TEST_END (UDPLoss), and those are no
// part of the test. 0 on any other stream, or when a count is unknown.
func (r *Result) SentAfterCount(sender bool) int64 {
	var n int64
	for _, sr := range r.Streams {
		if sr.Sender != sender || !bool(r.Params.UDP) || r.Params.ByteLimit() <= 0 || r.Upstream(sr.Sender) {
			continue
		}
		snd, rcv := sr.UDP, sr.PeerUDP
		if !sr.Sender {
			snd, rcv = sr.PeerUDP, sr.UDP
		}
		if snd != nil && rcv != nil {
			n += max(snd.Packets-rcv.Packets, 0)
		}
	}
	return n
}

// UDPLoss is a UDP stream's datagrams sent and lost, whichever side r
// is: the receiver's count of gaps, or, when more is missing, what the
// sender sent and the receiver never saw (a receiver that got nothing, or
// lost the tail, counts no gap). On a stream the server sends a UDP count
// on, it sends until the client has the count and says TEST_END (as
// iperf3's does, so that a lost datagram cannot hang the client), and the
// client reads no further: what it sent after the count is no part of the
// test and no loss, and the test's datagrams are those the receiver's
// sequence numbers reached (its gaps are the loss).
func (r *Result) UDPLoss(sr *StreamResult) (sent, lost int64) {
	snd, rcv := sr.UDP, sr.PeerUDP
	if !sr.Sender {
		snd, rcv = sr.PeerUDP, sr.UDP
	}
	if bool(r.Params.UDP) && r.Params.ByteLimit() > 0 && !r.Upstream(sr.Sender) && rcv != nil {
		return rcv.Packets, rcv.Lost
	}
	if snd != nil {
		sent = snd.Packets
	}
	if rcv != nil {
		lost = rcv.Lost
		if snd != nil {
			lost = max(lost, snd.Packets-rcv.Packets)
		}
	}
	return sent, lost
}
