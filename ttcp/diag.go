package ttcp

import (
	"fmt"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/nicinfo"
	"github.com/blastnet/blast/pathdiag"
	"github.com/blastnet/blast/report"
)

// tcpLine is the transmitter's TCP_INFO at the end of the transfer, in
// blast's own line (ttcp prints none): retransmits first, as a reader
// looks for them.
func tcpLine(ti engine.TCPInfo) string {
	return fmt.Sprintf("tcp: %d retransmits, rtt %d us (min %d), cwnd %d, send window %d, mss %d, path mtu %d",
		ti.TotalRetrans, ti.RTT, ti.MinRTT, ti.SndCwnd, ti.SndWnd, ti.SndMSS, ti.PMTU)
}

// pathFindings judges the transfer with the path rules, from this end
// only: ttcp has no exchange with its peer.
func (r *run) pathFindings(res *report.TTCPResult, nic *nicinfo.Result) []finding.Finding {
	secs := res.Real.Seconds()
	if secs <= 0 {
		return nil
	}
	me := &pathdiag.End{Name: "local", NIC: nic, CPUPct: -1, Streams: 1, BufLen: r.c.BufLen}
	if w := r.nic; w != nil {
		me.Path, me.Sysctls = w.pathDelta, w.sysctls
	}
	me.CPUPct = 100 * (res.Rusage.User + res.Rusage.Sys).Seconds() / secs
	d := pathdiag.Direction{UDP: r.c.UDP, Seconds: secs, Goodput: 8 * float64(res.Bytes) / secs, Retransmits: -1}
	if r.c.Transmit {
		d.Sender = me
		d.SentBytes = res.Bytes
		if r.tcpInfo != nil {
			ti := r.tcpInfo
			d.Retransmits, d.MaxCwnd, d.MaxWnd, d.RTTus, d.MinRTTus = ti.TotalRetrans, ti.SndCwnd, ti.SndWnd, float64(ti.RTT), float64(ti.MinRTT)
			d.MSS, d.PMTU = int(ti.SndMSS), int(ti.PMTU)
			d.BusyUs, d.RwndLimitedUs, d.SndbufLimitedUs = ti.BusyTime, ti.RwndLimited, ti.SndbufLimited
			d.ReceivedBytes = ti.BytesAcked
		}
	} else {
		d.Receiver = me
		d.ReceivedBytes = res.Bytes
		me.IO = res.Data
	}
	return pathdiag.Diagnose(d)
}
