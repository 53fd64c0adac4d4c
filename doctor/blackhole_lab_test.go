package doctor_test

import (
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

// A path-MTU black hole: A and B have 9000-byte MTUs, the router's link
// towards B has 1500 and sends no ICMP "fragmentation needed" (its own
// ICMP is routed into a blackhole). The connection is made, then full-size segments vanish.
func TestLabBlackHole(t *testing.T) {
	lab := labtest.New(t, netlab.Routed, netlab.Options{})
	ip(t, lab.A, "link", "set", "dev", lab.A.Iface, "mtu", "9000")
	ip(t, lab.B, "link", "set", "dev", lab.B.Iface, "mtu", "9000")
	ip(t, lab.Router, "link", "set", "dev", lab.Router.Iface, "mtu", "9000")
	var towardB string
	if err := lab.Router.Do(func() error {
		links, err := netlink.LinkList()
		for _, l := range links {
			if n := l.Attrs().Name; n != "lo" && n != lab.Router.Iface {
				towardB = n
			}
		}
		return err
	}); err != nil || towardB == "" {
		t.Fatalf("the router's link towards B: %q, %v", towardB, err)
	}
	ip(t, lab.Router, "link", "set", "dev", towardB, "mtu", "1500")
	// The router's own ICMP goes nowhere: a rule sends it to a table
	// that holds only a blackhole route.
	ip(t, lab.Router, "route", "add", "blackhole", "default", "table", "100")
	ip(t, lab.Router, "rule", "add", "ipproto", "icmp", "lookup", "100", "pref", "10")
	port := server(t, lab)
	fs := clientFindings(t, lab, port, "-t", "2")
	f := onlyRule(t, fs, "D17", finding.Error)
	if !strings.HasPrefix(f.Evidence, "the connection was made, then ") || !strings.Contains(f.Evidence, "segments of 8948 bytes") {
		t.Errorf("D17 evidence %q", f.Evidence)
	}
}

// One direction is throttled where neither end can see it (a token bucket
// on the router's link towards A): the download is far slower than the
// upload, and D7 says so, with no shaper to name. The bucket's queue
// (16 MiB) holds more than TCP's send buffer lets it have in flight, so
// it drops nothing (a retransmitting path would be an asymmetric collapse,
// an ERROR, whichever way a busy host's scheduling timed the drops). The
// UDP test runs at 20 Mbit/s, which a busy host carries without a loss.
func TestLabAsymmetry(t *testing.T) {
	lab := labtest.New(t, netlab.Routed, netlab.Options{})
	tc(t, lab.Router, "qdisc", "add", "dev", lab.Router.Iface, "root", "tbf", "rate", "50mbit", "burst", "64kb", "limit", "16mb")
	rep, code := doctorRun(t, lab, server(t, lab), "-t", "2", "-b", "20M")
	f := onlyRule(t, rep.Findings, "D7", finding.Warn)
	t.Logf("D7: %s", f.Evidence)
	if !strings.Contains(f.Evidence, "the reverse direction is") || !strings.Contains(f.Evidence, "no link errors counted") {
		t.Errorf("D7 evidence %q", f.Evidence)
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
}
