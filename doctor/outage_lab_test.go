package doctor_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/internal/blasttest"
	"github.com/blastnet/blast/internal/testkit"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

// forwarded is what the router has sent towards B and back so far.
func forwarded(t *testing.T, lab *netlab.Lab, devs ...string) uint64 {
	t.Helper()
	var n uint64
	if err := lab.Router.Do(func() error {
		for _, d := range devs {
			l, err := netlink.LinkByName(d)
			if err != nil {
				return err
			}
			n += l.Attrs().Statistics.TxBytes
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// The router discards everything for 1.2 s in the middle of a TCP test, both
// ways, with every link up: the client names an outage (D27) with when
// and how long, and no other cause. The outage's length is the fault's
// (a shell's sleep on the router); the stall TCP sees is at least that,
// until its next retransmission timeout.
func TestLabOutage(t *testing.T) {
	for _, dir := range []string{"upload", "download"} {
		t.Run(dir, func(t *testing.T) {
			lab := labtest.New(t, netlab.Routed, netlab.Options{})
			devs := []string{lab.Router.Iface, towardB(t, lab)}
			port := server(t, lab)
			args := []string{"client", lab.B.Addr4.String(), "-p", port, "-J", "-t", "8"}
			if dir == "download" {
				args = append(args, "-R")
			}
			c := blasttest.Start(t, lab.A, nil, blasttest.Bin, args...)
			base := forwarded(t, lab, devs...)
			testkit.WaitFor(t, time.Minute, "the test's first 20 MB through the router", func() bool {
				return forwarded(t, lab, devs...)-base > 20<<20
			})
			// A routing rule above all others that discards what the
			// router forwards, silently, both ways.
			script := "ip rule add pref 10 blackhole && sleep 1.2; ip rule del pref 10"
			if out, err := lab.Router.Command("sh", "-c", script).CombinedOutput(); err != nil {
				t.Fatalf("the outage: %v: %s", err, out)
			}
			if err := c.WaitErr(3 * time.Minute); err != nil {
				t.Fatalf("client: %v\n%s", err, c.Stderr.String())
			}
			fs := findingsOf(t, c.Stdout.String())
			for _, f := range fs {
				t.Logf("%s %s: %s\n  evidence: %s", f.Severity, f.Rule, f.Summary, f.Evidence)
			}
			f := onlyRule(t, fs, "D27", finding.Warn)
			var secs float64
			if _, err := fmt.Sscanf(f.Summary, "an outage on the path: nothing got through for %f s", &secs); err != nil || secs < 1.1 || secs > 8 {
				// 1.1: a sender's count stops once its buffer is
				// full, a few milliseconds into the outage.
				t.Errorf("D27 summary %q: want a stall of about 1.2 s or more, within the test", f.Summary)
			}
			if !strings.Contains(f.Evidence, "retransmission timer fired") || !strings.Contains(f.Evidence, "no carrier change on ") {
				t.Errorf("D27 evidence %q", f.Evidence)
			}
		})
	}
}
