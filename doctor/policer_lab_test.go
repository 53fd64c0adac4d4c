package doctor_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

// towardB is the router's interface on the link towards B.
func towardB(t *testing.T, lab *netlab.Lab) string {
	t.Helper()
	var name string
	if err := lab.Router.Do(func() error {
		links, err := netlink.LinkList()
		for _, l := range links {
			if n := l.Attrs().Name; n != "lo" && n != lab.Router.Iface {
				name = n
			}
		}
		return err
	}); err != nil || name == "" {
		t.Fatalf("the router's link towards B: %q, %v", name, err)
	}
	return name
}

// A policer on the router, where neither end can see it: what leaves
// towards the receiver beyond 100 Mbit/s (a queue of two packets) is
// dropped, in the upload direction (towards B) or the download one
// (towards A). Its bucket of 1 MiB outlasts the 80 ms a busy host may
// hold the sender without losing the rate, and adds 4 Mbit/s to a 2 s
// test. TCP loses heavily to it (TCP probes past any rate on a path of
// microseconds), UDP below TCP's rate passes, UDP above it loses what
// exceeds 100 Mbit/s. Both ends run full duplex with no link errors:
// doctor names the policer, in its direction, at its rate, first and
// alone at WARN; nothing speaks of duplex. The rates are the policer's,
// far below what a busy host carries.
func TestLabDoctorPolicer(t *testing.T) {
	for _, dir := range []string{"upload", "download"} {
		t.Run(dir, func(t *testing.T) {
			lab := labtest.New(t, netlab.Routed, netlab.Options{})
			// The sender sends frames as a wire carries them to a
			// router: a veth hands the router a GSO train of 45
			// segments whole, which no queue of two packets takes.
			sender, dev := lab.A, towardB(t, lab)
			if dir == "download" {
				sender, dev = lab.B, lab.Router.Iface
			}
			ip(t, sender, "link", "set", "dev", sender.Iface, "gso_max_segs", "1")
			// A token bucket with no queue behind it is a policer:
			// what finds the bucket empty is dropped. (tc's police
			// action is not in every kernel; a tbf is.)
			tc(t, lab.Router, "qdisc", "add", "dev", dev, "root", "tbf", "rate", "100mbit", "burst", "1m", "limit", "3000")
			// The UDP upload at 20 Mbit/s, which a busy host carries
			// without a loss (at its default, 500 Mbit/s on the
			// unpoliced upload, a busy receiver overflows: D18).
			rep, code := doctorRun(t, lab, server(t, lab), "-t", "2", "-b", "20M")
			for _, f := range rep.Findings {
				t.Logf("%s %s: %s\n  evidence: %s\n  fix: %s", f.Severity, f.Rule, f.Summary, f.Evidence, f.Fix)
			}
			for _, tt := range rep.Tests {
				t.Logf("test %s: %.4g bit/s (rate %.4g), %d retransmits, %d of %d lost; %s", tt.Name, tt.Bps, tt.RateBps, tt.Retransmits, tt.Lost, tt.Sent, tt.Err)
				for _, f := range tt.Findings {
					t.Logf("   %s", f)
				}
			}
			f := onlyRule(t, rep.Findings, "D26", finding.Warn)
			if !strings.Contains(f.Summary, "a policer (or a lossy token bucket) in the "+dir+" direction, passing ") {
				t.Errorf("D26 summary %q", f.Summary)
			}
			over := -1.0
			for _, tt := range rep.Tests {
				if tt.Name == "udp "+dir+" above the tcp rate" && tt.Err == "" {
					over = tt.Bps
				}
			}
			switch {
			case strings.Contains(f.Summary, "passing about "):
				// The rate: that probe's figure, within 20% of the
				// policer's.
				if over < 80e6 || over > 120e6 {
					t.Errorf("UDP above the policer delivered %.4g bit/s, want 100 Mbit/s ±20%%", over)
				}
				// The summary's rate is that figure, to its 3
				// significant digits.
				var said float64
				if i := strings.Index(f.Summary, "passing about "); i < 0 || func() bool {
					_, err := fmt.Sscanf(f.Summary[i+len("passing about "):], "%g Mbit/s", &said)
					return err != nil
				}() || math.Abs(said*1e6-over) > 0.005*over {
					t.Errorf("D26 summary %q: want the rate UDP delivered, %.4g bit/s, to 3 digits", f.Summary, over)
				}
			case strings.Contains(f.Summary, "passing at least "):
				// A host too busy to send at the probe's rate, or
				// a probe that failed, gets a lower bound, and the
				// evidence says why.
				busy := over >= 0 && over <= 120e6 && strings.Contains(f.Evidence, ": a busy host)")
				failed := over < 0 && strings.Contains(f.Evidence, " above that rate failed (")
				if !busy && !failed {
					t.Errorf("a lower bound with the probe above the rate at %.4g bit/s: want at most 120 Mbit/s from a sender that fell short, or a failed probe; evidence %q", over, f.Evidence)
				}
				t.Logf("a lower bound: %s", f.Evidence)
			default:
				t.Errorf("D26 summary %q: no rate", f.Summary)
			}
			for _, g := range rep.Findings {
				if strings.Contains(strings.ToLower(g.Summary+g.Evidence+g.Fix), "duplex") {
					t.Errorf("a finding speaks of duplex: %s", g)
				}
				if g.Rule == "D7" {
					t.Errorf("D7 beside the policer that explains it: %s", g)
				}
			}
			if code != 1 || rep.Healthy {
				t.Errorf("exit %d, healthy %v: want 1, false", code, rep.Healthy)
			}
			if !strings.HasPrefix(rep.Verdict, "WARN D26: a policer") {
				t.Errorf("verdict %q", rep.Verdict)
			}
		})
	}
}

// A shaper with a queue on the router, one way (a tbf at 100 Mbit/s with
// 50 ms of queue; the other way runs at what the hosts carry): doctor
// names the asymmetry, the slow direction, its rate within 20%, and the
// queue TCP built there, and no other cause.
func TestLabDoctorMidPathShaper(t *testing.T) {
	for _, dir := range []string{"upload", "download"} {
		t.Run(dir, func(t *testing.T) {
			lab := labtest.New(t, netlab.Routed, netlab.Options{})
			dev := towardB(t, lab)
			if dir == "download" {
				dev = lab.Router.Iface
			}
			tc(t, lab.Router, "qdisc", "add", "dev", dev, "root", "tbf", "rate", "100mbit", "burst", "64kb", "latency", "50ms")
			rep, _ := doctorRun(t, lab, server(t, lab), "-t", "2", "-b", "20M")
			for _, f := range rep.Findings {
				t.Logf("%s %s: %s\n  evidence: %s", f.Severity, f.Rule, f.Summary, f.Evidence)
			}
			for _, tt := range rep.Tests {
				t.Logf("test %s: %.4g bit/s, %d retransmits; %s", tt.Name, tt.Bps, tt.Retransmits, tt.Err)
			}
			f := onlyRule(t, rep.Findings, "D7", finding.Warn)
			want := fmt.Sprintf("asymmetric path: the %s direction is ", map[string]string{"upload": "forward", "download": "reverse"}[dir])
			if !strings.HasPrefix(f.Summary, want) || !strings.Contains(f.Summary, "behind a queue: a shaper or a slower link that way, at about ") {
				t.Errorf("D7 summary %q, want it to start %q and name the queue", f.Summary, want)
			}
			var rate float64
			var unit string
			if i := strings.Index(f.Summary, "at about "); i >= 0 {
				fmt.Sscanf(f.Summary[i+len("at about "):], "%g %s", &rate, &unit)
			}
			if unit != "Mbit/s" || rate < 80 || rate > 120 {
				t.Errorf("the slow direction's rate: %g %s, want 100 Mbit/s ±20%%", rate, unit)
			}
		})
	}
}
