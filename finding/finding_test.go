package finding

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestSeverityText(t *testing.T) {
	for _, s := range []Severity{Info, Warn, Error} {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back Severity
		if err := json.Unmarshal(b, &back); err != nil || back != s {
			t.Errorf("%s: marshalled %s, read back %v, %v", s, b, back, err)
		}
	}
	var s Severity
	if err := s.UnmarshalText([]byte("warning")); err != nil || s != Warn {
		t.Errorf(`"warning" read as %v, %v; want WARN`, s, err)
	}
	if err := s.UnmarshalText([]byte("NOTICE")); err == nil {
		t.Errorf(`"NOTICE" read as %v without an error`, s)
	}
}

func TestHead(t *testing.T) {
	if got := (Finding{Rule: D7, Severity: Warn}).Head(); got != "WARN D7" {
		t.Errorf("a path's finding: %q, want %q", got, "WARN D7")
	}
	if got := (Finding{Rule: D3, Severity: Error, Iface: "eth0"}).Head(); got != "ERROR D3 eth0" {
		t.Errorf("an interface's finding: %q, want %q", got, "ERROR D3 eth0")
	}
}

// TestRegistry: every rule once, with a title and its evidence, in the
// order of its rank.
func TestRegistry(t *testing.T) {
	var seen []ID
	for i, r := range Rules() {
		if slices.Contains(seen, r.ID) {
			t.Errorf("%s twice in the registry", r.ID)
		}
		seen = append(seen, r.ID)
		if r.Title == "" || r.Needs == "" {
			t.Errorf("%s: no title or evidence", r.ID)
		}
		if i > 0 && r.Rank < Rules()[i-1].Rank {
			t.Errorf("%s (rank %d) after %s (rank %d): the registry is in the order of rank", r.ID, r.Rank, Rules()[i-1].ID, Rules()[i-1].Rank)
		}
	}
	for _, id := range []ID{D1, D2, D3, D4, D5, D6, D7, D8, D9, D10, D11, D12, D13, D14, D15, D16, D17, D18, D19, D20, D21, D22, D23, D25, D26, D27, D28, D29, D30, Reset} {
		if _, ok := Lookup(id); !ok {
			t.Errorf("%s is not in the registry", id)
		}
	}
	if r, ok := Lookup("D99"); ok || ID("D99").Rank() != 0 {
		t.Errorf("an unknown rule: %+v, %v, rank %d; want none, rank 0", r, ok, ID("D99").Rank())
	}
}

// TestCompare: severity first, then rank (a link rule, then the path's
// causes, then their symptoms).
func TestCompare(t *testing.T) {
	fs := []Finding{{Rule: D20, Severity: Warn}, {Rule: D14, Severity: Warn}, {Rule: D23, Severity: Info}, {Rule: D17, Severity: Error}, {Rule: D3, Severity: Warn}, {Rule: D28, Severity: Warn}}
	slices.SortStableFunc(fs, Compare)
	var got []ID
	for _, f := range fs {
		got = append(got, f.Rule)
	}
	if want := []ID{D17, D28, D3, D14, D20, D23}; !slices.Equal(got, want) {
		t.Errorf("ranked %v, want %v", got, want)
	}
}
