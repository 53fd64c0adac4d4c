package control

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/fairpool"
)

// How a server admits tests. A connection is first unidentified: it has
// not sent its cookie, or (a control connection) its parameters have not
// been read and checked. Unidentified connections share a pool of places
// (MaxUnidentified, MaxUnidentifiedPerHost) fairly by address and time
// out (HandshakeTimeout, on the server's clock); when the pool is full, a
// newcomer takes the place of the oldest connection of the address that
// holds the most (its own, when it holds as many), so no set of idle
// connections, from any number of addresses, keeps a real client out: a
// client from an address that holds fewer always gets in and keeps its
// place, and any client keeps its place until as many connections as the
// pool holds came after it. A test takes a slot only once its parameters are valid, and only
// when the slots (MaxClients), the slots of its address (MaxPerHost) and
// the memory budget (MaxTestMemory for it, MaxMemory for all tests
// together) allow; otherwise its client is told ACCESS_DENIED (busy) or
// SERVER_ERROR with iperf3's error number.

// The server's default limits.
const (
	DefaultMaxClients = 64
	DefaultMaxPerHost = 16
	// DefaultMaxTestMemory and DefaultMaxMemory bound the buffers of one
	// test and of all tests (engine.Footprint over their streams).
	DefaultMaxTestMemory = 256 << 20
	DefaultMaxMemory     = 1 << 30
	// DefaultMaxUnidentified and DefaultMaxUnidentifiedPerHost cap the
	// connections that have not identified themselves yet, and
	// DefaultHandshakeTimeout is how long one may take to (cookie and
	// parameters).
	DefaultMaxUnidentified        = 256
	DefaultMaxUnidentifiedPerHost = 32
	DefaultHandshakeTimeout       = 5 * time.Second
	// DefaultEchoWriteTimeout ends a latency echo whose client has taken
	// none of its replies for this long.
	DefaultEchoWriteTimeout = 10 * time.Second
	// MaxPeerResultsJSON bounds the results a server accepts from its
	// client (per-stream totals: a few hundred bytes per stream).
	MaxPeerResultsJSON = 1 << 20
)

// errNotAdmitted ends a test the server turned away with ACCESS_DENIED;
// OnRefused has been told, and the test leaves no result.
var errNotAdmitted = errors.New("not admitted")

// errShed ends a connection that lost its place among the unidentified
// to a newcomer: it leaves no result (shedf logged it).
var errShed = errors.New("closed to make room for a newer connection")

// ParseAllow reads --allow: CIDR prefixes or addresses, comma separated.
func ParseAllow(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, w := range strings.Split(s, ",") {
		w = strings.TrimSpace(w)
		if w == "" {
			continue
		}
		if p, err := netip.ParsePrefix(w); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(w)
		if err != nil {
			return nil, fmt.Errorf("--allow %q: %q is no address or CIDR prefix (such as 198.18.0.0/15 or 2001:2::/48)", s, w)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--allow %q: name at least one address or CIDR prefix", s)
	}
	return out, nil
}

// allowed says whether a is in the allow-list (no list: everyone).
func (s *Server) allowed(a netip.Addr) bool {
	if len(s.cfg.Allow) == 0 {
		return true
	}
	a = a.Unmap()
	for _, p := range s.cfg.Allow {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// peerAddr is the address of the far end of c.
func peerAddr(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return unmap(a.AddrPort()).Addr()
	}
	return netip.Addr{}
}

// pendingConn is a connection's place among the unidentified ones
// (Server.pending). It holds it until the connection identifies itself
// (identified), until HandshakeTimeout passes on the server's clock, or
// until a newcomer takes it (the pool was full, and this was the oldest
// connection of the address holding the most): then its read deadline is
// set in the past, and its owner ends it.
type pendingConn struct {
	s     *Server
	c     net.Conn
	pl    *fairpool.Place
	timer interface{ Stop() bool }
	// Under s.mu: done once identified ran, ok if it held its place to
	// the end, expired if HandshakeTimeout took the place.
	done, ok, expired bool
}

// unidentified gives c, a connection from a accepted seq-th, a place
// among the connections that have not identified themselves, taking the
// place of another if the pool is full; nil when c is the oldest of its
// address itself (then the caller closes it).
func (s *Server) unidentified(c net.Conn, a netip.Addr, seq uint64) *pendingConn {
	pc := &pendingConn{s: s, c: c}
	s.mu.Lock()
	pl, victim := s.pending.Add(a, seq, pc.kick)
	if pl == nil {
		s.mu.Unlock()
		return nil
	}
	pc.pl = pl
	// Armed under the lock: expire finds pc.timer set.
	pc.timer = s.clk.AfterFunc(s.cfg.HandshakeTimeout, pc.expire)
	s.mu.Unlock()
	if victim != nil {
		victim.Kick()
		s.shedf("%s: closed the oldest of %v's connections that had not sent their cookie and parameters, to make room (%d at most, %d from one address)",
			c.RemoteAddr(), victim.Host, s.cfg.MaxUnidentified, s.cfg.MaxUnidentifiedPerHost)
	}
	return pc
}

// kick ends a read of the connection, now and later (the owner's next
// read fails at once).
func (pc *pendingConn) kick() { pc.c.SetReadDeadline(time.Unix(1, 0)) }

// expire takes the place of a connection that did not identify itself
// within HandshakeTimeout.
func (pc *pendingConn) expire() {
	s := pc.s
	s.mu.Lock()
	if pc.done || pc.pl.Gone() {
		s.mu.Unlock()
		return
	}
	s.pending.Take(pc.pl)
	pc.expired = true
	s.mu.Unlock()
	pc.kick()
}

// recheck kicks the connection again if its place was taken: the owner
// sets read deadlines of its own, which must not outlive the place.
func (pc *pendingConn) recheck() {
	pc.s.mu.Lock()
	gone := !pc.done && pc.pl.Gone()
	pc.s.mu.Unlock()
	if gone {
		pc.kick()
	}
}

// identified gives the place back, once the connection has identified
// itself (or ended), and says whether it still held it: false when a
// newcomer or the timeout took it.
func (pc *pendingConn) identified() bool {
	s := pc.s
	s.mu.Lock()
	if !pc.done {
		pc.done = true
		pc.ok = s.pending.Release(pc.pl)
	}
	ok := pc.ok
	s.mu.Unlock()
	pc.timer.Stop()
	return ok
}

// shed says whether the connection lost its place to a newcomer (not to
// its timeout): its end is no test's result, and shedf logged it.
func (pc *pendingConn) shed() bool {
	pc.s.mu.Lock()
	defer pc.s.mu.Unlock()
	return pc.done && !pc.ok && !pc.expired
}

// shedf logs a connection dropped before it said anything, at most once
// a second (a flood must not flood the log too).
func (s *Server) shedf(format string, args ...any) {
	s.mu.Lock()
	s.shed++
	now := s.clk.Now()
	if now.Sub(s.shedLogged) < time.Second {
		s.mu.Unlock()
		return
	}
	n := s.shed
	s.shed, s.shedLogged = 0, now
	s.mu.Unlock()
	s.logf("%s (%d connections dropped so)", fmt.Sprintf(format, args...), n)
}

// footprint is the user memory the streams of a test hold on this
// server: engine.Footprint of each stream's backend in its direction.
func footprint(p *wire.Params, tx, rx engine.Backend, sends func(int) bool, n int) int64 {
	spec := &engine.Spec{Protocol: engine.TCP, BufLen: p.BlockLen()}
	if p.UDP {
		spec.Protocol = engine.UDP
	}
	if rx == nil {
		rx = tx
	}
	var sum int64
	for i := range n {
		if sends(i) {
			sum += engine.Footprint(tx, spec, true)
		} else {
			sum += engine.Footprint(rx, spec, false)
		}
	}
	return sum
}

// mib says a size of memory in MiB.
func mib(b int64) string { return strconv.FormatFloat(float64(b)/(1<<20), 'f', -1, 64) + " MiB" }

// admission is a test's place on the server: release gives it back.
type admission struct {
	s      *Server
	host   netip.Addr
	memory int64
	done   bool
}

// admit gives a test whose parameters are valid its slot, or says why it
// gets none: busy (errNotAdmitted, after ACCESS_DENIED went to the client
// and OnRefused was told), or a limit of the server (an iperf3 error
// number and why).
func (s *Server) admit(host netip.Addr, p *wire.Params, memory int64) (*admission, int32, error) {
	switch {
	case int(p.Parallel) > s.cfg.MaxStreams:
		return nil, 6, fmt.Errorf("the client asked for %d streams (-P), over the server's --max-streams %d", p.Parallel, s.cfg.MaxStreams)
	case s.cfg.MaxBytes > 0 && p.ByteLimit() > s.cfg.MaxBytes:
		// A byte count is how long the test runs.
		return nil, wire.IEMaxDuration, fmt.Errorf("the client asked for %d bytes (-n or -k), over the server's --max-bytes %d", p.ByteLimit(), s.cfg.MaxBytes)
	case memory > s.cfg.MaxTestMemory:
		return nil, wire.IENewTest, fmt.Errorf("the test needs %s of buffers (streams × block size × backend batch), over the server's --max-test-memory %s: ask for fewer streams, a smaller -l or batch",
			mib(memory), mib(s.cfg.MaxTestMemory))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	why := s.full()
	switch {
	case why != "":
	case s.activeBy[host] >= s.cfg.MaxPerHost:
		why = fmt.Sprintf("busy (%d tests running from %v, --max-per-host %d)", s.activeBy[host], host, s.cfg.MaxPerHost)
	case s.memory+memory > s.cfg.MaxMemory:
		why = fmt.Sprintf("busy (the running tests hold %s of buffers, and this one needs %s: over --max-memory %s)", mib(s.memory), mib(memory), mib(s.cfg.MaxMemory))
	}
	if why != "" {
		return nil, 0, busyError(why)
	}
	s.active++
	s.activeBy[host]++
	s.memory += memory
	s.started++
	s.lastConn = s.clk.Now()
	return &admission{s: s, host: host, memory: memory}, 0, nil
}

// full says why the server takes no test now, whoever asks ("": it
// would); the caller holds s.mu.
func (s *Server) full() string {
	switch {
	case s.cfg.OneOff && s.started > 0:
		return "busy (-1: this server runs one test)"
	case s.active >= s.cfg.MaxClients:
		return fmt.Sprintf("busy (%d tests running, --max-clients %d)", s.active, s.cfg.MaxClients)
	}
	return ""
}

// busyError is why a test found no slot.
type busyError string

func (e busyError) Error() string { return string(e) }

// release gives the slot back.
func (a *admission) release() {
	if a == nil || a.done {
		return
	}
	a.done = true
	s := a.s
	s.mu.Lock()
	s.active--
	if s.activeBy[a.host]--; s.activeBy[a.host] == 0 {
		delete(s.activeBy, a.host)
	}
	s.memory -= a.memory
	s.lastConn = s.clk.Now()
	s.mu.Unlock()
	if s.cfg.OneOff {
		close(s.oneDone)
	}
}

// refused tells a client the server is busy, and OnRefused why.
func (s *Server) refused(c net.Conn, why string) {
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	wire.WriteState(c, wire.AccessDenied)
	s.logf("%s: refused: %s", c.RemoteAddr(), why)
	if s.cfg.OnRefused != nil {
		var peer netip.AddrPort
		if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			peer = unmap(a.AddrPort())
		}
		s.cfg.OnRefused(peer, why)
	}
}

// acceptBackoff says how long to wait before accepting again after err,
// or false when err ends the server. Running out of descriptors or
// memory, or a connection aborted before it was accepted, passes.
func acceptBackoff(err error, last time.Duration) (time.Duration, bool) {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ECONNABORTED, syscall.ENOBUFS, syscall.ENOMEM, syscall.EINTR, syscall.EPROTO, syscall.EPERM} {
		if errors.Is(err, e) {
			return min(max(2*last, 5*time.Millisecond), time.Second), true
		}
	}
	return 0, false
}

// errnoOf is the errno a server sends with an iperf3 error number of its
// own making: iperf3 clients print it after the number's text.
func errnoOf(code int32) int32 {
	if code == wire.IENewTest {
		return int32(syscall.ENOMEM)
	}
	return 0
}
