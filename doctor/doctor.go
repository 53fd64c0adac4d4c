// Package doctor runs the short tests that tell why a path is slow, and
// ranks what they found into one verdict: TCP both ways, the path MTU
// both ways between them (don't-fragment probes, D29 for a smaller hop
// between the hosts; a black hole there skips the tests after it, which
// would stall on it), UDP at a rate the path should carry with datagrams that
// fill the MTU, and round trips, each against one blast server (which
// answers tests, latency and the probes on one port). A direction where TCP lost heavily gets UDP below and above its
// rate, which tells a policer (D26, with its rate) from random loss (D30). A
// receiver short of CPU that lost datagrams to the UDP test's automatic
// rate gets it again at a quarter of the rate (D28 names the CPU). Every
// test's findings (the interfaces' rules D1-D13 on both ends, the path
// rules D14 and up) are merged, the two TCP directions compared (D7), and
// the most likely cause comes first with its evidence and fix.
// A healthy path gets one line that says so.
package doctor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/blastnet/blast/control"
	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/latency"
	"github.com/blastnet/blast/nicinfo"
	"github.com/blastnet/blast/pathdiag"
	"github.com/blastnet/blast/pathmtu"
	"github.com/blastnet/blast/units"
)

// Config is one doctor run.
type Config struct {
	Host   string
	Port   int    // the blast server's port (5201)
	Family string // "", "4" or "6"
	// Duration of each throughput test (3 s), and of the latency run (2 s).
	Duration, LatDuration time.Duration
	// UDPRate is the UDP test's rate in bit/s; 0: 90% of the TCP upload's
	// goodput, at most MaxUDPRate.
	UDPRate float64
	// Progress, when set, hears each test as it starts.
	Progress func(step Step)
	// Unit renders the rates of the text and the verdict (-f; 0: SI bits
	// per second, as fits each).
	Unit units.Format
}

// steps is the number of a run's steps (probes count as the UDP step).
const steps = 5

// MaxUDPRate caps the automatic UDP rate: the UDP test looks for loss,
// MTU and buffer trouble, not for the path's capacity.
const MaxUDPRate = 500e6

// An automatic UDP rate that a receiver short of CPU lost datagrams to is
// divided by lowerBy and the test run again, down to minUDPRate, at most
// maxLower times.
const (
	lowerBy    = 4
	minUDPRate = 1e6
	maxLower   = 2 // times: doctor stays within its time
)

// Step is a test about to run: its name and the command that runs it alone.
type Step struct {
	N, Of   int
	Name    string
	Command string
}

// Test is what one test of a doctor run measured.
type Test struct {
	Name    string `json:"name"`
	Command string `json:"command"`
	// Bps is the goodput (the receiver's), RateBps the UDP test's target.
	Bps         float64 `json:"bps,omitempty"`
	RateBps     float64 `json:"rate_bps,omitempty"`
	Retransmits int64   `json:"retransmits,omitempty"`
	// Datagram is the UDP payload length; Sent and Lost count datagrams.
	Datagram int   `json:"datagram,omitempty"`
	Sent     int64 `json:"sent,omitempty"`
	Lost     int64 `json:"lost,omitempty"`
	// RTT percentiles of the latency run.
	RTT *latency.Stats `json:"rtt,omitempty"`
	// PathMTU is what the path MTU test's probes found, both ways.
	PathMTU *pathmtu.Result `json:"path_mtu,omitempty"`
	// Findings of this test, both ends, ranked.
	Findings []finding.Finding `json:"findings,omitempty"`
	Err      string            `json:"error,omitempty"`
}

// Report is a whole doctor run.
type Report struct {
	// Unit renders the rates of the text (-f); JSON and CSV keep bit/s.
	Unit  units.Format `json:"-"`
	Host  string       `json:"host"`
	Port  int          `json:"port"`
	Tests []Test       `json:"tests"`
	// Local and Remote are the interfaces that carried the tests, as the
	// first test that reported them saw them.
	Local  *nicinfo.Interface `json:"local_nic,omitempty"`
	Remote *nicinfo.Interface `json:"remote_nic,omitempty"`
	// Interfaces are those an offline run analyzed.
	Interfaces []*nicinfo.Interface `json:"interfaces,omitempty"`
	// Findings are every test's findings merged, with D7, ranked: the
	// first is the verdict.
	Findings []finding.Finding `json:"findings"`
	// Healthy: no finding at WARN or above, and every test ran.
	Healthy bool   `json:"healthy"`
	Verdict string `json:"verdict"`
}

// Run runs the doctor's tests against cfg.Host in order and returns the
// report; a test that fails is recorded with its error and the next one
// runs. The error is only for a run that could not start (no server there).
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Port == 0 {
		cfg.Port = 5201
	}
	if cfg.Duration == 0 {
		cfg.Duration = 3 * time.Second
	}
	if cfg.LatDuration == 0 {
		cfg.LatDuration = 2 * time.Second
	}
	r := &run{ctx: ctx, cfg: cfg, mtuTest: -1,
		rep:  &Report{Host: cfg.Host, Port: cfg.Port, Unit: cfg.Unit},
		base: fmt.Sprintf("blast client %s -p %d -t %g", cfg.Host, cfg.Port, cfg.Duration.Seconds())}
	// Each step says whether the run goes on (a cancelled context, or a
	// black hole that would stall every further test, ends it).
	if on, err := r.tcp(); !on || err != nil {
		return r.finish(err)
	}
	r.pathFindings()
	if !r.udpUpload() || !r.probes() {
		return r.finish(nil)
	}
	r.rep.latency(ctx, cfg, r.step)
	return r.finish(nil)
}

// run is one doctor run's state between its steps.
type run struct {
	ctx   context.Context
	cfg   Config
	rep   *Report
	base  string // the blast client command line every test extends
	lists [][]finding.Finding
	dirs  [2]*result.Result // the TCP upload and download
	// mtuTest is the index in rep.Tests of the path-MTU test (-1: none),
	// hopMTU the MTU of a smaller hop between the hosts D29 named.
	mtuTest, hopMTU int
	ucfg            control.Config // the UDP upload's, for the probes
	udpUp           *result.Result
}

func (r *run) step(n int, name, cmd string) {
	if r.cfg.Progress != nil {
		r.cfg.Progress(Step{N: n, Of: steps, Name: name, Command: cmd})
	}
}

// finish ranks the findings into the report; err is a run that reached
// nothing (no report).
func (r *run) finish(err error) (*Report, error) {
	if err != nil {
		return nil, err
	}
	return r.rep.Finish(r.lists), nil
}

// tcp runs the TCP upload, the path MTU after it, then the download.
func (r *run) tcp() (bool, error) {
	ctx, cfg, rep := r.ctx, r.cfg, r.rep
	for i, reverse := range []bool{false, true} {
		name, cmd := "tcp upload", r.base
		if reverse {
			name, cmd = "tcp download", r.base+" -R"
		}
		r.step(2*i+1, name, cmd)
		res, err := control.Run(ctx, control.Config{Host: cfg.Host, Port: cfg.Port, Family: cfg.Family,
			Duration: cfg.Duration, Reverse: reverse})
		if res == nil {
			if i == 0 {
				return false, err // nothing reached the server
			}
			rep.Tests = append(rep.Tests, Test{Name: name, Command: cmd, Err: err.Error()})
			continue
		}
		r.dirs[i] = res
		t := testOf(name, cmd, res, err)
		rep.Tests = append(rep.Tests, t)
		r.lists = append(r.lists, t.Findings)
		rep.noteNICs(res)
		if ctx.Err() != nil {
			return false, nil
		}
		if i > 0 {
			continue
		}
		// The path MTU after the upload: against a blast server (it
		// sends the download's probes; iperf3 would take the probe
		// for a test's cookie, and fail its next test), or after an
		// upload whose end stalled (a black hole stalls the results).
		mres := rep.measureMTU(ctx, cfg, 2, res.RemoteVersion != "" || err != nil)
		r.mtuTest = len(rep.Tests) - 1
		if ctx.Err() != nil {
			return false, nil
		}
		if where := blackHole(mres); where != "" {
			// Every further test's results would stall on it.
			for _, t := range []Test{{Name: "tcp download", Command: r.base + " -R"}, {Name: "udp upload", Command: r.base + " -u"}} {
				t.Err = "skipped: a path-MTU black hole in " + where + " (D29): its results would not get through"
				rep.Tests = append(rep.Tests, t)
			}
			fs, _ := rep.judgeMTU(&rep.Tests[r.mtuTest], cfg)
			r.lists = append(r.lists, fs)
			rep.latency(ctx, cfg, r.step)
			return false, nil
		}
	}
	return true, nil
}

// pathFindings judges both TCP directions together (D7's comparison)
// and the path MTU both ways against both ends' MTUs (D29).
func (r *run) pathFindings() {
	if up, down := r.dirs[0], r.dirs[1]; up != nil && down != nil {
		r.lists = append(r.lists, pathdiag.WithoutCPUAsymmetry(nicinfo.DiagnosePath(nicinfo.Path{
			Forward: lossDirection(up, true), Reverse: lossDirection(down, false), SamePath: true,
			Findings: pathdiag.Merge(nicFindings(up), nicFindings(down)),
			Ends:     []*nicinfo.Interface{r.rep.Local, r.rep.Remote}}), up.Direction(true), down.Direction(false)))
	}
	if r.mtuTest >= 0 {
		var fs []finding.Finding
		fs, r.hopMTU = r.rep.judgeMTU(&r.rep.Tests[r.mtuTest], r.cfg)
		r.lists = append(r.lists, fs)
	}
}

// udpConfig is the UDP upload: at a rate the path should carry, with
// datagrams that fill this side's MTU (a smaller MTU on the way shows as
// loss), or the hop's that D29 named (what else loses datagrams is what
// this test is for).
func (r *run) udpConfig() control.Config {
	cfg := r.cfg
	rate := cfg.UDPRate
	if rate == 0 {
		rate = MaxUDPRate
		if up := r.dirs[0]; up != nil && up.Err == nil {
			rate = min(rate, 0.9*goodput(up, true))
		}
		rate = max(rate, 1e6)
	}
	ucfg := control.Config{Host: cfg.Host, Port: cfg.Port, Family: cfg.Family, Duration: cfg.Duration,
		UDP: true, Rate: rate, RateSet: true,
		// One datagram per message: a GSO train crosses a veth past
		// the far side's MTU, and this test is there to find the MTU.
		Backend: "mmsg"}
	if m := mtu(r.rep.Local); m > 0 {
		if r.hopMTU > 0 {
			m = r.hopMTU
		}
		m = min(m, 65535) // loopback's 65536: no IP packet is larger
		ucfg.BlockLen = m - 28
		if cfg.Family == "6" {
			ucfg.BlockLen = m - 48
		}
	}
	return ucfg
}

// udpCommand is the command line of a UDP upload at rate.
func (r *run) udpCommand(rate float64) string {
	cmd := fmt.Sprintf("%s -u -b %s --backend mmsg", r.base, units.RateFlag(rate))
	if r.ucfg.BlockLen > 0 {
		cmd += fmt.Sprintf(" -l %d", r.ucfg.BlockLen)
	}
	return cmd
}

// udpUpload runs the UDP upload. When the rate was doctor's choice and
// the receiver, short of CPU, lost datagrams to it, that loss is doctor's
// doing: the test runs again at a quarter of the rate, and only the last
// run is judged (each run stays in the report).
func (r *run) udpUpload() bool {
	r.ucfg = r.udpConfig()
	cmd := r.udpCommand(r.ucfg.Rate)
	r.step(4, "udp upload", cmd)
	for n, name := 0, "udp upload"; ; n, name = n+1, "udp upload at a lower rate" {
		res, err := control.Run(r.ctx, r.ucfg)
		if res == nil {
			r.rep.Tests = append(r.rep.Tests, Test{Name: name, Command: cmd, RateBps: r.ucfg.Rate, Err: err.Error()})
			break
		}
		t := testOf(name, cmd, res, err)
		t.RateBps = r.ucfg.Rate
		r.rep.Tests = append(r.rep.Tests, t)
		r.rep.noteNICs(res)
		r.udpUp = res
		lower := r.ucfg.Rate / lowerBy
		if d := res.Direction(true); r.cfg.UDPRate == 0 && err == nil && d != nil && d.Lost > 0 && lower >= minUDPRate && n < maxLower &&
			pathdiag.ReceiverCPUBound(*d) && r.ctx.Err() == nil {
			r.ucfg.Rate = lower
			cmd = r.udpCommand(lower)
			r.step(4, "udp upload at a lower rate: the receiver was short of CPU", cmd)
			continue
		}
		r.lists = append(r.lists, t.Findings)
		break
	}
	return r.ctx.Err() == nil
}

// probes: in a direction where TCP lost heavily, UDP below and above its
// rate tells a policer (the loss grows with the rate) from random loss.
func (r *run) probes() bool {
	for i, up := range []bool{true, false} {
		if r.dirs[i] == nil {
			continue
		}
		r.lists = append(r.lists, r.rep.probe(r.ctx, r.cfg, r.ucfg, r.base, up, r.dirs[i], r.udpUp)...)
		if r.ctx.Err() != nil {
			return false
		}
	}
	return true
}

// latency is the run's last step: round trips of 64 bytes.
func (rep *Report) latency(ctx context.Context, cfg Config, step func(int, string, string)) {
	cmd := fmt.Sprintf("blast lat %s -p %d -t %g", cfg.Host, cfg.Port, cfg.LatDuration.Seconds())
	step(5, "latency", cmd)
	lcfg := latency.Defaults()
	lcfg.Host, lcfg.Port, lcfg.Duration = cfg.Host, cfg.Port, cfg.LatDuration
	t := Test{Name: "latency", Command: cmd}
	if lr, err := latency.Run(ctx, lcfg, nil); err != nil {
		t.Err = err.Error()
	} else {
		t.RTT = &lr.RTT
	}
	rep.Tests = append(rep.Tests, t)
}

// The probes of a lossy TCP direction. cleanShare: UDP below TCP's
// goodput runs at this share of it, so that the pacer catching up after a
// busy host held it (at 1.25 times the rate, engine.Sender) stays within
// it. overFactor: UDP above it offers this many times that goodput (TCP
// through a policer with a small bucket gets well under half its rate).
// maxOverRate: no probe offers more (a direction whose TCP moved more than
// maxOverRate / overFactor gets only UDP at that rate, for random loss):
// the probes look at rates any host carries, not at the path's capacity.
// probeWindow is the probes' socket buffers (-w 4M): a third of a second
// at 100 Mbit/s.
const (
	probeWindow = 4 << 20
	cleanShare  = 0.8
	overFactor  = 2.5
	maxOverRate = 1e9
)

// probe looks for a policer in one direction (D26) when TCP lost at least
// pathdiag.PolicerLoss of its segments that way with no rate limit on
// either end to blame (pathdiag.Probable): UDP at cleanShare of
// TCP's goodput (the UDP upload already run, when it was below that), and,
// when that passed clean, UDP at overFactor times TCP's goodput (and
// overFactor times that while it passes, up to maxOverRate). Each
// probe is a test of the report; the return is the first one's findings
// and D26's.
func (rep *Report) probe(ctx context.Context, cfg Config, ucfg control.Config, base string, up bool, tcp, udpUp *result.Result) [][]finding.Finding {
	td := tcp.Direction(up)
	if td == nil {
		return nil
	}
	if !pathdiag.Probable(*td) {
		// Too little loss to probe for a policer, but random loss of
		// 1 to 2% shows in the UDP upload already run (D30).
		if up && udpUp != nil && udpUp.Err == nil {
			return [][]finding.Finding{pathdiag.D30(pathdiag.Probe{Name: "upload", TCP: td, Clean: udpUp.Direction(true)})}
		}
		return nil
	}
	// TCP too fast for a probe above its rate (more than maxOverRate):
	// no policer's rate to measure, but UDP at a lower rate still tells
	// random loss (D30) from loss that grows with the rate.
	fast := overFactor*td.Goodput > maxOverRate
	name, flag := "upload", ""
	if !up {
		name, flag = "download", " -R"
	}
	pr := &prober{ctx: ctx, cfg: cfg, ucfg: ucfg, base: base, up: up, flag: flag, rep: rep}
	run := pr.run
	p := pathdiag.Probe{Name: name, TCP: td}
	clean := max(cleanShare*td.Goodput, 1e6)
	if fast {
		clean = maxOverRate / overFactor
	}
	if up && udpUp != nil && udpUp.Err == nil && float64(udpUp.Params.Bandwidth) <= clean {
		p.Clean = udpUp.Direction(true)
	} else {
		p.Clean = run("udp "+name+" below the tcp rate", clean, true)
	}
	if p.Clean == nil || ctx.Err() != nil {
		return pr.lists
	}
	if fast {
		return append(pr.lists, pathdiag.D30(p))
	}
	if p.Clean.Sent > 0 && 100*float64(p.Clean.Lost) < pathdiag.CleanLoss*float64(p.Clean.Sent) {
		// Loss is what this probe measures, not a finding: its
		// test keeps its findings, the verdict does not. TCP may
		// have got well under a third of the policer's rate (a
		// busy host, a small bucket): a probe that passed is
		// offered overFactor times more, up to maxOverRate.
		for rate := overFactor * td.Goodput; rate <= maxOverRate && ctx.Err() == nil; rate *= overFactor {
			p.Over = run("udp "+name+" above the tcp rate", rate, false)
			if p.Over == nil {
				// What the clean probe showed still stands,
				// its rate a lower bound.
				p.OverErr = pr.lastErr
				break
			}
			if p.Over.Sent > 0 && 100*float64(p.Over.Lost) >= pathdiag.OverLoss*float64(p.Over.Sent) {
				break
			}
		}
	}
	return append(pr.lists, pathdiag.D26(p))
}

// prober runs one direction's UDP probes (Report.probe), and keeps the
// findings of those that are judged and the last one's error.
type prober struct {
	ctx     context.Context
	cfg     Config
	ucfg    control.Config
	base    string
	up      bool
	flag    string // " -R" for the download
	rep     *Report
	lists   [][]finding.Finding
	lastErr string
}

// run runs a probe at rate, with a 4 MiB window: a receiver held up for
// a few milliseconds by a busy host must not overflow its socket, the
// probe counts only what the path dropped. nil when it failed.
func (pr *prober) run(what string, rate float64, judged bool) *pathdiag.Direction {
	pr.lastErr = ""
	c := pr.ucfg
	c.Rate, c.Reverse = rate, !pr.up
	c.Window = probeWindow
	cmd := fmt.Sprintf("%s -u -b %s -w 4M --backend mmsg%s", pr.base, units.RateFlag(rate), pr.flag)
	if c.BlockLen > 0 {
		cmd += fmt.Sprintf(" -l %d", c.BlockLen)
	}
	if pr.cfg.Progress != nil {
		pr.cfg.Progress(Step{N: 4, Of: steps, Name: what, Command: cmd})
	}
	res, err := control.Run(pr.ctx, c)
	if err != nil {
		pr.lastErr = err.Error()
	}
	if res == nil {
		pr.rep.Tests = append(pr.rep.Tests, Test{Name: what, Command: cmd, RateBps: rate, Err: err.Error()})
		return nil
	}
	t := testOf(what, cmd, res, err)
	t.RateBps = rate
	pr.rep.Tests = append(pr.rep.Tests, t)
	if judged {
		pr.lists = append(pr.lists, t.Findings)
	}
	if err != nil {
		return nil
	}
	return res.Direction(pr.up)
}

// lossDirection is one TCP direction as D7 compares it: the goodput and
// the share of segments lost (retransmitted less what the receiver
// already had).
func lossDirection(res *result.Result, up bool) nicinfo.Direction {
	d := res.Direction(up)
	if d == nil {
		return nicinfo.Direction{RetransPct: -1, QueueMs: -1}
	}
	return nicinfo.Direction{Bps: d.Goodput, RetransPct: pathdiag.LossPct(*d), QueueMs: pathdiag.QueueMs(*d)}
}

// Finish merges the findings of every test (or every interface of an
// offline capture) and words the verdict.
func (rep *Report) Finish(lists [][]finding.Finding) *Report {
	rep.Findings = pathdiag.Merge(lists...)
	if rep.Findings == nil {
		rep.Findings = []finding.Finding{}
	}
	failed := 0
	for _, t := range rep.Tests {
		if t.Err != "" {
			failed++
		}
	}
	switch {
	case len(rep.Findings) > 0 && rep.Findings[0].Severity >= finding.Warn:
		f := rep.Findings[0]
		rep.Verdict = fmt.Sprintf("%s %s: %s", f.Severity, f.Rule, f.Summary)
	case failed > 0:
		rep.Verdict = fmt.Sprintf("%d of %d tests failed, and no rule names a cause: read their errors", failed, len(rep.Tests))
	case len(rep.Tests) == 0:
		rep.Healthy = true
		rep.Verdict = fmt.Sprintf("healthy: %d interface(s) analyzed; no finding at WARN or above", len(rep.Interfaces))
	default:
		rep.Healthy = true
		rep.Verdict = "healthy: " + rep.summary() + "; no finding at WARN or above"
	}
	return rep
}

// summary is the measured figures in one phrase.
func (rep *Report) summary() string {
	s := ""
	for _, t := range rep.Tests {
		if t.Err != "" {
			continue
		}
		if s != "" {
			s += ", "
		}
		switch {
		case t.PathMTU != nil:
			m := mtuSummary(t.PathMTU)
			if m == "" {
				s = strings.TrimSuffix(s, ", ")
				continue
			}
			s += m
		case t.RTT != nil:
			s += fmt.Sprintf("round trip p50 %s", dur(t.RTT.P50))
		case t.Sent > 0:
			s += fmt.Sprintf("%s %s with %d of %d datagrams lost", t.Name, rep.Unit.Rate(t.Bps), t.Lost, t.Sent)
		default:
			s += fmt.Sprintf("%s %s", t.Name, rep.Unit.Rate(t.Bps))
		}
	}
	return s
}

func (rep *Report) noteNICs(res *result.Result) {
	if rep.Local == nil && res.NIC != nil {
		rep.Local = res.NIC.Interface
	}
	if rep.Remote == nil && res.RemoteNIC != nil {
		rep.Remote = res.RemoteNIC.Interface
	}
}

// testOf condenses one client result.
func testOf(name, cmd string, res *result.Result, err error) Test {
	t := Test{Name: name, Command: cmd, Bps: goodput(res, !res.Reverse()), Retransmits: -1}
	for _, sr := range res.Streams {
		if sr.Retransmits >= 0 {
			t.Retransmits = max(t.Retransmits, 0) + sr.Retransmits
		}
		sent, lost := res.UDPLoss(sr)
		t.Sent += sent
		t.Lost += lost
	}
	if t.Retransmits < 0 {
		t.Retransmits = 0
	}
	if res.UDP() {
		t.Datagram = int(res.Params.Len)
	}
	if err != nil {
		t.Err = err.Error()
	}
	t.Findings = pathdiag.Merge(nicFindings(res), res.Findings)
	return t
}

func nicFindings(res *result.Result) []finding.Finding {
	var out []finding.Finding
	for _, n := range []*nicinfo.Result{res.NIC, res.RemoteNIC} {
		if n != nil {
			out = append(out, n.Findings...)
		}
	}
	return out
}

// goodput is what the receivers got over the direction, in bit/s.
func goodput(res *result.Result, up bool) float64 {
	return res.NICDirection(up).Bps
}

func mtu(ifc *nicinfo.Interface) int {
	if ifc == nil || ifc.MTU == nil {
		return 0
	}
	return *ifc.MTU
}

func dur(d time.Duration) string {
	if d >= time.Millisecond {
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.1f µs", float64(d)/1e3)
}
