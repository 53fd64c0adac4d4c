package agent

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/nicinfo"
	"github.com/blastnet/blast/units"
)

// newReply turns a client test's result into the reply: the direction
// that ran (the client sends, or with -R receives), both ends' CPU and
// interfaces, and the findings of both ends and the path.
func newReply(res *result.Result, err error) *Reply {
	r := &Reply{}
	if err != nil {
		r.Err = oneLine(err.Error())
		r.Busy = errors.Is(err, wire.ErrBusy)
	}
	if res == nil {
		return r
	}
	r.Start = res.Time
	d := res.Direction(!res.Reverse())
	if d != nil {
		r.Seconds = d.Seconds
		r.Bps = d.Goodput
		r.Bytes = uint64(max(d.ReceivedBytes, 0))
		r.Retrans = max(d.Retransmits, 0)
		r.RTTus = d.RTTus
		if d.UDP && d.Sent > 0 {
			r.Loss = float64(d.Lost) / float64(d.Sent)
		}
	}
	var jitter float64
	var n int
	for _, st := range res.Streams {
		u := st.UDP
		if st.Sender {
			u = st.PeerUDP
		}
		if u != nil {
			jitter += u.Jitter
			n++
		}
	}
	if n > 0 {
		r.JitterMs = 1000 * jitter / float64(n)
	}
	r.CPUSrc, r.CPUDst = res.CPU.Total, res.RemoteCPU.Total
	r.NICSrc, r.NICDst = ifaceName(res.NIC), ifaceName(res.RemoteNIC)
	add := func(end string, fs []finding.Finding) {
		for _, f := range fs {
			r.Findings = append(r.Findings, Finding{Rule: f.Rule, Severity: f.Severity, End: end,
				Iface: f.Iface, Summary: f.Summary, Evidence: f.Evidence, Fix: f.Fix})
		}
	}
	if res.NIC != nil {
		add("src", res.NIC.Findings)
	}
	if res.RemoteNIC != nil {
		add("dst", res.RemoteNIC.Findings)
	}
	for _, f := range res.Findings {
		end := "path"
		switch {
		case f.Iface != "" && f.Iface == r.NICSrc:
			end = "src"
		case f.Iface != "" && f.Iface == r.NICDst:
			end = "dst"
		}
		add(end, []finding.Finding{f})
	}
	return r
}

func ifaceName(n *nicinfo.Result) string {
	if n == nil || n.Interface == nil {
		return ""
	}
	return n.Interface.Name
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// line is the reply in a log line.
func (r *Reply) line() string {
	if r.Err != "" {
		return "failed: " + r.Err
	}
	return fmt.Sprintf("%s over %.1f s, %d retransmits", units.SIRate(r.Bps), r.Seconds, r.Retrans)
}

// hostAddrs are this host's global unicast addresses, as text.
func hostAddrs() []string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []string
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || !ipn.IP.IsGlobalUnicast() {
			continue
		}
		out = append(out, ipn.IP.String())
	}
	return out
}
