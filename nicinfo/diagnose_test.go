package nicinfo

import (
	"testing"

	"github.com/blastnet/blast/finding"
)

// A finding about the path names no interface, and its line says so
// without an empty field ("WARN D7: ...", not "WARN D7 : ...").
func TestFindingHead(t *testing.T) {
	if got := (finding.Finding{Severity: finding.Warn, Rule: finding.D7}).Head(); got != "WARN D7" {
		t.Errorf("path finding: %q", got)
	}
	if got := (finding.Finding{Severity: finding.Error, Rule: finding.D1, Iface: "eth0"}).Head(); got != "ERROR D1 eth0" {
		t.Errorf("interface finding: %q", got)
	}
}
