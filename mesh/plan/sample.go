package plan

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// sample plans each node sending to K random peers and receiving from K.
// A group of nodes is shuffled (zone by zone for zones cross) and K
// distinct shifts are drawn; the shift by d is one round. Distinct shifts
// of one order give distinct peers, and a shift of at least the largest
// zone's size over nodes laid out zone by zone stays out of every zone.
func sample(m Mode, nodes []Node, o Options) ([]Round, error) {
	n, k := len(nodes), m.K
	rng := rand.New(rand.NewPCG(o.Seed, 0x626c617374)) // "blast"
	perms := make([][]int, k)
	for j := range perms {
		perms[j] = newPerm(n)
	}
	switch o.Zones {
	case AnyZone:
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		rng.Shuffle(n, func(a, b int) { order[a], order[b] = order[b], order[a] })
		for j, d := range distinct(rng, 1, n-1, k) {
			shifted(perms[j], order, d)
		}
	case SameZone:
		zs := zonesOf(nodes)
		if err := sameLimits(m, zs); err != nil {
			return nil, err
		}
		for _, z := range zs {
			order := slices.Clone(z.nodes)
			rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
			for j, d := range distinct(rng, 1, len(order)-1, k) {
				shifted(perms[j], order, d)
			}
		}
	case CrossZone:
		zs := zonesOf(nodes)
		mz, err := crossLimits(m, n, zs)
		if err != nil {
			return nil, err
		}
		if k > n-mz {
			return nil, fmt.Errorf("mode %q with zones cross: a node of zone %q has only %d agents in other zones; lower K to at most %d", m, largest(zs).name, n-mz, n-mz)
		}
		if k <= n-2*mz+1 {
			order := crossOrder(rng, zs, n)
			for j, d := range distinct(rng, mz, n-mz, k) {
				shifted(perms[j], order, d)
			}
		} else if !crossRepaired(rng, perms, nodes, zs, mz) {
			return nil, fmt.Errorf("mode %q with zones cross: found no balanced choice of peers, as zone %q holds %d of the %d agents; lower K (up to N-2M+1 = %d always fits)", m, largest(zs).name, mz, n, n-2*mz+1)
		}
	}
	rounds := make([]Round, k)
	for j, perm := range perms {
		rounds[j] = permRound(perm, o.Isolate)
	}
	return rounds, nil
}

// distinct returns k distinct numbers drawn from lo..hi, in drawing order:
// the first k of a partial Fisher-Yates shuffle.
func distinct(rng *rand.Rand, lo, hi, k int) []int {
	xs := make([]int, hi-lo+1)
	for i := range xs {
		xs[i] = lo + i
	}
	for i := range k {
		j := i + rng.IntN(len(xs)-i)
		xs[i], xs[j] = xs[j], xs[i]
	}
	return xs[:k]
}

// crossOrder lays out the nodes zone after zone, the zones and the nodes
// in each shuffled.
func crossOrder(rng *rand.Rand, zs []zone, n int) []int {
	zs = slices.Clone(zs)
	rng.Shuffle(len(zs), func(a, b int) { zs[a], zs[b] = zs[b], zs[a] })
	order := make([]int, 0, n)
	for _, z := range zs {
		start := len(order)
		order = append(order, z.nodes...)
		part := order[start:]
		rng.Shuffle(len(part), func(a, b int) { part[a], part[b] = part[b], part[a] })
	}
	return order
}

// crossRepaired fills perms for zones cross when K is above N-2M+1, where
// one layout has too few shifts: each round is a shift of a layout of its
// own, and a node that would meet a peer again swaps its peer with another
// node's. It gives up, reporting false, after about 16 swap attempts per
// test of the plan: enough up to about 3/4 of N-M in practice.
func crossRepaired(rng *rand.Rand, perms [][]int, nodes []Node, zs []zone, mz int) bool {
	n := len(nodes)
	used := make(map[uint64]struct{}, n*len(perms)) // src*n+dst of the rounds so far
	met := func(i, d int) bool {
		_, ok := used[uint64(i)*uint64(n)+uint64(d)]
		return ok
	}
	ok := func(i, d int) bool { return nodes[i].Zone != nodes[d].Zone && !met(i, d) }
	budget := 16*n*len(perms) + 10000
	perNode := 8*n + 64
	for _, perm := range perms {
		for done := false; !done; {
			if budget <= 0 {
				return false
			}
			budget -= n
			shifted(perm, crossOrder(rng, zs, n), mz+rng.IntN(n-2*mz+1))
			done = true
			for i := 0; i < n && done; i++ {
				if !met(i, perm[i]) {
					continue
				}
				done = false
				for range min(perNode, budget) {
					budget--
					j := rng.IntN(n)
					if ok(i, perm[j]) && ok(j, perm[i]) {
						perm[i], perm[j] = perm[j], perm[i]
						done = true
						break
					}
				}
			}
		}
		for i, d := range perm {
			used[uint64(i)*uint64(n)+uint64(d)] = struct{}{}
		}
	}
	return true
}
