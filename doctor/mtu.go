package doctor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/nicinfo"
	"github.com/blastnet/blast/pathdiag"
	"github.com/blastnet/blast/pathmtu"
)

// notBlast is why the path MTU is not measured against a server that did
// not say it is blast server.
const notBlast = "the server is not a blast server: iperf3 sends no probes (and would take them for a test)"

// measureMTU measures the path MTU both ways with don't-fragment probes
// (pathmtu; a blast server sends the download's) as the run's step n, and
// adds the test; judgeMTU compares it with the interfaces once the TCP
// tests have reported them. Without probe (the server is not known to be
// blast server), or against a port that does not answer the probe, it is
// "not measured", no failed test.
func (rep *Report) measureMTU(ctx context.Context, cfg Config, n int, probe bool) *pathmtu.Result {
	cmd := "tracepath -n " + cfg.Host + " (upload only)"
	res, err := &pathmtu.Result{}, errors.New(notBlast)
	if probe {
		if cfg.Progress != nil {
			cfg.Progress(Step{N: n, Of: steps, Name: "path mtu", Command: cmd})
		}
		res, err = pathmtu.Probe(ctx, pathmtu.Config{Host: cfg.Host, Port: cfg.Port, Family: cfg.Family})
	}
	if err != nil {
		res = &pathmtu.Result{}
		res.Up.NotMeasured, res.Down.NotMeasured = err.Error(), err.Error()
	}
	rep.Tests = append(rep.Tests, Test{Name: "path mtu", Command: cmd, PathMTU: res})
	return res
}

// blackHole says which way the probes found a path-MTU black hole (a hop
// smaller than both ends' MTUs that sends no ICMP back, so the sender's
// kernel never learns it): "" for none. Every TCP test's control exchange
// would stall there (its results do not fit the hop, and both ends'
// MSS say they would). Ends with different MTUs and nothing smaller
// between are no black hole for TCP (the smaller end's MSS fits).
func blackHole(r *pathmtu.Result) string {
	bh := func(d pathmtu.Direction, receiverMTU int) bool {
		return d.Measured && d.Exact && d.PMTU < d.SenderMTU && (receiverMTU == 0 || d.PMTU < receiverMTU) && d.Learned > d.PMTU
	}
	switch up, down := bh(r.Up, r.Down.SenderMTU), bh(r.Down, r.Up.SenderMTU); {
	case up && down:
		return "both directions"
	case up:
		return "the upload direction"
	case down:
		return "the download direction"
	}
	return ""
}

// judgeMTU compares the path MTU test's result with the interfaces at
// both ends (D29), sets the test's findings and returns them, and the
// upload's path MTU when a hop between the hosts carries less than both
// ends (0 otherwise), for the UDP test's datagrams: D29 names that hop
// already, and the UDP test looks for what else loses them.
func (rep *Report) judgeMTU(t *Test, cfg Config) ([]finding.Finding, int) {
	res := t.PathMTU
	v6 := cfg.Family == "6" || strings.Contains(cfg.Host, ":")
	// The interfaces as the TCP tests reported them, or as the probes
	// found them (a run that skipped the TCP tests).
	local, localMTU := cmp.Or(ifName(rep.Local), res.Up.SenderIface), cmp.Or(mtu(rep.Local), res.Up.SenderMTU)
	remote, remoteMTU := cmp.Or(ifName(rep.Remote), res.Down.SenderIface), cmp.Or(mtu(rep.Remote), res.Down.SenderMTU)
	up := pathdiag.MTUDirection{Name: "upload", Direction: res.Up, V6: v6,
		SenderIface: local, SenderIfaceMTU: localMTU, ReceiverIface: remote, ReceiverIfaceMTU: remoteMTU}
	down := pathdiag.MTUDirection{Name: "download", Direction: res.Down, V6: v6,
		SenderIface: remote, SenderIfaceMTU: remoteMTU, ReceiverIface: local, ReceiverIfaceMTU: localMTU}
	t.Findings = pathdiag.D29(up, down)
	hop := 0
	for _, f := range t.Findings {
		if f.Severity >= finding.Warn && res.Up.Measured && res.Up.PMTU < localMTU {
			hop = res.Up.PMTU
		}
	}
	return t.Findings, hop
}

func ifName(ifc *nicinfo.Interface) string {
	if ifc == nil {
		return ""
	}
	return ifc.Name
}

// mtuLine is the path MTU test's figures.
func mtuLine(r *pathmtu.Result) string {
	dir := func(name string, d pathmtu.Direction) string {
		switch {
		case !d.Measured:
			return name + " not measured: " + d.NotMeasured
		case d.Exact && d.Lost > 0:
			return fmt.Sprintf("%s %d bytes (%d lost)", name, d.PMTU, d.Lost)
		case d.Exact:
			return fmt.Sprintf("%s %d bytes (the sender's MTU)", name, d.PMTU)
		case d.Lost > 0:
			return fmt.Sprintf("%s %d to %d bytes", name, d.PMTU, d.Lost-1)
		}
		return fmt.Sprintf("%s at least %d bytes", name, d.PMTU)
	}
	if !r.Up.Measured && !r.Down.Measured && r.Up.NotMeasured == r.Down.NotMeasured {
		return "not measured: " + r.Up.NotMeasured
	}
	return dir("upload", r.Up) + ", " + dir("download", r.Down)
}

// mtuSummary is the path MTU in the healthy verdict's words ("" when
// neither direction was measured).
func mtuSummary(r *pathmtu.Result) string {
	switch {
	case r.Up.Measured && r.Down.Measured && r.Up.PMTU == r.Down.PMTU:
		return fmt.Sprintf("path mtu %d bytes both ways", r.Up.PMTU)
	case r.Up.Measured && r.Down.Measured:
		return fmt.Sprintf("path mtu upload %d bytes, download %d", r.Up.PMTU, r.Down.PMTU)
	case r.Up.Measured:
		return fmt.Sprintf("path mtu upload %d bytes", r.Up.PMTU)
	case r.Down.Measured:
		return fmt.Sprintf("path mtu download %d bytes", r.Down.PMTU)
	}
	return ""
}
