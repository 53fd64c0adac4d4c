package nicinfo

import (
	"testing"

	"github.com/blastnet/blast/finding"
)

// TestRulesInRegistry: every link rule is in finding's registry (so in
// README's rule table).
func TestRulesInRegistry(t *testing.T) {
	for _, r := range append(Rules, Rule{ID: finding.D7}, Rule{ID: finding.Reset}) {
		if _, ok := finding.Lookup(r.ID); !ok {
			t.Errorf("%s is not in finding's registry: add it to finding/registry.go", r.ID)
		}
	}
}
