package pathdiag

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/nicinfo"
	"github.com/blastnet/blast/pathinfo"
)

// D26 names a policer between the hosts when TCP loses heavily and UDP
// below its rate passes clean; random loss (the slow UDP loses too) and
// an over-rate UDP that passes (no limit) rule it out.
func TestD26(t *testing.T) {
	// 1 s of TCP at 80 Mbit/s, 10 MB in 6906 segments, 690 resent: 10%.
	tcp := &Direction{Seconds: 1, Goodput: 80e6, SentBytes: 10e6, Retransmits: 690, MSS: 1448}
	udp := func(rate, goodput float64, sent, lost int64) *Direction {
		return &Direction{UDP: true, Seconds: 1, Rate: rate, Goodput: goodput, Sent: sent, Lost: lost, Datagram: 1472}
	}
	clean := udp(72e6, 72e6, 6114, 0)
	over := udp(200e6, 99.2e6, 16985, 8560)
	shaped := *tcp
	shaped.Sender = &End{Path: &pathinfo.Delta{Iface: "a0", Qdiscs: []pathinfo.Qdisc{{Kind: "tbf", Handle: "8001:", RateBps: 100e6}}}}
	for _, tc := range []struct {
		name string
		p    Probe
		want []string
	}{
		{"policer, rate from the over-rate probe", Probe{Name: "upload", TCP: tcp, Clean: clean, Over: over}, []string{"WARN D26"}},
		{"policer, lower bound only", Probe{Name: "download", TCP: tcp, Clean: clean}, []string{"WARN D26"}},
		{"policer, the over-rate probe failed", Probe{Name: "upload", TCP: tcp, Clean: clean, OverErr: "server error: unable to receive parameters from client"}, []string{"WARN D26"}},
		{"random loss: the slow UDP loses too", Probe{Name: "upload", TCP: tcp, Clean: udp(72e6, 70.5e6, 6114, 122), Over: over}, nil},
		{"no limit above TCP's rate", Probe{Name: "upload", TCP: tcp, Clean: clean, Over: udp(200e6, 199e6, 16985, 20)}, nil},
		{"TCP lost little", Probe{Name: "upload", TCP: &Direction{Goodput: 80e6, SentBytes: 10e6, Retransmits: 60, MSS: 1448}, Clean: clean, Over: over}, nil},
		{"a shaper on the sender is D14's", Probe{Name: "upload", TCP: &shaped, Clean: clean, Over: over}, nil},
		{"no UDP in that direction", Probe{Name: "download", TCP: tcp}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, rulesOf(D26(tc.p))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// Every number in D26's finding comes from the probes: the rate is what
// UDP offered above it delivered, and the fix paces below it.
func TestD26Words(t *testing.T) {
	tcp := &Direction{Seconds: 1, Goodput: 80e6, SentBytes: 10e6, Retransmits: 690, MSS: 1448}
	fs := D26(Probe{Name: "upload", TCP: tcp,
		Clean: &Direction{UDP: true, Rate: 72e6, Goodput: 72e6, Sent: 6114},
		Over:  &Direction{UDP: true, Rate: 200e6, Goodput: 99.2e6, Sent: 16985, Lost: 8560}})
	want := []nicinfo.Finding{{Rule: "D26", Severity: nicinfo.Warn,
		Summary:  "a policer (or a lossy token bucket) in the upload direction, passing about 99.2 Mbit/s: TCP loses 10.0% to it while UDP below that rate passes clean",
		Evidence: "tcp upload 80.0 Mbit/s with 10.0% of its segments lost (retransmitted, less what the receiver already had); udp upload at 72.0 Mbit/s: 0 of 6114 datagrams lost (0.00%); udp upload offered at 200.0 Mbit/s: 50% lost, 99.2 Mbit/s delivered; the loss grows with the rate: the policer passes about 99.2 Mbit/s (what UDP offered above it delivered)",
		Fix:      "a device between the hosts drops what exceeds about 99.2 Mbit/s in the upload direction (a tc police action, a router's or a provider's rate limit): find it (tc -s filter show on the routers on the way); if it is meant, pace the sender below it (blast client -b 94.2M) or shape to it at the sender (a tbf or htb at 94.2 Mbit/s), which TCP follows without loss"}}
	if diff := cmp.Diff(want, fs); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if strings.Contains(fs[0].Summary+fs[0].Evidence+fs[0].Fix, "duplex") {
		t.Errorf("D26 speaks of duplex: %s", fs[0])
	}
}

// A policer explains the asymmetry (D7 at WARN) and the loss (D20) it
// makes: the merge names it alone, and first.
func TestMergePolicer(t *testing.T) {
	fs := Merge(
		[]nicinfo.Finding{{Rule: "D20", Severity: nicinfo.Warn, Iface: "a"}, {Rule: "D21", Severity: nicinfo.Info, Iface: "b"}},
		[]nicinfo.Finding{{Rule: "D7", Severity: nicinfo.Warn, Summary: "asymmetric path"}},
		[]nicinfo.Finding{{Rule: "D26", Severity: nicinfo.Warn, Summary: "a policer"}},
	)
	if diff := cmp.Diff([]string{"WARN D26", "INFO D21"}, rulesOf(fs)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// A UDP sender that fell short of its rate was held by its host, and the
// policer's rate may have gone unused meanwhile: what passed is a lower
// bound, said so, never "about".
func TestD26BusySender(t *testing.T) {
	tcp := &Direction{Seconds: 2, Goodput: 98e6, SentBytes: 25e6, Retransmits: 4389, MSS: 1448}
	fs := D26(Probe{Name: "upload", TCP: tcp,
		Clean: &Direction{UDP: true, Seconds: 2, Rate: 78.4e6, Goodput: 68.4e6, Sent: 11678, Datagram: 1472},
		// 35397 datagrams in 2.57 s: 162 Mbit/s of the 245 offered.
		Over: &Direction{UDP: true, Seconds: 2.57, Rate: 245e6, Goodput: 68.8e6, Sent: 35397, Lost: 20378, Datagram: 1472}})
	if len(fs) != 1 {
		t.Fatalf("got %v, want one D26", fs)
	}
	for _, want := range []string{"passing at least 68.8 Mbit/s", "(the sender sent only 162.2 Mbit/s of it: a busy host)", "a lower bound"} {
		if !strings.Contains(fs[0].Summary+" "+fs[0].Evidence, want) {
			t.Errorf("no %q in %s", want, fs[0])
		}
	}
}
