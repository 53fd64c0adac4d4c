package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseMode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Mode
	}{
		{"pairs", Mode{Kind: Pairs}},
		{"fan-in", Mode{Kind: FanIn}},
		{"fan-in:db-1", Mode{Kind: FanIn, Server: "db-1"}},
		{"fan-in:a:b", Mode{Kind: FanIn, Server: "a:b"}},
		{"all", Mode{Kind: All}},
		{"ring:1", Mode{Kind: Ring, K: 1}},
		{"ring:12", Mode{Kind: Ring, K: 12}},
		{"sample:3", Mode{Kind: Sample, K: 3}},
	} {
		got, err := ParseMode(tc.in)
		if err != nil {
			t.Errorf("ParseMode(%q): %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseMode(%q) (-want +got):\n%s", tc.in, diff)
		}
		if got.String() != tc.in {
			t.Errorf("ParseMode(%q).String() = %q", tc.in, got.String())
		}
	}
}

func TestParseModeErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", `mode "": unknown; use pairs, fan-in, fan-in:NAME, all, ring:K or sample:K`},
		{"mesh", `mode "mesh": unknown; use pairs, fan-in, fan-in:NAME, all, ring:K or sample:K`},
		{"Pairs", `mode "Pairs": unknown; use pairs, fan-in, fan-in:NAME, all, ring:K or sample:K`},
		{"pairs:2", `mode "pairs:2": pairs takes no argument; write pairs`},
		{"all:", `mode "all:": all takes no argument; write all`},
		{"fan-in:", `mode "fan-in:": the server's name is missing; write fan-in:NAME, or fan-in for node 0`},
		{"ring", `mode "ring": K is missing; write ring:K, e.g. ring:3 (the number of peers each node sends to)`},
		{"ring:", `mode "ring:": K is missing; write ring:K, e.g. ring:3 (the number of peers each node sends to)`},
		{"ring:0", `mode "ring:0": K must be 1 to N-1 (the number of peers each node sends to)`},
		{"ring:-2", `mode "ring:-2": K must be 1 to N-1 (the number of peers each node sends to)`},
		{"ring:99999999999999999999", `mode "ring:99999999999999999999": K must be 1 to N-1 (the number of peers each node sends to)`},
		{"ring:two", `mode "ring:two": K "two" is not a whole number; write ring:K, e.g. ring:3 (the number of peers each node sends to)`},
		{"sample:0", `mode "sample:0": K must be 1 to N-1 (the number of random peers each node sends to)`},
		{"sample:1.5", `mode "sample:1.5": K "1.5" is not a whole number; write sample:K, e.g. sample:3 (the number of random peers each node sends to)`},
	} {
		_, err := ParseMode(tc.in)
		if err == nil || err.Error() != tc.want {
			t.Errorf("ParseMode(%q) = %v\nwant %s", tc.in, err, tc.want)
		}
	}
}

func TestParseZones(t *testing.T) {
	for _, s := range []string{"", "same", "cross"} {
		if z, err := ParseZones(s); err != nil || string(z) != s {
			t.Errorf("ParseZones(%q) = %q, %v", s, z, err)
		}
	}
	want := `zones "region": unknown; use same or cross, or no zones for every pair`
	if _, err := ParseZones("region"); err == nil || err.Error() != want {
		t.Errorf("ParseZones(region) = %v, want %s", err, want)
	}
}

func TestBuildErrors(t *testing.T) {
	five := named(5)
	dup := named(3)
	dup[2].Name = "n0"
	for _, tc := range []struct {
		name  string
		mode  Mode
		nodes []Node
		o     Options
		want  string
	}{
		{"none", Mode{Kind: Pairs}, nil, Options{}, "a mesh needs at least 2 agents, found 0"},
		{"one", Mode{Kind: Pairs}, named(1), Options{}, "a mesh needs at least 2 agents, found 1"},
		{"one-fan-in", Mode{Kind: FanIn}, named(1), Options{}, "a mesh needs at least 2 agents, found 1"},
		{"same name", Mode{Kind: Pairs}, dup, Options{}, `agents 0 and 2 are both named "n0"; every agent needs a name of its own`},
		{"zero mode", Mode{}, five, Options{}, `mode "": unknown; use pairs, fan-in, fan-in:NAME, all, ring:K or sample:K`},
		{"ring K=N", Mode{Kind: Ring, K: 5}, five, Options{}, `mode "ring:5": K must be 1 to N-1 = 4 with 5 agents (the number of peers each node sends to)`},
		{"sample K=0", Mode{Kind: Sample}, five, Options{}, `mode "sample:0": K must be 1 to N-1 = 4 with 5 agents (the number of random peers each node sends to)`},
		{"server unknown", Mode{Kind: FanIn, Server: "db"}, five, Options{}, `mode "fan-in:db": no agent is named "db"; give the name of one, e.g. fan-in:n0`},
		{"fan-in isolated", Mode{Kind: FanIn}, five, Options{Isolate: true}, `mode "fan-in" cannot be isolated: it runs many tests at once by design; use pairs with isolate for one test at a time`},
		{"all isolated", Mode{Kind: All}, five, Options{Isolate: true}, `mode "all" cannot be isolated: it runs many tests at once by design; use pairs with isolate for one test at a time`},
		{"all zones", Mode{Kind: All}, five, Options{Zones: SameZone}, `mode "all" takes no zones; zones same applies to pairs, ring:K and sample:K`},
		{"fan-in zones", Mode{Kind: FanIn}, five, Options{Zones: CrossZone}, `mode "fan-in" takes no zones; zones cross applies to pairs, ring:K and sample:K`},
		{"bad zones", Mode{Kind: Pairs}, five, Options{Zones: "rack"}, `zones "rack": unknown; use same or cross, or no zones for every pair`},
		{"pairs baseline", Mode{Kind: Pairs}, five, Options{Baseline: true}, `mode "pairs" takes no baseline: the baseline (each client alone, then all at once) is for fan-in`},
		{"too many", Mode{Kind: Pairs}, named(5000), Options{}, `mode "pairs" on 5000 agents makes 24995000 tests, more than a plan holds (16777216); use ring:K or sample:K`},
		{"pairs same alone", Mode{Kind: Pairs}, named(3, "a", "b", "c"), Options{Zones: SameZone}, `mode "pairs" with zones same: no two agents share a zone, so there is nothing to test; drop zones same or fix the agents' zones`},
		{"pairs cross one zone", Mode{Kind: Pairs}, named(3, "a"), Options{Zones: CrossZone}, `mode "pairs" with zones cross: every agent is in zone "a", so no pair crosses zones; drop zones cross or fix the agents' zones`},
		{"ring same small zone", Mode{Kind: Ring, K: 2}, named(5, "a", "b"), Options{Zones: SameZone}, `mode "ring:2" with zones same: zone "b" has 2 agent(s), too few for 2 peers each in the zone; K must be less than the smallest zone's size`},
		{"sample same lone", Mode{Kind: Sample, K: 1}, named(5, "a", "a", "a", "a", ""), Options{Zones: SameZone}, `mode "sample:1" with zones same: zone "" has 1 agent(s), too few for 1 peers each in the zone; K must be less than the smallest zone's size`},
		{"ring cross one zone", Mode{Kind: Ring, K: 1}, five, Options{Zones: CrossZone}, `mode "ring:1" with zones cross: every agent is in zone "", so no pair crosses zones; drop zones cross or fix the agents' zones`},
		{"ring cross majority", Mode{Kind: Ring, K: 1}, named(5, "a", "a", "b"), Options{Zones: CrossZone}, `mode "ring:1" with zones cross: zone "a" holds 4 of the 5 agents, more than half, so its nodes cannot receive as many tests as they send; use pairs with zones cross`},
		{"ring cross K", Mode{Kind: Ring, K: 2}, named(6, "a", "b"), Options{Zones: CrossZone}, `mode "ring:2" with zones cross: at most ring:1 fits, as zone "a" holds 3 of the 6 agents (K <= N-2M+1); lower K or use sample:K`},
		{"sample cross K", Mode{Kind: Sample, K: 4}, named(6, "a", "b"), Options{Zones: CrossZone}, `mode "sample:4" with zones cross: a node of zone "a" has only 3 agents in other zones; lower K to at most 3`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Build(tc.mode, tc.nodes, tc.o)
			if err == nil {
				t.Fatalf("Build = %d rounds, want error %s", len(p.Rounds), tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("Build error\n got %s\nwant %s", err, tc.want)
			}
		})
	}
}
