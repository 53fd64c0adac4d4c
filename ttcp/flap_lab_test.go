package ttcp_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/blastnet/blast/internal/blasttest"
	"github.com/blastnet/blast/internal/testkit"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

// The link goes down for a moment during a transfer that survives it: both
// ends print what they measured, and fail (exit status 1) naming the flap
// (D10), since a number measured across a link that went down is no
// measurement of the link.
func TestLabLinkFlapInvalidates(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	addr := lab.B.Addr4.String()
	r := blasttest.Listening(t, lab.B, "tcp", 5001, blasttest.Bin, "-r", "-s")
	// 40 MB at 200 Mbit/s: about 1.6 s.
	tx := blasttest.Start(t, lab.A, nil, blasttest.Bin, "-t", "-s", "-l", "65536", "-n", "640", "--rate", "200M", addr)
	link := func() netlink.Link {
		t.Helper()
		var l netlink.Link
		if err := lab.A.Do(func() (err error) {
			l, err = netlink.LinkByName(lab.A.Iface)
			return err
		}); err != nil {
			t.Fatalf("%s: %v", lab.A.Iface, err)
		}
		return l
	}
	flap := func(up bool) {
		t.Helper()
		if err := lab.A.Do(func() error {
			l, err := netlink.LinkByName(lab.A.Iface)
			if err != nil {
				return err
			}
			if up {
				return netlink.LinkSetUp(l)
			}
			return netlink.LinkSetDown(l)
		}); err != nil {
			t.Fatalf("set %s up=%v: %v", lab.A.Iface, up, err)
		}
	}
	// The flap comes once the transfer is under way: 4 MB of the 40 sent
	// (the rest takes at least 1.4 s more at 200 Mbit/s).
	testkit.WaitFor(t, 30*time.Second, "4 MB sent on "+lab.A.Iface, func() bool {
		st := link().Attrs().Statistics
		return st != nil && st.TxBytes >= 4<<20
	})
	flap(false)
	testkit.WaitFor(t, 30*time.Second, lab.A.Iface+" down", func() bool { return link().Attrs().OperState == netlink.OperDown })
	flap(true)
	for _, p := range []struct {
		name   string
		proc   *blasttest.Proc
		prefix string
	}{{"transmitter", tx, "blast-t"}, {"receiver", r, "blast-r"}} {
		err := p.proc.WaitErr(time.Minute)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("%s: %v, want exit status 1\nstdout: %s\nstderr: %s", p.name, err, p.proc.Stdout.String(), p.proc.Stderr.String())
			continue
		}
		if got := reported(t, p.proc.Stdout.String(), p.prefix); got != 640*65536 {
			t.Errorf("%s: reported %d bytes, want all %d (TCP survives the flap)", p.name, got, 640*65536)
		}
		if want := p.prefix + ": the result is not valid: D10 the link went down during the test: this result is not valid (Δcarrier_changes = "; !strings.Contains(p.proc.Stderr.String(), want) {
			t.Errorf("%s: stderr lacks %q:\n%s", p.name, want, p.proc.Stderr.String())
		}
	}
}
