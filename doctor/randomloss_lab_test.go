package doctor_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

// Random loss on the router, one way: 3% of what it forwards towards B
// is dropped at random (iptables' statistic match), whatever the rate.
// TCP loses about that share of its segments, and UDP at a lower rate
// about that share of its datagrams: doctor names random loss in the
// upload direction, with its share, first and alone at WARN; not a
// policer, not an asymmetry.
func TestLabDoctorRandomLoss(t *testing.T) {
	lab := labtest.New(t, netlab.Routed, netlab.Options{})
	if out, err := lab.Router.Command("iptables", "-A", "FORWARD", "-i", lab.Router.Iface, "-m", "statistic",
		"--mode", "random", "--probability", "0.03", "-j", "DROP").CombinedOutput(); err != nil {
		t.Fatalf("iptables: %v: %s (apt-get install iptables; make deps does)", err, out)
	}
	rep, code := doctorRun(t, lab, server(t, lab), "-t", "2", "-b", "20M")
	for _, f := range rep.Findings {
		t.Logf("%s %s: %s\n  evidence: %s", f.Severity, f.Rule, f.Summary, f.Evidence)
	}
	for _, tt := range rep.Tests {
		t.Logf("test %s: %.4g bit/s, %d retransmits, %d of %d lost; %s", tt.Name, tt.Bps, tt.Retransmits, tt.Lost, tt.Sent, tt.Err)
	}
	f := onlyRule(t, rep.Findings, "D30", finding.Warn)
	var pct float64
	if _, err := fmt.Sscanf(f.Summary, "random loss in the upload direction: about %g%%", &pct); err != nil || pct < 2 || pct > 4.5 {
		t.Errorf("D30 %q: want the upload direction and about 3%% (2 to 4.5)", f.Summary)
	}
	for _, g := range rep.Findings {
		if g.Rule == "D26" || g.Rule == "D7" || strings.Contains(g.Summary, "policer") {
			t.Errorf("a rate limit or an asymmetry named beside random loss: %s", g)
		}
	}
	if code != 1 || rep.Healthy {
		t.Errorf("exit %d, healthy %v: want 1, false", code, rep.Healthy)
	}
}
