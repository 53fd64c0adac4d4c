package plan

import (
	"fmt"
	"slices"
	"time"
)

// Node is one agent as the plan sees it.
type Node struct {
	Name string // unique among the nodes
	Zone string // "" for none: all such nodes form one zone
}

// Options change how a mode is planned.
type Options struct {
	Isolate  bool   // exactly one test per step (not for fan-in and all)
	Baseline bool   // fan-in: each client alone first, in a round of its own
	Zones    Zones  // pairs, ring, sample: only same-zone or only cross-zone pairs
	Seed     uint64 // sample: the same seed gives the same plan
}

// PhaseBaseline is the Phase of fan-in's one-client-at-a-time tests.
const PhaseBaseline = "baseline"

// Test is one measurement: Src sends to Dst (node indexes).
type Test struct {
	Src, Dst int
	Phase    string // "" or PhaseBaseline
}

// Round is a group of steps run one after the other; the tests of a step
// run at the same time.
type Round struct {
	Steps [][]Test
}

// Plan is which tests run when, for N nodes.
type Plan struct {
	Mode    Mode
	Options Options
	N       int
	Rounds  []Round
}

// MaxTests bounds the tests of a plan (pairs and all on about 4000 nodes),
// which Build checks before it allocates them.
const MaxTests = 1 << 24

// Tests returns the number of tests in the plan.
func (p *Plan) Tests() int {
	n := 0
	for _, r := range p.Rounds {
		for _, s := range r.Steps {
			n += len(s)
		}
	}
	return n
}

// Steps returns the number of steps in the plan, all rounds together.
func (p *Plan) Steps() int {
	n := 0
	for _, r := range p.Rounds {
		n += len(r.Steps)
	}
	return n
}

// Estimate returns how long the plan takes if each step takes perTest.
func (p *Plan) Estimate(perTest time.Duration) time.Duration {
	return time.Duration(p.Steps()) * perTest
}

// Build plans mode m over nodes with options o. Its errors are one line
// naming the cause and the fix.
func Build(m Mode, nodes []Node, o Options) (*Plan, error) {
	n := len(nodes)
	if n < 2 {
		return nil, fmt.Errorf("a mesh needs at least 2 agents, found %d", n)
	}
	index := make(map[string]int, n)
	for i, nd := range nodes {
		if j, ok := index[nd.Name]; ok {
			return nil, fmt.Errorf("agents %d and %d are both named %q; every agent needs a name of its own", j, i, nd.Name)
		}
		index[nd.Name] = i
	}
	if err := checkOptions(m, n, o); err != nil {
		return nil, err
	}
	p := &Plan{Mode: m, Options: o, N: n}
	var err error
	switch m.Kind {
	case Pairs:
		p.Rounds, err = pairs(m, nodes, o)
	case FanIn:
		server := 0
		if m.Server != "" {
			s, ok := index[m.Server]
			if !ok {
				return nil, fmt.Errorf("mode %q: no agent is named %q; give the name of one, e.g. fan-in:%s", m, m.Server, nodes[0].Name)
			}
			server = s
		}
		p.Rounds = fanIn(n, server, o.Baseline)
	case All:
		p.Rounds = all(n)
	case Ring:
		p.Rounds, err = ring(m, nodes, o)
	case Sample:
		p.Rounds, err = sample(m, nodes, o)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// checkOptions refuses what a mode cannot do, before anything is built.
func checkOptions(m Mode, n int, o Options) error {
	if _, err := ParseZones(string(o.Zones)); err != nil {
		return err
	}
	switch m.Kind {
	case Pairs, All:
		if int64(n)*int64(n-1) > MaxTests {
			return fmt.Errorf("mode %q on %d agents makes %d tests, more than a plan holds (%d); use ring:K or sample:K", m, n, int64(n)*int64(n-1), MaxTests)
		}
	case FanIn:
	case Ring, Sample:
		if m.K < 1 || m.K > n-1 {
			return fmt.Errorf("mode %q: K must be 1 to N-1 = %d with %d agents (%s)", m, n-1, n, kHelp(m.Kind))
		}
		if int64(n)*int64(m.K) > MaxTests {
			return fmt.Errorf("mode %q on %d agents makes %d tests, more than a plan holds (%d); lower K", m, n, n*m.K, MaxTests)
		}
	default:
		return fmt.Errorf("mode %q: unknown; use pairs, fan-in, fan-in:NAME, all, ring:K or sample:K", m)
	}
	if m.Kind == FanIn || m.Kind == All {
		if o.Isolate {
			return fmt.Errorf("mode %q cannot be isolated: it runs many tests at once by design; use pairs with isolate for one test at a time", m)
		}
		if o.Zones != AnyZone {
			return fmt.Errorf("mode %q takes no zones; zones %s applies to pairs, ring:K and sample:K", m, o.Zones)
		}
	}
	if o.Baseline && m.Kind != FanIn {
		return fmt.Errorf("mode %q takes no baseline: the baseline (each client alone, then all at once) is for fan-in", m)
	}
	return nil
}

// zone is one zone's nodes, in index order.
type zone struct {
	name  string
	nodes []int
}

// zonesOf groups the nodes by zone, zones sorted by name.
func zonesOf(nodes []Node) []zone {
	at := map[string]int{}
	var zs []zone
	for i, nd := range nodes {
		j, ok := at[nd.Zone]
		if !ok {
			j = len(zs)
			at[nd.Zone] = j
			zs = append(zs, zone{name: nd.Zone})
		}
		zs[j].nodes = append(zs[j].nodes, i)
	}
	slices.SortFunc(zs, func(a, b zone) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	return zs
}

// largest returns the zone with the most nodes (the first by name of those).
func largest(zs []zone) zone {
	big := zs[0]
	for _, z := range zs[1:] {
		if len(z.nodes) > len(big.nodes) {
			big = z
		}
	}
	return big
}

// smallest returns the zone with the fewest nodes (the first by name of those).
func smallest(zs []zone) zone {
	small := zs[0]
	for _, z := range zs[1:] {
		if len(z.nodes) < len(small.nodes) {
			small = z
		}
	}
	return small
}

// crossLimits checks that cross-zone rings and samples can be balanced and
// returns the size of the largest zone.
func crossLimits(m Mode, n int, zs []zone) (int, error) {
	if len(zs) == 1 {
		return 0, fmt.Errorf("mode %q with zones cross: every agent is in zone %q, so no pair crosses zones; drop zones cross or fix the agents' zones", m, zs[0].name)
	}
	big := largest(zs)
	mz := len(big.nodes)
	if 2*mz > n {
		return 0, fmt.Errorf("mode %q with zones cross: zone %q holds %d of the %d agents, more than half, so its nodes cannot receive as many tests as they send; use pairs with zones cross", m, big.name, mz, n)
	}
	return mz, nil
}

// fanIn plans every other node sending to server at once, after a
// baseline round of one client at a time if asked.
func fanIn(n, server int, baseline bool) []Round {
	var rounds []Round
	if baseline {
		var r Round
		for c := range n {
			if c != server {
				r.Steps = append(r.Steps, []Test{{Src: c, Dst: server, Phase: PhaseBaseline}})
			}
		}
		rounds = append(rounds, r)
	}
	step := make([]Test, 0, n-1)
	for c := range n {
		if c != server {
			step = append(step, Test{Src: c, Dst: server})
		}
	}
	return append(rounds, Round{Steps: [][]Test{step}})
}

// all plans everyone at once: round r is one step in which i sends to i+r.
func all(n int) []Round {
	rounds := make([]Round, 0, n-1)
	for r := 1; r < n; r++ {
		step := make([]Test, n)
		for i := range n {
			step[i] = Test{Src: i, Dst: (i + r) % n}
		}
		rounds = append(rounds, Round{Steps: [][]Test{step}})
	}
	return rounds
}
