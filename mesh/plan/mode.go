package plan

import (
	"fmt"
	"strconv"
	"strings"
)

// Kind is a mode's shape, without its argument.
type Kind string

// The modes; see the package comment.
const (
	Pairs  Kind = "pairs"
	FanIn  Kind = "fan-in"
	All    Kind = "all"
	Ring   Kind = "ring"
	Sample Kind = "sample"
)

// Mode is a parsed mode: pairs, fan-in, fan-in:NAME, all, ring:K or
// sample:K.
type Mode struct {
	Kind   Kind
	K      int    // ring and sample: the number of peers each node sends to
	Server string // fan-in: the server's name; "" is node 0
}

// String returns the mode as ParseMode reads it.
func (m Mode) String() string {
	switch m.Kind {
	case Ring, Sample:
		return string(m.Kind) + ":" + strconv.Itoa(m.K)
	case FanIn:
		if m.Server != "" {
			return string(FanIn) + ":" + m.Server
		}
	}
	return string(m.Kind)
}

// ParseMode parses a mode as the user writes it. It checks what it can
// without the nodes (K at least 1); Build checks the rest (K at most N-1,
// the server's name).
func ParseMode(s string) (Mode, error) {
	name, arg, hasArg := strings.Cut(s, ":")
	switch kind := Kind(name); kind {
	case Pairs, All:
		if hasArg {
			return Mode{}, fmt.Errorf("mode %q: %s takes no argument; write %s", s, kind, kind)
		}
		return Mode{Kind: kind}, nil
	case FanIn:
		if !hasArg {
			return Mode{Kind: FanIn}, nil
		}
		if arg == "" {
			return Mode{}, fmt.Errorf("mode %q: the server's name is missing; write fan-in:NAME, or fan-in for node 0", s)
		}
		return Mode{Kind: FanIn, Server: arg}, nil
	case Ring, Sample:
		if arg == "" {
			return Mode{}, fmt.Errorf("mode %q: K is missing; write %s:K, e.g. %s:3 (%s)", s, kind, kind, kHelp(kind))
		}
		k, err := strconv.Atoi(arg)
		if err != nil && !isDigits(arg) {
			return Mode{}, fmt.Errorf("mode %q: K %q is not a whole number; write %s:K, e.g. %s:3 (%s)", s, arg, kind, kind, kHelp(kind))
		}
		if err != nil || k < 1 { // err: too many digits for an int
			return Mode{}, fmt.Errorf("mode %q: K must be 1 to N-1 (%s)", s, kHelp(kind))
		}
		return Mode{Kind: kind, K: k}, nil
	}
	return Mode{}, fmt.Errorf("mode %q: unknown; use pairs, fan-in, fan-in:NAME, all, ring:K or sample:K", s)
}

func isDigits(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// kHelp says what K means in a mode.
func kHelp(k Kind) string {
	if k == Sample {
		return "the number of random peers each node sends to"
	}
	return "the number of peers each node sends to"
}

// Zones selects pairs by zone; see the package comment.
type Zones string

// The zone variants.
const (
	AnyZone   Zones = ""      // every pair
	SameZone  Zones = "same"  // only pairs whose zones are equal
	CrossZone Zones = "cross" // only pairs in different zones
)

// ParseZones parses the zones option: "", "same" or "cross".
func ParseZones(s string) (Zones, error) {
	switch z := Zones(s); z {
	case AnyZone, SameZone, CrossZone:
		return z, nil
	}
	return "", fmt.Errorf("zones %q: unknown; use same or cross, or no zones for every pair", s)
}
