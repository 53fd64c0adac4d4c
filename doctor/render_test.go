package doctor

import (
	"strings"
	"testing"

	"github.com/blastnet/blast/finding"
)

// The text's test names line up when a probe's name is longer than the
// four tests' ("udp upload above the tcp rate"), and a path finding,
// which names no interface, prints as "D26:", not "D26 :".
func TestTextProbesAndPathFindings(t *testing.T) {
	rep := &Report{Host: "198.18.2.2", Port: 5201, Tests: []Test{
		{Name: "tcp upload", Bps: 98.17e6, Retransmits: 4574},
		{Name: "udp upload above the tcp rate", Bps: 100.95e6, RateBps: 245.43e6, Datagram: 1472, Sent: 41683, Lost: 24536},
	}}
	rep = rep.Finish([][]finding.Finding{{
		{Rule: "D26", Severity: finding.Warn, Summary: "a policer", Evidence: "e", Fix: "f"},
		{Rule: "D21", Severity: finding.Info, Iface: "b0", Summary: "starved", Evidence: "e", Fix: "f"},
	}})
	var b strings.Builder
	if err := WriteText(&b, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  tcp upload                    98.17 Mbit/s, 4574 retransmits\n",
		"  udp upload above the tcp rate 100.95 Mbit/s at 245.43 Mbit/s, 1472-byte datagrams, 24536 of 41683 lost\n",
		"  1. WARN D26: a policer\n",
		"  2. INFO D21 b0: starved\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in:\n%s", want, b.String())
		}
	}
}

// A test doctor skipped says so, not "failed".
func TestTextSkipped(t *testing.T) {
	rep := (&Report{Host: "198.18.0.2", Port: 5201, Tests: []Test{
		{Name: "tcp download", Command: "blast client 198.18.0.2 -R", Err: "skipped: a path-MTU black hole in the upload direction (D29): its results would not get through"},
	}}).Finish(nil)
	var b strings.Builder
	if err := WriteText(&b, rep); err != nil {
		t.Fatal(err)
	}
	if want := "  tcp download  skipped: a path-MTU black hole in the upload direction (D29): its results would not get through\n"; !strings.Contains(b.String(), want) {
		t.Errorf("no %q in:\n%s", want, b.String())
	}
}
