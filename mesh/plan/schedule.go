package plan

import (
	"cmp"
	"fmt"
	"slices"
)

// circle returns the rounds of a round-robin tournament among members (node
// indexes in increasing order) by the circle method: each round a list of
// unordered pairs, lower node first, no node twice. An even number of
// members takes len-1 rounds, an odd number len rounds (each round one
// member sits out).
func circle(members []int) [][][2]int {
	s := len(members)
	if s < 2 {
		return nil
	}
	t := s + s%2 // with a dummy, t-1 when s is odd
	m := t - 1   // the rotating positions 0..m-1; position m is fixed
	rounds := make([][][2]int, m)
	for r := range m {
		pairs := make([][2]int, 0, t/2)
		add := func(x, y int) {
			if x >= s || y >= s { // the dummy: the other sits out
				return
			}
			a, b := members[x], members[y]
			if a > b {
				a, b = b, a
			}
			pairs = append(pairs, [2]int{a, b})
		}
		add(r, m)
		for k := 1; k <= (m-1)/2; k++ {
			add((r+k)%m, (r-k+m)%m)
		}
		rounds[r] = pairs
	}
	return rounds
}

// pairs plans every allowed ordered pair once, in node-exclusive rounds of
// two steps: each matched pair one way, then the other.
func pairs(m Mode, nodes []Node, o Options) ([]Round, error) {
	var matchings [][][2]int
	switch o.Zones {
	case AnyZone, CrossZone:
		all := make([]int, len(nodes))
		for i := range all {
			all[i] = i
		}
		matchings = circle(all)
		if o.Zones == CrossZone {
			zs := zonesOf(nodes)
			if len(zs) == 1 {
				return nil, fmt.Errorf("mode %q with zones cross: every agent is in zone %q, so no pair crosses zones; drop zones cross or fix the agents' zones", m, zs[0].name)
			}
			for r, pp := range matchings {
				matchings[r] = slices.DeleteFunc(pp, func(p [2]int) bool {
					return nodes[p[0]].Zone == nodes[p[1]].Zone
				})
			}
		}
	case SameZone:
		// The tournaments of all zones side by side: round r of the plan is
		// round r of every zone that has one.
		for _, z := range zonesOf(nodes) {
			for r, pp := range circle(z.nodes) {
				if r == len(matchings) {
					matchings = append(matchings, nil)
				}
				matchings[r] = append(matchings[r], pp...)
			}
		}
		if len(matchings) == 0 {
			return nil, fmt.Errorf("mode %q with zones same: no two agents share a zone, so there is nothing to test; drop zones same or fix the agents' zones", m)
		}
	}
	rounds := make([]Round, 0, len(matchings))
	for _, pp := range matchings {
		if len(pp) == 0 {
			continue
		}
		slices.SortFunc(pp, func(a, b [2]int) int { return cmp.Compare(a[0], b[0]) })
		there := make([]Test, len(pp))
		back := make([]Test, len(pp))
		for i, p := range pp {
			there[i] = Test{Src: p[0], Dst: p[1]}
			back[i] = Test{Src: p[1], Dst: p[0]}
		}
		slices.SortFunc(back, func(a, b Test) int { return cmp.Compare(a.Src, b.Src) })
		steps := [][]Test{there, back}
		if o.Isolate {
			steps = isolate(steps)
		}
		rounds = append(rounds, Round{Steps: steps})
	}
	return rounds, nil
}

// isolate splits steps into one step per test, in order.
func isolate(steps [][]Test) [][]Test {
	var one [][]Test
	for _, s := range steps {
		for _, t := range s {
			one = append(one, []Test{t})
		}
	}
	return one
}

// permRound turns a permutation into a round: perm[i] is the node i sends
// to, or -1 if i takes no part; the nodes that take part must be a
// permutation of each other, without fixed points. Each cycle of the
// permutation is coloured alternately, the last test of an odd cycle with
// a third colour, and each colour is a node-exclusive step: 2 or 3 steps.
func permRound(perm []int, isolated bool) Round {
	colour := make([]int8, len(perm))
	seen := make([]bool, len(perm))
	for i, d := range perm {
		if d < 0 || seen[i] {
			continue
		}
		length := 0
		for j := i; !seen[j]; j = perm[j] {
			seen[j] = true
			length++
		}
		t := 0
		for j := i; t < length; j = perm[j] {
			c := int8(t % 2)
			if length%2 == 1 && t == length-1 {
				c = 2
			}
			colour[j] = c
			t++
		}
	}
	var steps [3][]Test
	for i, d := range perm {
		if d >= 0 {
			steps[colour[i]] = append(steps[colour[i]], Test{Src: i, Dst: d})
		}
	}
	var r Round
	for _, s := range steps {
		if len(s) > 0 {
			r.Steps = append(r.Steps, s)
		}
	}
	if isolated {
		r.Steps = isolate(r.Steps)
	}
	return r
}

// shifted fills perm so that the node at position p of order sends to the
// node at position p+d (mod len(order)).
func shifted(perm, order []int, d int) {
	for p, src := range order {
		perm[src] = order[(p+d)%len(order)]
	}
}

// newPerm returns a permutation of n nodes in which no node takes part yet.
func newPerm(n int) []int {
	perm := make([]int, n)
	for i := range perm {
		perm[i] = -1
	}
	return perm
}

// ring plans each node sending to its next K nodes: round d is the shift by
// d (by M+d-1 for zones cross, over the nodes laid out zone by zone).
func ring(m Mode, nodes []Node, o Options) ([]Round, error) {
	n, k := len(nodes), m.K
	rounds := make([]Round, 0, k)
	switch o.Zones {
	case AnyZone:
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		for d := 1; d <= k; d++ {
			perm := newPerm(n)
			shifted(perm, order, d)
			rounds = append(rounds, permRound(perm, o.Isolate))
		}
	case SameZone:
		zs := zonesOf(nodes)
		if err := sameLimits(m, zs); err != nil {
			return nil, err
		}
		for d := 1; d <= k; d++ {
			perm := newPerm(n)
			for _, z := range zs {
				shifted(perm, z.nodes, d)
			}
			rounds = append(rounds, permRound(perm, o.Isolate))
		}
	case CrossZone:
		zs := zonesOf(nodes)
		mz, err := crossLimits(m, n, zs)
		if err != nil {
			return nil, err
		}
		if most := n - 2*mz + 1; k > most {
			return nil, fmt.Errorf("mode %q with zones cross: at most ring:%d fits, as zone %q holds %d of the %d agents (K <= N-2M+1); lower K or use sample:K", m, most, largest(zs).name, mz, n)
		}
		order := make([]int, 0, n)
		for _, z := range zs {
			order = append(order, z.nodes...)
		}
		for d := mz; d < mz+k; d++ {
			perm := newPerm(n)
			shifted(perm, order, d)
			rounds = append(rounds, permRound(perm, o.Isolate))
		}
	}
	return rounds, nil
}

// sameLimits checks that every zone has more than K nodes.
func sameLimits(m Mode, zs []zone) error {
	small := smallest(zs)
	if len(small.nodes) > m.K {
		return nil
	}
	return fmt.Errorf("mode %q with zones same: zone %q has %d agent(s), too few for %d peers each in the zone; K must be less than the smallest zone's size", m, small.name, len(small.nodes), m.K)
}
