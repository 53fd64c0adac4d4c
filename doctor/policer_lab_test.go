package doctor_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/blastnet/blast/internal/netlab"
	"github.com/blastnet/blast/internal/netlab/labtest"
	"github.com/blastnet/blast/nicinfo"
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
// towards B beyond 100 Mbit/s (a queue of two packets) is dropped. Its
// bucket of 1 MiB outlasts the 80 ms a busy host may hold the sender
// without losing the rate, and adds 4 Mbit/s to a 2 s test. TCP's
// upload loses heavily to it (TCP probes past any rate on a path of
// microseconds), UDP below TCP's rate passes, UDP above it loses what
// exceeds 100 Mbit/s. Both ends run full duplex with no link errors:
// doctor names the policer, in the upload direction, at its rate, first
// and alone at WARN; nothing speaks of duplex. The rates are the
// policer's, far below what a busy host carries.
func TestLabDoctorPolicer(t *testing.T) {
	lab := labtest.New(t, netlab.Routed, netlab.Options{})
	dev := towardB(t, lab)
	// A token bucket with no queue behind it is a policer: what finds
	// the bucket empty is dropped. (tc's police action is not in every
	// kernel; a tbf is.)
	// A sends frames as a wire carries them to a router: a veth hands
	// the router a GSO train of 45 segments whole, which no queue of
	// two packets takes.
	ip(t, lab.A, "link", "set", "dev", lab.A.Iface, "gso_max_segs", "1")
	tc(t, lab.Router, "qdisc", "add", "dev", dev, "root", "tbf", "rate", "100mbit", "burst", "1m", "limit", "3000")
	rep, code := doctorRun(t, lab, server(t, lab), "-t", "2")
	for _, f := range rep.Findings {
		t.Logf("%s %s: %s\n  evidence: %s\n  fix: %s", f.Severity, f.Rule, f.Summary, f.Evidence, f.Fix)
	}
	for _, tt := range rep.Tests {
		t.Logf("test %s: %.4g bit/s (rate %.4g), %d retransmits, %d of %d lost; %s", tt.Name, tt.Bps, tt.RateBps, tt.Retransmits, tt.Lost, tt.Sent, tt.Err)
		for _, f := range tt.Findings {
			t.Logf("   %s", f)
		}
	}
	f := onlyRule(t, rep.Findings, "D26", nicinfo.Warn)
	if !strings.Contains(f.Summary, "a policer (or a lossy token bucket) in the upload direction, passing about ") {
		t.Errorf("D26 summary %q", f.Summary)
	}
	over := -1.0
	for _, tt := range rep.Tests {
		if tt.Name == "udp upload above the tcp rate" && tt.Err == "" {
			over = tt.Bps
		}
	}
	if over < 80e6 || over > 120e6 {
		t.Errorf("UDP above the policer delivered %.4g bit/s, want 100 Mbit/s ±20%%", over)
	}
	// The finding's rate is that probe's figure, in its words.
	if want := "passing about " + mbit(over); !strings.Contains(f.Summary, want) {
		t.Errorf("D26 summary %q lacks %q", f.Summary, want)
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
}

// mbit is a rate as the findings write it: 99.6 Mbit/s.
func mbit(bps float64) string {
	return strconv.FormatFloat(bps/1e6, 'f', 1, 64) + " Mbit/s"
}
