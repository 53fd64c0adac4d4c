package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/internal/golden"
)

func nameList(nodes []Node) []string {
	names := make([]string, len(nodes))
	for i, nd := range nodes {
		names[i] = nd.Name
	}
	return names
}

func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mode  string
		nodes []Node
		o     Options
	}{
		{"pairs-4", "pairs", named(4), Options{}},
		{"pairs-5-isolate", "pairs", named(5), Options{Isolate: true}},
		{"pairs-zones-same", "pairs", named(7, "eu", "us"), Options{Zones: SameZone}},
		{"fan-in-baseline", "fan-in:n2", named(4), Options{Baseline: true}},
		{"all-4", "all", named(4), Options{}},
		{"ring-2-of-7", "ring:2", named(7), Options{}},
		{"sample-2-cross", "sample:2", named(8, "a", "b", "c"), Options{Zones: CrossZone, Seed: 1}},
		{"pairs-1000", "pairs", named(1000), Options{}},
		{"fan-in-1000-baseline", "fan-in", named(1000), Options{Baseline: true}},
		{"sample-3-of-10000", "sample:3", named(10000), Options{Seed: 7}},
		{"all-40", "all", named(40), Options{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := build(t, tc.mode, tc.nodes, tc.o)
			var b strings.Builder
			if err := p.Describe(&b, nameList(tc.nodes), 10*time.Second); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "testdata/golden/"+tc.name+".txt", b.String())
		})
	}
}

// TestDescribeNoTime leaves the estimate out and names nodes beyond the
// names given by number.
func TestDescribeNoTime(t *testing.T) {
	p := build(t, "pairs", named(3), Options{})
	var b strings.Builder
	if err := p.Describe(&b, []string{"a", "b"}, 0); err != nil {
		t.Fatal(err)
	}
	want := `plan: pairs, 3 nodes, 3 rounds, 6 steps, 6 tests
round 1
  step 1: b -> #2
  step 2: #2 -> b
round 2
  step 1: a -> #2
  step 2: #2 -> a
round 3
  step 1: a -> b
  step 2: b -> a
`
	if got := b.String(); got != want {
		t.Errorf("Describe:\n%s\nwant:\n%s", got, want)
	}
}
