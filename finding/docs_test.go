package finding

import (
	"os"
	"strings"
	"testing"

	"github.com/blastnet/blast/internal/golden"
)

// readme is where the rule table is, between its two marker lines.
const (
	readme   = "../README.md"
	tableBeg = "<!-- rules: finding's registry (finding/registry.go); make rules rewrites this table -->\n"
	tableEnd = "<!-- end of rules -->\n"
)

// TestREADMETable: README.md's rule table is the registry's rendering, so
// the docs and the code cannot disagree; -update rewrites the table.
func TestREADMETable(t *testing.T) {
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, tableBeg)
	j := strings.Index(doc, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("%s: no rule table between %q and %q: put the markers back around it", readme, strings.TrimSpace(tableBeg), strings.TrimSpace(tableEnd))
	}
	golden.Check(t, readme, doc[:i+len(tableBeg)]+Table()+doc[j:])
}
