// Package fairpool shares a bounded number of places among connections,
// fairly by the address they come from. A server gives each connection
// that must hold a scarce resource (a place among those that have not
// identified themselves yet, a latency echo and its thread) a Place: no
// address holds more than its share, and when the places are all taken,
// a newcomer from an address that holds fewer than another takes the
// oldest place of the address that holds the most. So no set of
// connections, from one address or many, keeps a client from another
// address out.
//
// A Pool has no lock of its own: the caller holds the one that guards it.
package fairpool

import "net/netip"

// Share is the share an address counts in: itself for IPv4, its /64
// for IPv6 (one host or site is given a /64 or more, so counting its
// addresses one by one would give it as many shares as it likes).
func Share(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}

// Pool is a set of places.
type Pool struct {
	max, perHost int
	// evictEqual lets a newcomer push out the oldest of its own address
	// (when that one holds perHost, or as many as any) or of an address
	// that holds one more than it; without it the newcomer is refused.
	evictEqual bool

	n  int
	by map[netip.Addr][]*Place // oldest first
}

// Place is a connection's place in a Pool.
type Place struct {
	Host netip.Addr // the Share of the connection's address
	Seq  uint64     // accept order: the oldest has the lowest
	// Kick wakes the connection's owner when its place is taken away;
	// the caller of Add runs a victim's Kick once it has let go of the
	// Pool's lock.
	Kick func()
	gone bool
}

// Gone says whether the place was taken from its connection (to make
// room, or by Take), or given back.
func (p *Place) Gone() bool { return p.gone }

// New is a Pool of max places, perHost of them at most for one address.
// With evictEqual a newcomer always gets a place (the right one for
// connections that have not identified themselves: the oldest of the
// fullest address goes, its own when it holds as many as any); without,
// a newcomer takes a place only from an address that holds at least two
// more than it (the right one for running sessions, which should not
// churn among equals).
func New(max, perHost int, evictEqual bool) *Pool {
	return &Pool{max: max, perHost: perHost, evictEqual: evictEqual, by: map[netip.Addr][]*Place{}}
}

// Add gives a connection from host, accepted seq-th, a place, taking one
// from another connection if it must (victim), or refuses it (nil). A
// newcomer that would push out a younger connection of its own address
// (its goroutine ran late) is the oldest itself, and refused. Addresses
// count by their Share.
func (p *Pool) Add(host netip.Addr, seq uint64, kick func()) (pl, victim *Place) {
	host = Share(host)
	mine := len(p.by[host])
	switch {
	case mine >= p.perHost:
		if !p.evictEqual {
			return nil, nil
		}
		victim = p.by[host][0]
	case p.n >= p.max:
		victim = p.fullest(host, mine)
		if victim == nil {
			return nil, nil
		}
	}
	if victim != nil {
		if victim.Host == host && seq < victim.Seq {
			return nil, nil
		}
		p.Take(victim)
	}
	pl = &Place{Host: host, Seq: seq, Kick: kick}
	ps := p.by[host]
	i := len(ps)
	for i > 0 && ps[i-1].Seq > seq {
		i--
	}
	p.by[host] = append(ps[:i], append([]*Place{pl}, ps[i:]...)...)
	p.n++
	return pl, victim
}

// fullest is the place to take for a newcomer from host, which holds
// mine places, when all are taken: the oldest of the address holding the
// most (the oldest among several such), if that makes the shares fairer
// or evictEqual allows; nil if none may go.
func (p *Pool) fullest(host netip.Addr, mine int) *Place {
	most := 0
	var oldest *Place
	for _, ps := range p.by {
		switch {
		case len(ps) > most:
			most, oldest = len(ps), ps[0]
		case len(ps) == most && ps[0].Seq < oldest.Seq:
			oldest = ps[0]
		}
	}
	switch {
	case most >= mine+2:
		return oldest
	case !p.evictEqual:
		return nil
	case most == mine:
		return p.by[host][0] // as many as any: it makes room itself
	}
	return oldest
}

// Take removes pl from the pool (a timeout took it) and marks it gone;
// false if it was gone already.
func (p *Pool) Take(pl *Place) bool {
	if pl.gone {
		return false
	}
	ps := p.by[pl.Host]
	for i, x := range ps {
		if x == pl {
			ps = append(ps[:i:i], ps[i+1:]...)
			break
		}
	}
	if len(ps) == 0 {
		delete(p.by, pl.Host)
	} else {
		p.by[pl.Host] = ps
	}
	p.n--
	pl.gone = true
	return true
}

// Release gives pl's place back; false when it was taken from it already
// (nothing changes then).
func (p *Pool) Release(pl *Place) bool { return p.Take(pl) }

// Len is how many places are held.
func (p *Pool) Len() int { return p.n }

// Holding is how many places each address holds.
func (p *Pool) Holding() map[netip.Addr]int {
	m := map[netip.Addr]int{}
	for a, ps := range p.by {
		m[a] = len(ps)
	}
	return m
}
