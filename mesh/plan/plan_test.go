package plan

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// sizes are the node counts the property tests run over: small, odd and
// even, powers of two, and a few drawn at random (fixed seed).
func sizes() []int {
	ns := []int{2, 3, 4, 5, 7, 8, 16, 33}
	rng := rand.New(rand.NewPCG(1, 2))
	for len(ns) < 12 {
		if n := 6 + rng.IntN(60); !slices.Contains(ns, n) {
			ns = append(ns, n)
		}
	}
	return ns
}

// named returns n nodes named n0, n1, ... with zones from zones (cycled;
// none if zones is empty).
func named(n int, zones ...string) []Node {
	nodes := make([]Node, n)
	for i := range nodes {
		nodes[i].Name = fmt.Sprintf("n%d", i)
		if len(zones) > 0 {
			nodes[i].Zone = zones[i%len(zones)]
		}
	}
	return nodes
}

// facts are what a plan does, counted by checkPlan.
type facts struct {
	pairs     map[[2]int]int // the tests of each ordered pair (every phase)
	sends     []int          // the tests each node sends
	receives  []int          // the tests each node receives
	perStep   [][]int        // per round, the number of tests of each step
	nodeTwice bool           // some node is in two tests of one step
}

// checkPlan checks what every plan promises (nodes in range, no test to
// itself, no empty step or round, the N of the plan) and counts the rest.
func checkPlan(t *testing.T, p *Plan, n int) facts {
	t.Helper()
	if p.N != n {
		t.Errorf("plan.N = %d, want %d", p.N, n)
	}
	f := facts{pairs: map[[2]int]int{}, sends: make([]int, n), receives: make([]int, n)}
	steps, tests := 0, 0
	for r, round := range p.Rounds {
		if len(round.Steps) == 0 {
			t.Errorf("round %d has no steps", r)
		}
		var per []int
		for s, step := range round.Steps {
			if len(step) == 0 {
				t.Errorf("round %d step %d has no tests", r, s)
			}
			in := map[int]bool{}
			for _, x := range step {
				if x.Src < 0 || x.Src >= n || x.Dst < 0 || x.Dst >= n {
					t.Fatalf("round %d step %d: test %v out of 0..%d", r, s, x, n-1)
				}
				if x.Src == x.Dst {
					t.Errorf("round %d step %d: node %d tests itself", r, s, x.Src)
				}
				if in[x.Src] || in[x.Dst] {
					f.nodeTwice = true
				}
				in[x.Src], in[x.Dst] = true, true
				f.pairs[[2]int{x.Src, x.Dst}]++
				f.sends[x.Src]++
				f.receives[x.Dst]++
			}
			per = append(per, len(step))
			tests += len(step)
		}
		steps += len(round.Steps)
		f.perStep = append(f.perStep, per)
	}
	if p.Steps() != steps || p.Tests() != tests {
		t.Errorf("Steps(), Tests() = %d, %d; counted %d, %d", p.Steps(), p.Tests(), steps, tests)
	}
	return f
}

// everyPair returns each ordered pair allowed by ok, once.
func everyPair(n int, ok func(a, b int) bool) map[[2]int]int {
	want := map[[2]int]int{}
	for a := range n {
		for b := range n {
			if a != b && ok(a, b) {
				want[[2]int{a, b}] = 1
			}
		}
	}
	return want
}

func anyPair(a, b int) bool { return true }

func build(t *testing.T, mode string, nodes []Node, o Options) *Plan {
	t.Helper()
	m, err := ParseMode(mode)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(m, nodes, o)
	if err != nil {
		t.Fatalf("Build(%s, %d nodes, %+v): %v", mode, len(nodes), o, err)
	}
	return p
}

func TestPairs(t *testing.T) {
	for _, n := range sizes() {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			p := build(t, "pairs", named(n), Options{})
			f := checkPlan(t, p, n)
			if diff := cmp.Diff(everyPair(n, anyPair), f.pairs); diff != "" {
				t.Errorf("ordered pairs (-want +got):\n%s", diff)
			}
			rounds := n - 1
			if n%2 == 1 {
				rounds = n
			}
			if len(p.Rounds) != rounds {
				t.Errorf("%d rounds, want %d", len(p.Rounds), rounds)
			}
			if f.nodeTwice {
				t.Error("a node is in two tests of one step")
			}
			for r, round := range p.Rounds {
				if len(round.Steps) != 2 {
					t.Fatalf("round %d has %d steps, want 2", r, len(round.Steps))
				}
				// The second step is the first one turned round, and a
				// round is a perfect matching (one node out for odd N).
				var back []Test
				for _, x := range round.Steps[0] {
					back = append(back, Test{Src: x.Dst, Dst: x.Src})
				}
				if diff := cmp.Diff(asSet(back), asSet(round.Steps[1])); diff != "" {
					t.Errorf("round %d: step 2 is not step 1 reversed (-want +got):\n%s", r, diff)
				}
				if len(round.Steps[0]) != n/2 {
					t.Errorf("round %d matches %d pairs, want %d", r, len(round.Steps[0]), n/2)
				}
			}
		})
	}
}

func asSet(ts []Test) map[Test]bool {
	m := map[Test]bool{}
	for _, x := range ts {
		m[x] = true
	}
	return m
}

func TestIsolate(t *testing.T) {
	for _, mode := range []string{"pairs", "ring:2", "sample:2"} {
		for _, n := range []int{3, 8, 33} {
			t.Run(fmt.Sprintf("%s/%d", mode, n), func(t *testing.T) {
				plain := build(t, mode, named(n), Options{Seed: 7})
				p := build(t, mode, named(n), Options{Isolate: true, Seed: 7})
				f := checkPlan(t, p, n)
				for r, per := range f.perStep {
					for s, c := range per {
						if c != 1 {
							t.Fatalf("round %d step %d has %d tests, want 1", r, s, c)
						}
					}
				}
				// The same tests in the same rounds, only one at a time.
				if len(p.Rounds) != len(plain.Rounds) {
					t.Fatalf("%d rounds, %d without isolate", len(p.Rounds), len(plain.Rounds))
				}
				for r := range p.Rounds {
					if diff := cmp.Diff(isolate(plain.Rounds[r].Steps), p.Rounds[r].Steps); diff != "" {
						t.Errorf("round %d (-want +got):\n%s", r, diff)
					}
				}
			})
		}
	}
}

func TestAll(t *testing.T) {
	for _, n := range sizes() {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			p := build(t, "all", named(n), Options{})
			f := checkPlan(t, p, n)
			if diff := cmp.Diff(everyPair(n, anyPair), f.pairs); diff != "" {
				t.Errorf("ordered pairs (-want +got):\n%s", diff)
			}
			if len(p.Rounds) != n-1 {
				t.Errorf("%d rounds, want %d", len(p.Rounds), n-1)
			}
			for r, round := range p.Rounds {
				if len(round.Steps) != 1 {
					t.Fatalf("round %d has %d steps, want 1", r, len(round.Steps))
				}
				sends, receives := make([]int, n), make([]int, n)
				for _, x := range round.Steps[0] {
					sends[x.Src]++
					receives[x.Dst]++
				}
				for i := range n {
					if sends[i] != 1 || receives[i] != 1 {
						t.Errorf("round %d: node %d sends %d and receives %d, want 1 and 1", r, i, sends[i], receives[i])
					}
				}
			}
		})
	}
}

func TestFanIn(t *testing.T) {
	nodes := named(4)
	want := func(server int, baseline bool) []Round {
		var rounds []Round
		var all []Test
		var one [][]Test
		for c := range 4 {
			if c != server {
				all = append(all, Test{Src: c, Dst: server})
				one = append(one, []Test{{Src: c, Dst: server, Phase: PhaseBaseline}})
			}
		}
		if baseline {
			rounds = append(rounds, Round{Steps: one})
		}
		return append(rounds, Round{Steps: [][]Test{all}})
	}
	for _, tc := range []struct {
		mode     string
		baseline bool
		server   int
	}{
		{"fan-in", false, 0},
		{"fan-in", true, 0},
		{"fan-in:n2", false, 2},
		{"fan-in:n3", true, 3},
	} {
		t.Run(fmt.Sprintf("%s/%v", tc.mode, tc.baseline), func(t *testing.T) {
			p := build(t, tc.mode, nodes, Options{Baseline: tc.baseline})
			checkPlan(t, p, 4)
			if diff := cmp.Diff(want(tc.server, tc.baseline), p.Rounds); diff != "" {
				t.Errorf("rounds (-want +got):\n%s", diff)
			}
		})
	}
	for _, n := range sizes() {
		p := build(t, "fan-in", named(n), Options{Baseline: true})
		f := checkPlan(t, p, n)
		if got := len(p.Rounds); got != 2 || len(p.Rounds[0].Steps) != n-1 || len(p.Rounds[1].Steps) != 1 || len(p.Rounds[1].Steps[0]) != n-1 {
			t.Errorf("N=%d: per-step counts %v, want %d single steps then one of %d", n, f.perStep, n-1, n-1)
		}
		if f.receives[0] != 2*(n-1) {
			t.Errorf("N=%d: the server receives %d tests, want %d", n, f.receives[0], 2*(n-1))
		}
	}
}

// balanced checks that every node sends k tests and receives k, to k
// distinct peers.
func balanced(t *testing.T, f facts, k int) {
	t.Helper()
	for i := range f.sends {
		if f.sends[i] != k || f.receives[i] != k {
			t.Fatalf("node %d sends %d and receives %d, want %d and %d", i, f.sends[i], f.receives[i], k, k)
		}
	}
	for pr, c := range f.pairs {
		if c != 1 {
			t.Fatalf("%d -> %d runs %d times", pr[0], pr[1], c)
		}
	}
}

func TestRing(t *testing.T) {
	for _, n := range sizes() {
		for _, k := range []int{1, 2, 3, n / 2, n - 1} {
			if k < 1 || k > n-1 {
				continue
			}
			t.Run(fmt.Sprintf("%d/%d", n, k), func(t *testing.T) {
				p := build(t, fmt.Sprintf("ring:%d", k), named(n), Options{})
				f := checkPlan(t, p, n)
				if f.nodeTwice {
					t.Error("a node is in two tests of one step")
				}
				want := everyPair(n, func(a, b int) bool { return (b-a+n)%n <= k })
				if diff := cmp.Diff(want, f.pairs); diff != "" {
					t.Errorf("ordered pairs (-want +got):\n%s", diff)
				}
				balanced(t, f, k)
				if len(p.Rounds) != k {
					t.Errorf("%d rounds, want %d", len(p.Rounds), k)
				}
				for r, round := range p.Rounds {
					if len(round.Steps) < 2 || len(round.Steps) > 3 {
						t.Errorf("round %d has %d steps, want 2 or 3", r, len(round.Steps))
					}
				}
			})
		}
	}
}

func TestSample(t *testing.T) {
	cases := []struct{ n, k int }{{2, 1}, {3, 2}, {5, 4}, {16, 3}, {33, 5}, {1000, 3}, {1000, 20}, {10000, 3}}
	for _, n := range sizes() {
		cases = append(cases, struct{ n, k int }{n, 1 + n/3})
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%d/%d", tc.n, tc.k), func(t *testing.T) {
			nodes := named(tc.n)
			mode := fmt.Sprintf("sample:%d", tc.k)
			p := build(t, mode, nodes, Options{Seed: 42})
			f := checkPlan(t, p, tc.n)
			if f.nodeTwice {
				t.Error("a node is in two tests of one step")
			}
			balanced(t, f, tc.k)
			if len(p.Rounds) != tc.k {
				t.Errorf("%d rounds, want %d", len(p.Rounds), tc.k)
			}
			again := build(t, mode, nodes, Options{Seed: 42})
			if !reflect.DeepEqual(p, again) {
				t.Error("the same seed gives another plan")
			}
			if tc.n >= 16 {
				other := build(t, mode, nodes, Options{Seed: 43})
				if reflect.DeepEqual(p.Rounds, other.Rounds) {
					t.Error("seeds 42 and 43 give the same plan")
				}
			}
		})
	}
}

// TestSampleDraws checks that sample's peers are spread: over seeds, node
// 0 of 8 gets every other node as a peer.
func TestSampleDraws(t *testing.T) {
	seen := map[int]bool{}
	for seed := range uint64(50) {
		p := build(t, "sample:1", named(8), Options{Seed: seed})
		for _, s := range p.Rounds[0].Steps {
			for _, x := range s {
				if x.Src == 0 {
					seen[x.Dst] = true
				}
			}
		}
	}
	if len(seen) != 7 {
		t.Errorf("over 50 seeds node 0 sent to %v, want all of 1..7", seen)
	}
}

// zoneLayouts are zone assignments for the zone tests: even, uneven, with
// nodes of no zone, and drawn at random.
func zoneLayouts() map[string][]Node {
	layouts := map[string][]Node{
		"two-even":   named(10, "a", "b"),
		"three":      named(13, "a", "b", "c"),
		"no-zone":    named(12, "", "x", "y", "x"),
		"four-small": named(8, "a", "b", "c", "d"),
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 3 {
		n := 12 + rng.IntN(40)
		nodes := named(n)
		for j := range nodes {
			nodes[j].Zone = string(rune('p' + rng.IntN(3+i)))
		}
		layouts[fmt.Sprintf("random-%d", i)] = nodes
	}
	return layouts
}

func TestZonesPairs(t *testing.T) {
	for name, nodes := range zoneLayouts() {
		for _, z := range []Zones{SameZone, CrossZone} {
			t.Run(name+"/"+string(z), func(t *testing.T) {
				n := len(nodes)
				p := build(t, "pairs", nodes, Options{Zones: z})
				f := checkPlan(t, p, n)
				if f.nodeTwice {
					t.Error("a node is in two tests of one step")
				}
				want := everyPair(n, func(a, b int) bool { return (nodes[a].Zone == nodes[b].Zone) == (z == SameZone) })
				if diff := cmp.Diff(want, f.pairs); diff != "" {
					t.Errorf("ordered pairs (-want +got):\n%s", diff)
				}
				if z == SameZone {
					// Zones side by side: as many rounds as the largest
					// zone's tournament.
					big := len(largest(zonesOf(nodes)).nodes)
					if want := big - 1 + big%2; len(p.Rounds) != want {
						t.Errorf("%d rounds, want %d for a largest zone of %d", len(p.Rounds), want, big)
					}
				}
			})
		}
	}
}

func TestZonesRingSample(t *testing.T) {
	for name, nodes := range zoneLayouts() {
		n := len(nodes)
		zs := zonesOf(nodes)
		big, small := len(largest(zs).nodes), len(smallest(zs).nodes)
		for _, mode := range []string{"ring", "sample"} {
			for _, z := range []Zones{SameZone, CrossZone} {
				k := small - 1 // the most zones same allows
				if z == CrossZone {
					k = n - 2*big + 1 // the most one layout allows
				}
				if k < 1 || 2*big > n && z == CrossZone {
					continue
				}
				for _, k := range []int{1, k} {
					t.Run(fmt.Sprintf("%s/%s:%d/%s", name, mode, k, z), func(t *testing.T) {
						p := build(t, fmt.Sprintf("%s:%d", mode, k), nodes, Options{Zones: z, Seed: 9})
						f := checkPlan(t, p, n)
						if f.nodeTwice {
							t.Error("a node is in two tests of one step")
						}
						balanced(t, f, k)
						for pr := range f.pairs {
							if same := nodes[pr[0]].Zone == nodes[pr[1]].Zone; same != (z == SameZone) {
								t.Errorf("%d (zone %q) -> %d (zone %q) with zones %s", pr[0], nodes[pr[0]].Zone, pr[1], nodes[pr[1]].Zone, z)
							}
						}
					})
				}
			}
		}
	}
}

// TestSampleCrossBeyondOneLayout asks zones cross for more peers than one
// layout's shifts give (K > N-2M+1), up to every node of the other zone.
func TestSampleCrossBeyondOneLayout(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []Node
		k     int
	}{
		{"2x3-all", named(6, "a", "b"), 3},
		{"2x4-all", named(8, "a", "b"), 4},
		{"2x500", named(1000, "a", "b"), 3},
		{"2x500-many", named(1000, "a", "b"), 40},
		{"4-3-3", named(10, "a", "b", "c", "a", "b", "c", "a", "b", "c", "a"), 5},
		{"40-30-30", named(100, "a", "b", "c", "a", "b", "c", "a", "b", "c", "a"), 45},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := range uint64(5) {
				p := build(t, fmt.Sprintf("sample:%d", tc.k), tc.nodes, Options{Zones: CrossZone, Seed: seed})
				f := checkPlan(t, p, len(tc.nodes))
				if f.nodeTwice {
					t.Error("a node is in two tests of one step")
				}
				balanced(t, f, tc.k)
				for pr := range f.pairs {
					if tc.nodes[pr[0]].Zone == tc.nodes[pr[1]].Zone {
						t.Errorf("seed %d: %d -> %d in one zone", seed, pr[0], pr[1])
					}
				}
			}
		})
	}
}

func TestEstimate(t *testing.T) {
	p := build(t, "pairs", named(5), Options{})
	if p.Steps() != 10 || p.Tests() != 20 {
		t.Fatalf("Steps, Tests = %d, %d; want 10, 20", p.Steps(), p.Tests())
	}
	if got, want := p.Estimate(10*time.Second), 100*time.Second; got != want {
		t.Errorf("Estimate(10s) = %s, want %s", got, want)
	}
}

func BenchmarkSample(b *testing.B) {
	m := Mode{Kind: Sample, K: 3}
	nodes := named(10000)
	for b.Loop() {
		if _, err := Build(m, nodes, Options{Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(10000*3), "tests/op")
}

func BenchmarkSampleCross(b *testing.B) {
	m := Mode{Kind: Sample, K: 3}
	nodes := named(10000, "a", "b")
	for b.Loop() {
		if _, err := Build(m, nodes, Options{Seed: 1, Zones: CrossZone}); err != nil {
			b.Fatal(err)
		}
	}
}
