package fairpool

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Each arrival's outcome: "in" (a free place), "in, took X#n" (the place
// of the n-th arrival, from X), or "refused".
func TestFairPool(t *testing.T) {
	type arrival struct {
		from string
		seq  uint64
	}
	seqOf := func(from ...string) []arrival {
		var out []arrival
		for i, f := range from {
			out = append(out, arrival{f, uint64(i + 1)})
		}
		return out
	}
	cases := []struct {
		name         string
		max, perHost int
		evictEqual   bool
		arrivals     []arrival
		want         []string
	}{
		{
			name: "an address at its share pushes out its own oldest", max: 8, perHost: 2, evictEqual: true,
			arrivals: seqOf("A", "A", "A", "A"),
			want:     []string{"in", "in", "in, took A#1", "in, took A#2"},
		},
		{
			name: "newcomers take the fullest address's oldest, then their own", max: 4, perHost: 4, evictEqual: true,
			arrivals: seqOf("A", "A", "A", "A", "B", "B", "B", "C"),
			want:     []string{"in", "in", "in", "in", "in, took A#1", "in, took A#2", "in, took B#5", "in, took A#3"},
		},
		{
			name: "echoes: a running one gives way only to an address two fewer", max: 4, perHost: 4,
			arrivals: seqOf("A", "A", "A", "A", "B", "B", "B", "C", "D"),
			want:     []string{"in", "in", "in", "in", "in, took A#1", "in, took A#2", "refused", "in, took A#3", "in, took B#5"},
		},
		{
			name: "echoes: over the share of an address", max: 8, perHost: 2,
			arrivals: seqOf("A", "A", "A", "B"),
			want:     []string{"in", "in", "refused", "in"},
		},
		{
			name: "every address holds one: the oldest goes", max: 3, perHost: 4, evictEqual: true,
			arrivals: seqOf("A", "B", "C", "D", "E"),
			want:     []string{"in", "in", "in", "in, took A#1", "in, took B#2"},
		},
		{
			// A connection whose goroutine ran late is older than the one
			// it would push out: it goes itself.
			name: "the oldest is by accept order", max: 8, perHost: 1, evictEqual: true,
			arrivals: []arrival{{"A", 5}, {"A", 3}, {"A", 7}},
			want:     []string{"in", "refused", "in, took A#5"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := New(c.max, c.perHost, c.evictEqual)
			var got []string
			for _, a := range c.arrivals {
				host := netip.MustParseAddr(map[string]string{"A": "198.18.0.1", "B": "198.18.0.2", "C": "198.18.0.3", "D": "198.18.0.4", "E": "198.18.0.5"}[a.from])
				pl, victim := p.Add(host, a.seq, nil)
				switch {
				case pl == nil:
					got = append(got, "refused")
				case victim == nil:
					got = append(got, "in")
				default:
					got = append(got, fmt.Sprintf("in, took %c#%d", 'A'+victim.Host.As4()[3]-1, victim.Seq))
				}
				if n := countPlaces(p); n != p.Len() || n > c.max {
					t.Fatalf("%d places held, the pool counts %d (at most %d)", n, p.Len(), c.max)
				}
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("arrivals (-want +got):\n%s", diff)
			}
		})
	}
}

func countPlaces(p *Pool) int {
	n := 0
	for _, ps := range p.by {
		n += len(ps)
	}
	return n
}

// A place given back frees it once; a place taken from its connection is
// not given back twice.
func TestFairPoolRelease(t *testing.T) {
	p := New(1, 1, true)
	a := netip.MustParseAddr("198.18.0.1")
	first, _ := p.Add(a, 1, nil)
	second, victim := p.Add(a, 2, nil)
	if victim != first || !first.Gone() {
		t.Fatalf("the second did not take the first's place")
	}
	if p.Release(first) {
		t.Error("the first, whose place was taken, gave it back")
	}
	if !p.Release(second) || p.Len() != 0 || len(p.Holding()) != 0 {
		t.Errorf("after the second gave its place back: %d held, %d addresses", p.n, len(p.by))
	}
}

// IPv6 addresses count by their /64: a flood from one /64 is one address.
func TestFairPoolShareIPv6(t *testing.T) {
	p := New(4, 2, true)
	var victims []string
	for i := range 4 {
		_, v := p.Add(netip.MustParseAddr(fmt.Sprintf("2001:2::%x", i+1)), uint64(i+1), nil)
		if v != nil {
			victims = append(victims, fmt.Sprint(v.Host, "#", v.Seq))
		}
	}
	pl, v := p.Add(netip.MustParseAddr("2001:2:0:1::1"), 5, nil)
	if pl == nil || v != nil {
		t.Errorf("another /64 with places free: %v, took %v", pl, v)
	}
	if diff := cmp.Diff([]string{"2001:2::#1", "2001:2::#2"}, victims); diff != "" {
		t.Errorf("4 addresses of one /64 with a share of 2 (-want +got):\n%s", diff)
	}
	if got := Share(netip.MustParseAddr("::ffff:198.18.0.1")); got != netip.MustParseAddr("198.18.0.1") {
		t.Errorf("Share of a v4-mapped address: %v", got)
	}
}
