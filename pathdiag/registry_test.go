package pathdiag

import (
	"testing"

	"github.com/blastnet/blast/finding"
)

// TestRulesInRegistry: every path rule is in finding's registry (so in
// README's rule table), and rules runs them in the order of their rank,
// which Rank keeps for findings of the same severity and rank.
func TestRulesInRegistry(t *testing.T) {
	for i, r := range rules {
		if _, ok := finding.Lookup(r.id); !ok {
			t.Errorf("%s is not in finding's registry: add it to finding/registry.go", r.id)
		}
		if i > 0 && r.id.Rank() < rules[i-1].id.Rank() {
			t.Errorf("%s (rank %d) runs after %s (rank %d)", r.id, r.id.Rank(), rules[i-1].id, rules[i-1].id.Rank())
		}
	}
}
