package agent

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/blastnet/blast/internal/clock"
)

// The control endpoint's default limits. A mesh holds a connection to an
// agent per test it runs there (at most MaxTests) and one to ask who it
// is; the rest is room for several meshes and for floods to be shed in.
const (
	DefaultMaxControlConns   = 256
	DefaultMaxControlPerAddr = 16
	// fdShare is the share of the process's descriptor limit the control
	// endpoint may hold at most (1/fdShare): the rest is the data
	// server's.
	fdShare = 8
	// DefaultHeaderTimeout bounds a request's header, DefaultBodyTimeout
	// its header and body, DefaultIdleTimeout a connection's wait for its
	// next request.
	DefaultHeaderTimeout = 5 * time.Second
	DefaultBodyTimeout   = 10 * time.Second
	DefaultIdleTimeout   = time.Minute
)

// ControlLimits bound the control endpoint.
type ControlLimits struct {
	// Allow admits connections only from these prefixes (nil: the data
	// server's, --allow).
	Allow []netip.Prefix
	// MaxConns bounds the open connections (0: DefaultMaxControlConns),
	// and is lowered to an eighth of the descriptor limit (RLIMIT_NOFILE)
	// to leave the rest to the data server; MaxPerAddr bounds those of
	// one address (0: DefaultMaxControlPerAddr).
	MaxConns, MaxPerAddr int
	// HeaderTimeout, BodyTimeout and IdleTimeout are the deadlines of a
	// request's header, of its header and body, and of an idle
	// connection (0: the defaults).
	HeaderTimeout, BodyTimeout, IdleTimeout time.Duration
}

// withDefaults fills the zero fields; allow is the data server's list.
func (l ControlLimits) withDefaults(allow []netip.Prefix) (ControlLimits, error) {
	if l.Allow == nil {
		l.Allow = allow
	}
	if l.MaxConns == 0 {
		l.MaxConns = DefaultMaxControlConns
	}
	if l.MaxPerAddr == 0 {
		l.MaxPerAddr = DefaultMaxControlPerAddr
	}
	if l.MaxConns < 1 || l.MaxPerAddr < 1 {
		return l, fmt.Errorf("agent: control limits %d connections, %d per address: must be at least 1", l.MaxConns, l.MaxPerAddr)
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil && rl.Cur > 0 && rl.Cur < 1<<31 {
		l.MaxConns = min(l.MaxConns, max(int(rl.Cur)/fdShare, 1))
	}
	l.MaxPerAddr = min(l.MaxPerAddr, l.MaxConns)
	for _, d := range []*time.Duration{&l.HeaderTimeout, &l.BodyTimeout, &l.IdleTimeout} {
		if *d <= 0 {
			switch d {
			case &l.HeaderTimeout:
				*d = DefaultHeaderTimeout
			case &l.BodyTimeout:
				*d = DefaultBodyTimeout
			default:
				*d = DefaultIdleTimeout
			}
		}
	}
	return l, nil
}

// connGuard admits the control endpoint's connections: only from the
// allowed prefixes, at most perAddr open from one address and max in all.
// When all places are taken, a newcomer takes the place of the oldest idle
// connection (one that has not sent a whole request header yet, or waits
// between two requests) of the address that holds the most places, the
// newcomer's own address counted with it; when that is the newcomer
// itself, or no connection is idle, the newcomer is closed. So an address
// never gains a place from one that holds fewer, and a request being
// served keeps its connection.
type connGuard struct {
	lim  ControlLimits
	clk  clock.Clock
	logf func(string, ...any)

	mu       sync.Mutex
	seq      uint64
	conns    map[net.Conn]*guarded
	byAddr   map[netip.Addr]int
	accepted uint64 // connections taken from the listener
	shed     int    // closed since the last log line
	logged   time.Time
}

type guarded struct {
	addr netip.Addr
	seq  uint64 // accept order
	idle bool
}

func newConnGuard(lim ControlLimits, clk clock.Clock, logf func(string, ...any)) *connGuard {
	return &connGuard{lim: lim, clk: clk, logf: logf, conns: map[net.Conn]*guarded{}, byAddr: map[netip.Addr]int{}}
}

func (g *connGuard) allowed(a netip.Addr) bool {
	if len(g.lim.Allow) == 0 {
		return true
	}
	for _, p := range g.lim.Allow {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// admit takes c or says why not; a connection it closed to make room is
// returned too, for the caller to close outside the lock.
func (g *connGuard) admit(c net.Conn) (victim net.Conn, why string) {
	var addr netip.Addr
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		addr = ta.AddrPort().Addr().Unmap()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.accepted++
	switch {
	case !g.allowed(addr):
		return nil, "not in --allow"
	case g.byAddr[addr] >= g.lim.MaxPerAddr:
		return nil, fmt.Sprintf("%d connections from its address already (the most)", g.byAddr[addr])
	}
	if len(g.conns) >= g.lim.MaxConns {
		// The oldest idle connection of the address holding the most,
		// the newcomer counted with its own and as its newest.
		newcomer := &guarded{addr: addr, seq: g.seq + 1, idle: true}
		held := func(a netip.Addr) int {
			if a == addr {
				return g.byAddr[a] + 1
			}
			return g.byAddr[a]
		}
		best := newcomer
		for vc, v := range g.conns {
			if v.idle && (held(v.addr) > held(best.addr) || held(v.addr) == held(best.addr) && v.seq < best.seq) {
				best, victim = v, vc
			}
		}
		if victim == nil {
			if !g.anyIdle() {
				return nil, fmt.Sprintf("all %d places are serving requests", g.lim.MaxConns)
			}
			return nil, fmt.Sprintf("all %d places are taken and its address holds the most", g.lim.MaxConns)
		}
		g.drop(victim)
	}
	g.seq++
	g.conns[c] = &guarded{addr: addr, seq: g.seq, idle: true}
	g.byAddr[addr]++
	return victim, ""
}

// anyIdle says whether a connection is idle (the lock is held).
func (g *connGuard) anyIdle() bool {
	for _, v := range g.conns {
		if v.idle {
			return true
		}
	}
	return false
}

// drop forgets c (the lock is held).
func (g *connGuard) drop(c net.Conn) {
	v, ok := g.conns[c]
	if !ok {
		return
	}
	delete(g.conns, c)
	if g.byAddr[v.addr]--; g.byAddr[v.addr] <= 0 {
		delete(g.byAddr, v.addr)
	}
}

// state follows the HTTP server's connections (http.Server.ConnState).
func (g *connGuard) state(c net.Conn, s http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn() // the guard holds what its listener accepted
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch s {
	case http.StateClosed, http.StateHijacked:
		g.drop(c)
	case http.StateActive, http.StateIdle, http.StateNew:
		if v, ok := g.conns[c]; ok {
			v.idle = s != http.StateActive
		}
	}
}

// shedf logs a closed connection, at most a line a second with the count.
func (g *connGuard) shedf(format string, args ...any) {
	g.mu.Lock()
	g.shed++
	now := g.clk.Now()
	if !g.logged.IsZero() && now.Sub(g.logged) < time.Second {
		g.mu.Unlock()
		return
	}
	n := g.shed
	g.shed, g.logged = 0, now
	g.mu.Unlock()
	g.logf("control port: %s (%d connections closed so)", fmt.Sprintf(format, args...), n)
}

// open is how many connections the guard holds, and how many it took from
// the listener in all.
func (g *connGuard) open() (held int, accepted uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.conns), g.accepted
}

// guardListener hands the HTTP server only the connections its guard
// admits and closes the others at once.
type guardListener struct {
	net.Listener
	g *connGuard
}

func (l *guardListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		victim, why := l.g.admit(c)
		if victim != nil {
			victim.Close()
			l.g.shedf("closed an idle connection from %s to make room for %s (%d places, %d per address)", victim.RemoteAddr(), c.RemoteAddr(), l.g.lim.MaxConns, l.g.lim.MaxPerAddr)
		}
		if why == "" {
			return c, nil
		}
		c.Close()
		l.g.shedf("refused %s: %s", c.RemoteAddr(), why)
	}
}
