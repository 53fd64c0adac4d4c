package latency

import (
	"bytes"
	"net/netip"
	"sync"
	"time"
)

// Sessions are the UDP latency clients an echo answers (blast server's and
// blast lat -s's): each opened a session over TCP with its UDPGreeting,
// which registered its address and port. A datagram from anywhere else
// gets no answer, so the echo cannot be used to reflect datagrams at a
// spoofed source.
type Sessions struct {
	now func() time.Time // the clock of the sessions' rates

	mu sync.Mutex
	m  map[netip.AddrPort]*session
}

// session is a UDP latency client's allowance: a token bucket of requests
// at its rate (a quarter over it, and a second's worth plus 64 at once,
// for the warm-up's requests, which go back to back).
type session struct {
	rate, burst, tokens float64
	last                time.Time
}

// NewSessions returns an empty set whose rates run on now.
func NewSessions(now func() time.Time) *Sessions {
	return &Sessions{now: now, m: map[netip.AddrPort]*session{}}
}

// Open lets the echo answer requests from peer, at no more than rate a
// second (0: a client that sends one at a time, bounded only by
// MaxRate); the returned func ends that.
func (s *Sessions) Open(peer netip.AddrPort, rate float64) (end func()) {
	if rate <= 0 {
		rate = MaxRate
	}
	es := &session{rate: rate * 1.25, burst: rate + 64, last: s.now()}
	es.tokens = es.burst
	peer = netip.AddrPortFrom(peer.Addr().Unmap(), peer.Port())
	s.mu.Lock()
	s.m[peer] = es
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		if s.m[peer] == es {
			delete(s.m, peer)
		}
		s.mu.Unlock()
	}
}

// MayEcho says whether a request from peer is answered: peer holds a
// session, and the session's rate allows one more.
func (s *Sessions) MayEcho(peer netip.AddrPort) bool {
	peer = netip.AddrPortFrom(peer.Addr().Unmap(), peer.Port())
	s.mu.Lock()
	defer s.mu.Unlock()
	es := s.m[peer]
	if es == nil {
		return false
	}
	now := s.now()
	es.tokens = min(es.burst, es.tokens+now.Sub(es.last).Seconds()*es.rate)
	es.last = now
	if es.tokens < 1 {
		return false
	}
	es.tokens--
	return true
}

// greetingWatch looks at the first len(Hello) bytes a TCP echo client
// sends for a UDP session greeting, and opens the session before the
// echo writes the greeting's last byte back: the client starts its
// requests once it has the whole greeting back.
type greetingWatch struct {
	sessions *Sessions
	host     netip.Addr
	got      []byte
	done     bool
	// port and end are the session's, once one is open.
	port uint16
	end  func()
}

// see takes bytes the client sent, before they are echoed.
func (g *greetingWatch) see(p []byte) {
	if g == nil || g.done {
		return
	}
	g.got = append(g.got, p[:min(len(p), len(Hello)-len(g.got))]...)
	n := min(len(g.got), len(udpGreetingPrefix))
	if !bytes.Equal(g.got[:n], udpGreetingPrefix[:n]) {
		g.done = true
		return
	}
	if len(g.got) < len(Hello) {
		return
	}
	g.done = true
	if port, rate, ok := ParseUDPGreeting([len(Hello)]byte(g.got)); ok {
		g.port, g.end = port, g.sessions.Open(netip.AddrPortFrom(g.host, port), rate)
	}
}

// close ends the session the greeting opened, if any.
func (g *greetingWatch) close() {
	if g != nil && g.end != nil {
		g.end()
	}
}
