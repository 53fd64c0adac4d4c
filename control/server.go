package control

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/clock"
	"github.com/blastnet/blast/internal/fairpool"
	"github.com/blastnet/blast/latency"
	"github.com/blastnet/blast/pathmtu"
	"github.com/blastnet/blast/units"
)

// ServerConfig is a blast server.
type ServerConfig struct {
	Bind string // -B: the address to listen on ("" = all)
	// Port is the port to listen on (-p; the command's default is
	// DefaultPort); 0 picks a free one, which Addr tells.
	Port   int
	Family string // "", "4" or "6"
	OneOff bool   // -1: serve one test, then return
	// MaxClients bounds the tests running at the same time
	// (DefaultMaxClients); more are told ACCESS_DENIED. MaxPerHost bounds
	// those from one address (DefaultMaxPerHost).
	MaxClients int
	MaxPerHost int
	// MaxStreams bounds a test's -P (MaxStreams); MaxBytes its -n or -k
	// (0: any).
	MaxStreams int
	MaxBytes   int64
	// MaxTestMemory bounds the buffers of one test (engine.Footprint of
	// its streams: streams × block size × backend batch), MaxMemory those
	// of all tests together (DefaultMaxTestMemory, DefaultMaxMemory).
	MaxTestMemory int64
	MaxMemory     int64
	// MaxUnidentified and MaxUnidentifiedPerHost cap the connections that
	// have not sent their cookie and, for a control connection, their
	// parameters (DefaultMaxUnidentified, DefaultMaxUnidentifiedPerHost);
	// more are closed unanswered.
	MaxUnidentified        int
	MaxUnidentifiedPerHost int
	// Allow admits connections only from these prefixes (--allow; nil:
	// from anywhere).
	Allow []netip.Prefix
	// AnyStreamSource accepts a test's data streams from any address that
	// knows its cookie; by default they must come from the address of its
	// control connection (relax it when NAT gives them other addresses).
	AnyStreamSource bool
	// AgentProof answers another agent's proof request (ProveAgent):
	// the server is a blast agent's, and this is its proof under the
	// mesh's token (nil: the server proves nothing and hangs up).
	AgentProof ProofFunc
	Backend    string // the backend to send with (readwrite)
	// RxBackend receives ("" = Backend, or readwrite if that only sends).
	RxBackend string
	// Interval of the server's own interval reports (what
	// --get-server-output returns); 0 turns them off.
	Interval time.Duration
	// JSONOutput makes --get-server-output return JSON instead of text.
	JSONOutput bool
	// NoNIC skips watching the interface that carries each test.
	NoNIC bool
	// StreamTimeout bounds how long a client may take to open its streams
	// (10 s), and (a socket deadline, after HandshakeTimeout) to send its
	// cookie and its parameters.
	StreamTimeout time.Duration
	// HandshakeTimeout bounds how long a connection may take to send its
	// cookie and, for a test, its parameters (DefaultHandshakeTimeout); it
	// is closed then, and its place among the unidentified is free.
	HandshakeTimeout time.Duration
	// EchoWriteTimeout ends a blast lat client that takes none of its
	// replies for this long (DefaultEchoWriteTimeout).
	EchoWriteTimeout time.Duration
	// Device binds the listening sockets and every data socket to an
	// interface (SO_BINDTODEVICE, --bind-dev).
	Device string
	// RcvTimeout ends a test whose receiving streams got no data for this
	// long, telling the client iperf3's IENOMSG (--rcv-timeout; 120 s as
	// iperf3, at least 100 ms).
	RcvTimeout time.Duration
	// MaxDuration refuses a test that asks for more time (-t plus -O) or
	// for no time limit (-n, -k), with iperf3's
	// IEMAXSERVERTESTDURATIONEXCEEDED (--server-max-duration; 0: any).
	MaxDuration time.Duration
	// RateLimit caps the bitrate of each test and of all tests together
	// (--server-bitrate-limit; zero: no limit).
	RateLimit RateLimit
	// IdleTimeout is iperf3's --idle-timeout. With OneOff, Serve returns
	// ErrIdle when no client connects within it. Without, the server
	// restarts its idle state each time it passes without a connection:
	// it closes its UDP port, which the next UDP test opens again (a
	// blast server has no other state shared between tests to reset).
	IdleTimeout time.Duration
	// Auth refuses tests whose client's credentials do not pass, with
	// iperf3's IEAUTHTEST (nil: no authentication; tokens are ignored).
	Auth *ServerAuth
	// Clock is the server's clock for what it times itself (nil: the
	// real one): IdleTimeout, HandshakeTimeout, the wait for a test's
	// streams (StreamTimeout), the checks of RcvTimeout and of a stalled
	// test, the pause after a failed accept, and the time an auth token
	// is checked against. Socket deadlines (StreamTimeout's backstop for
	// the cookie and the parameters, the test's time limit,
	// EchoWriteTimeout) stay on the real clock: the kernel keeps them.
	Clock clock.Clock

	// Log gets one line per test; nil discards them.
	Log io.Writer
	// OnStart is called when a test's streams are connected, before it
	// runs; OnInterval after each of its intervals; OnResult when it has
	// ended (or failed). They run on the test's goroutines: keep them
	// quick.
	OnStart    func(*result.Result)
	OnInterval func(*result.Result, *result.Interval)
	OnResult   func(*result.Result)
	// OnRefused is called for a client turned away (ACCESS_DENIED)
	// because the server runs --max-clients tests already.
	OnRefused func(peer netip.AddrPort, why string)
	// Trace gets the debug lines of -d: each test's state changes and
	// what the client sent (r is the test), and the server's own (r is
	// nil).
	Trace func(r *result.Result, line string)
}

// Defaults fills in unset fields.
func (c *ServerConfig) Defaults() {
	if c.MaxClients == 0 {
		c.MaxClients = DefaultMaxClients
	}
	if c.MaxPerHost == 0 {
		c.MaxPerHost = DefaultMaxPerHost
	}
	if c.MaxStreams == 0 {
		c.MaxStreams = wire.MaxStreams
	}
	if c.MaxTestMemory == 0 {
		c.MaxTestMemory = DefaultMaxTestMemory
	}
	if c.MaxMemory == 0 {
		c.MaxMemory = DefaultMaxMemory
	}
	if c.MaxUnidentified == 0 {
		c.MaxUnidentified = DefaultMaxUnidentified
	}
	if c.MaxUnidentifiedPerHost == 0 {
		c.MaxUnidentifiedPerHost = DefaultMaxUnidentifiedPerHost
	}
	if c.Backend == "" {
		c.Backend = engine.DefaultBackend
	}
	if c.StreamTimeout == 0 {
		c.StreamTimeout = 10 * time.Second
	}
	if c.RcvTimeout == 0 {
		c.RcvTimeout = DefaultRcvTimeout
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.EchoWriteTimeout == 0 {
		c.EchoWriteTimeout = DefaultEchoWriteTimeout
	}
	if c.RateLimit.Bits > 0 && c.RateLimit.Window == 0 {
		c.RateLimit.Window = DefaultRateWindow
	}
}

// Validate reports the first thing wrong with c.
func (c *ServerConfig) Validate() error {
	switch {
	case c.Port < 0 || c.Port > 65535:
		return fmt.Errorf("port %d: must be 1 to 65535 (0 picks a free one)", c.Port)
	case c.MaxClients < 1:
		return fmt.Errorf("--max-clients %d: must be at least 1", c.MaxClients)
	case c.MaxPerHost < 1:
		return fmt.Errorf("--max-per-host %d: must be at least 1", c.MaxPerHost)
	case c.MaxStreams < 1 || c.MaxStreams > wire.MaxStreams:
		return fmt.Errorf("--max-streams %d: must be 1 to %d", c.MaxStreams, wire.MaxStreams)
	case c.MaxBytes < 0:
		return fmt.Errorf("--max-bytes %d: must be 0 (any) or more", c.MaxBytes)
	case c.MaxTestMemory < 1<<20 || c.MaxMemory < c.MaxTestMemory:
		return fmt.Errorf("--max-test-memory %d, --max-memory %d: the budget of a test must be at least 1 MiB, and the total at least a test's", c.MaxTestMemory, c.MaxMemory)
	case c.MaxUnidentified < 1 || c.MaxUnidentifiedPerHost < 1:
		return fmt.Errorf("the caps on unidentified connections (%d, %d per address) must be at least 1", c.MaxUnidentified, c.MaxUnidentifiedPerHost)
	case c.Family != "" && c.Family != "4" && c.Family != "6":
		return fmt.Errorf("address family %q: use -4 or -6", c.Family)
	case c.RcvTimeout != 0 && (c.RcvTimeout < MinRcvTimeout || c.RcvTimeout > wire.MaxTime*time.Second):
		return fmt.Errorf("--rcv-timeout %d: must be %d to %d ms", c.RcvTimeout.Milliseconds(), MinRcvTimeout.Milliseconds(), wire.MaxTime*1000)
	case c.MaxDuration < 0 || c.MaxDuration > wire.MaxTime*time.Second:
		return fmt.Errorf("--server-max-duration %v: must be 0 (no limit) to %d s", c.MaxDuration.Seconds(), wire.MaxTime)
	case c.IdleTimeout < 0 || c.IdleTimeout > wire.MaxTime*time.Second:
		return fmt.Errorf("--idle-timeout %v: must be 1 to %d s", c.IdleTimeout.Seconds(), wire.MaxTime)
	case c.Interval < 0 || (c.Interval > 0 && c.Interval < 100*time.Millisecond) || c.Interval > time.Minute:
		return fmt.Errorf("-i %g: must be 0 (off) or 0.1 to 60 seconds", c.Interval.Seconds())
	case c.StreamTimeout < 0:
		return fmt.Errorf("stream timeout %v: must be 0 (10 s) or more", c.StreamTimeout)
	case c.HandshakeTimeout < 0 || c.EchoWriteTimeout < 0:
		return fmt.Errorf("handshake timeout %v, echo write timeout %v: must be 0 (the default) or more", c.HandshakeTimeout, c.EchoWriteTimeout)
	}
	return c.RateLimit.validate()
}

// Server accepts iperf3 clients (and blast clients) on one port, several
// tests at a time.
type Server struct {
	cfg       ServerConfig
	clk       clock.Clock
	ln        net.Listener
	backend   engine.Backend
	rxBackend engine.Backend // nil: automatic

	// mtuSessions counts the path-MTU probe sessions running
	// (maxMTUSessions at most).
	mtuSessions atomic.Int32

	// netns is where the server's sockets live.
	netns *engine.NetNS
	// udpAuto: no backend was configured, so UDP tests that ask for
	// none run on udpDefaultBackend.
	udpAuto bool
	// udp is the UDP listener on the server's port, opened by the first
	// UDP test.
	udpMu sync.Mutex
	udp   *udpGate
	// meter enforces RateLimit (nil: no limit).
	meter *rateMeter

	mu       sync.Mutex
	active   int                // tests admitted and not ended
	activeBy map[netip.Addr]int // of them, by client address
	memory   int64              // their buffers' budget
	started  int                // tests admitted so far
	// echoes are the places of the blast lat clients being served.
	echoes *fairpool.Pool
	// pending are the places of the connections that have not identified
	// themselves; shed counts those dropped since shedLogged.
	pending    *fairpool.Pool
	shed       int
	shedLogged time.Time
	waiting    map[[wire.CookieSize]byte]streamWait
	// lastConn is when the last connection came in, or a test ended
	// (IdleTimeout counts from it).
	lastConn time.Time
	wg       sync.WaitGroup
	oneDone  chan struct{}
	idleDone chan struct{} // closed when OneOff's IdleTimeout passed
}

type dataConn struct {
	c   net.Conn
	seq uint64 // accept order
}

// streamWait is a test waiting for its data streams, from host.
type streamWait struct {
	ch   chan<- dataConn
	host netip.Addr
}

// Listen opens the server's port.
func Listen(cfg ServerConfig) (*Server, error) {
	udpAuto := cfg.Backend == "" && cfg.RxBackend == ""
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b, err := engine.Usable(cfg.Backend)
	if err != nil {
		return nil, err
	}
	var rb engine.Backend
	if cfg.RxBackend != "" {
		if rb, err = engine.Usable(cfg.RxBackend); err != nil {
			return nil, err
		}
	}
	addr := net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.Port))
	var lc net.ListenConfig
	if cfg.Device != "" {
		// Accepted data streams inherit the listener's device.
		lc.Control = engine.SockOpts{TOS: engine.NoTOS, Device: cfg.Device}.Control()
	}
	ln, err := lc.Listen(context.Background(), "tcp"+cfg.Family, addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("listen on %s: the port is in use (another server?): pick another with -p: %w", addr, err)
		}
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	// The UDP sockets of later tests are made in the namespace the server
	// listens in, whichever thread makes them.
	ns, err := engine.CurrentNetNS()
	if err != nil {
		ln.Close()
		return nil, err
	}
	clk := clock.Or(cfg.Clock)
	s := &Server{cfg: cfg, clk: clk, ln: ln, netns: ns, udpAuto: udpAuto, backend: b, rxBackend: rb,
		waiting: map[[wire.CookieSize]byte]streamWait{}, activeBy: map[netip.Addr]int{}, oneDone: make(chan struct{}), idleDone: make(chan struct{}),
		lastConn: clk.Now(),
		pending:  fairpool.New(cfg.MaxUnidentified, cfg.MaxUnidentifiedPerHost, true),
		echoes:   fairpool.New(cfg.MaxClients, cfg.MaxPerHost, false)}
	if cfg.RateLimit.Bits > 0 {
		s.meter = newRateMeter(cfg.RateLimit, cfg.Trace)
	}
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops accepting connections.
func (s *Server) Close() error { return s.ln.Close() }

// Serve accepts tests until ctx is done or, with OneOff, until the first
// test ends (or IdleTimeout passes without one: ErrIdle). When ctx is
// done, running tests are told SERVER_TERMINATE and end with ErrShutdown;
// tests that have their TEST_END already finish the exchange of results.
func (s *Server) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The UDP port is open from the start, so blast lat -u finds it; a
	// failure here is the first UDP test's to report.
	s.udpMu.Lock()
	s.openUDPLocked()
	s.udpMu.Unlock()
	var bg sync.WaitGroup
	bg.Go(func() {
		select {
		case <-ctx.Done():
		case <-s.oneDone:
		case <-s.idleDone:
		}
		s.ln.Close()
	})
	if s.meter != nil {
		bg.Go(func() { s.meter.run(ctx.Done(), meterTick) })
	}
	if s.cfg.IdleTimeout > 0 {
		bg.Go(func() { s.watchIdle(ctx.Done()) })
	}
	var seq uint64
	var err error
	var backoff time.Duration
	for {
		var c net.Conn
		c, err = s.ln.Accept()
		if err != nil {
			// Out of descriptors (or memory) is weather, not the end:
			// wait, and accept again once tests have freed some.
			var ok bool
			if backoff, ok = acceptBackoff(err, backoff); ok && ctx.Err() == nil {
				s.shedf("accept: %v: waiting %v", err, backoff)
				select {
				case <-s.clk.After(backoff):
				case <-ctx.Done():
				}
				continue
			}
			break
		}
		backoff = 0
		seq++
		s.touch()
		s.wg.Add(1)
		go func(c net.Conn, seq uint64) {
			defer s.wg.Done()
			s.route(ctx, c, seq)
		}(c, seq)
	}
	s.wg.Wait()
	cancel()
	bg.Wait()
	s.closeUDP()
	s.netns.Close()
	select {
	case <-s.oneDone:
		return nil
	default:
	}
	select {
	case <-s.idleDone:
		return fmt.Errorf("%w: no client connected within %v (--idle-timeout)", ErrIdle, s.cfg.IdleTimeout)
	default:
	}
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// openUDPLocked opens the server's UDP port (the gate) unless it is open;
// s.udpMu is held.
func (s *Server) openUDPLocked() error {
	if s.udp != nil {
		return nil
	}
	nw := "udp" + s.cfg.Family
	addr := net.JoinHostPort(s.cfg.Bind, strconv.Itoa(s.port()))
	var g *udpGate
	err := s.netns.Do(func() (err error) {
		g, err = openUDPGate(nw, addr, engine.SockOpts{TOS: engine.NoTOS, Device: s.cfg.Device}, s.clk.Now)
		return err
	})
	if err != nil {
		return fmt.Errorf("open the UDP port %s: %w", addr, err)
	}
	s.udp = g
	return nil
}

// closeUDP closes the shared UDP port, if a test opened it.
func (s *Server) closeUDP() {
	s.udpMu.Lock()
	defer s.udpMu.Unlock()
	if s.udp != nil {
		s.udp.close()
		s.udp = nil
	}
}

// maxMTUSessions bounds the path-MTU probe sessions a server runs at
// once: each holds a UDP socket for up to pathmtu.MaxSession, and doctor
// runs one.
const maxMTUSessions = 16

// touch notes a connection, for IdleTimeout.
func (s *Server) touch() {
	s.mu.Lock()
	s.lastConn = s.clk.Now()
	s.mu.Unlock()
}

// route reads the cookie every connection opens with: a data stream of a
// test being set up goes to that test, anything else starts a test.
func (s *Server) route(ctx context.Context, c net.Conn, seq uint64) {
	host := peerAddr(c)
	if !s.allowed(host) {
		s.shedf("%s: refused: not in --allow", c.RemoteAddr())
		c.Close()
		return
	}
	pc := s.unidentified(c, host, seq)
	if pc == nil {
		s.shedf("%s: refused: too many connections that have not sent their cookie and parameters (%d at most, %d from one address), and it is the oldest of its address",
			c.RemoteAddr(), s.cfg.MaxUnidentified, s.cfg.MaxUnidentifiedPerHost)
		c.Close()
		return
	}
	defer pc.identified()
	var cookie [wire.CookieSize]byte
	c.SetReadDeadline(time.Now().Add(s.cfg.StreamTimeout))
	pc.recheck()
	stop := context.AfterFunc(ctx, func() { c.SetReadDeadline(time.Unix(1, 0)) })
	_, err := io.ReadFull(c, cookie[:])
	if !stop() || err != nil {
		c.Close()
		return
	}
	if s.greeting(ctx, c, seq, cookie, pc) {
		return
	}
	s.mu.Lock()
	if s.toWaitingTestLocked(c, seq, cookie, host) {
		s.mu.Unlock()
		return
	}
	why := s.full()
	s.mu.Unlock()
	if why != "" {
		// iperf3 answers a full server right after the cookie.
		s.refused(c, why)
		c.Close()
		return
	}
	res := s.serveTest(ctx, c, cookie, pc)
	if errors.Is(res.Err, errNotAdmitted) || errors.Is(res.Err, errShed) {
		return
	}
	res.Diagnose()
	s.logResult(res)
	if s.cfg.OnResult != nil {
		s.cfg.OnResult(res)
	}
}

// greeting serves a connection whose cookie is a greeting of another
// kind than a test's (an agent's proof request, a latency session, path-MTU
// probes, a latency echo); false if it is none.
func (s *Server) greeting(ctx context.Context, c net.Conn, seq uint64, cookie [wire.CookieSize]byte, pc *pendingConn) bool {
	var serve func()
	if nonce, ok := proofRequest(cookie); ok {
		serve = func() { s.answerProof(c, nonce) }
	} else if port, rate, ok := latency.ParseUDPGreeting(cookie); ok {
		serve = func() {
			c.SetReadDeadline(time.Time{})
			s.latSession(ctx, c, seq, port, rate, cookie)
		}
	} else if port, ok := pathmtu.ParseGreeting(cookie); ok {
		serve = func() { s.mtuSession(ctx, c, port) }
	} else if cookie == latency.Hello {
		serve = func() {
			c.SetReadDeadline(time.Time{})
			s.echo(ctx, c, seq)
		}
	} else {
		return false
	}
	if !pc.identified() {
		c.Close()
		return true
	}
	serve()
	return true
}

// mtuSession serves doctor's path-MTU probes, both ways (pathmtu.Serve),
// unless maxMTUSessions run already.
func (s *Server) mtuSession(ctx context.Context, c net.Conn, port uint16) {
	if s.mtuSessions.Add(1) > maxMTUSessions {
		s.mtuSessions.Add(-1)
		s.shedf("%s: refused: %d path-MTU probe sessions running already", c.RemoteAddr(), maxMTUSessions)
		c.Close()
		return
	}
	defer s.mtuSessions.Add(-1)
	c.SetReadDeadline(time.Time{})
	pathmtu.Serve(ctx, c, port)
}

// toWaitingTestLocked hands a data stream to the test being set up that
// its cookie names; false if no test waits for it. s.mu is held.
func (s *Server) toWaitingTestLocked(c net.Conn, seq uint64, cookie [wire.CookieSize]byte, host netip.Addr) bool {
	w, ok := s.waiting[cookie]
	if !ok {
		return false
	}
	if w.host != host && !s.cfg.AnyStreamSource {
		s.logf("%s: refused: a data stream for the test of %v from another address (--any-stream-source accepts them, behind NAT)", c.RemoteAddr(), w.host)
		c.Close()
		return true
	}
	// Sent under the lock, so nothing arrives after the test stops
	// waiting; a stream beyond what the test asked for is closed.
	select {
	case w.ch <- dataConn{c, seq}:
	default:
		c.Close()
	}
	return true
}

func (s *Server) logf(format string, args ...any) {
	if s.cfg.Log != nil {
		fmt.Fprintf(s.cfg.Log, "%s %s\n", time.Now().Format(time.RFC3339), fmt.Sprintf(format, args...))
	}
}

// serveTest runs one test on its control connection.
func (s *Server) serveTest(ctx context.Context, ctrl net.Conn, cookie [wire.CookieSize]byte, pc *pendingConn) *result.Result {
	defer ctrl.Close()
	if tc, ok := ctrl.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
		// A control connection is silent while its test runs: probes
		// find a client whose host died within about 30 s.
		tc.SetKeepAliveConfig(ctrlKeepAlive)
	}
	res := &result.Result{Role: "server", Version: result.Version, SystemInfo: systemInfo(), Time: time.Now(),
		Cookie: wire.CookieString(cookie), Backend: s.backend.Name()}
	if a, ok := ctrl.RemoteAddr().(*net.TCPAddr); ok {
		res.Peer = unmap(a.AddrPort())
	}
	res.Err = s.runTest(ctx, ctrl, cookie, res, pc)
	return res
}

// serverTest is one test on the server: its control connection, the
// state it is in, and whether the client was told how it ends.
type serverTest struct {
	s    *Server
	ctx  context.Context
	ctrl net.Conn
	res  *result.Result
	p    wire.Params
	sess *session
	mt   *meteredTest // nil: no --server-bitrate-limit
	// adm is the test's slot; it is given back before DISPLAY_RESULTS,
	// so a client that starts its next test once it has them finds it.
	adm   *admission
	state wire.State
	told  bool // SERVER_ERROR or SERVER_TERMINATE went out
	// results: TEST_END came; the results are exchanged even while the
	// server shuts down.
	results bool
	// watching: shutting down sets the control connection's read
	// deadline in the past (to wake a blocked read).
	watchMu  sync.Mutex
	watching bool
	// stopWatch ends that, once the streams are connected.
	stopWatch func() bool

	cookie [wire.CookieSize]byte
	pc     *pendingConn
	// backend sends and rxBackend receives (nil: the session's choice).
	backend, rxBackend engine.Backend
	cpu                cpuMeter
	nic                *nicWatch // nil: not watched
	// grace is how long the client has to end the test.
	grace time.Duration
	// cleanups release what the steps acquired (onEnd).
	cleanups []func()
	// stopAnswers ends the answering of UDP hellos sent again
	// (udpStreams), before the flows read the streams' sockets.
	stopAnswers func()
}

// unwatch stops shutting down from waking reads: from here every read
// has a deadline of its own.
func (t *serverTest) unwatch() {
	t.watchMu.Lock()
	t.watching = false
	t.watchMu.Unlock()
}

// set records a state the server sends (or acts on) for -d.
func (t *serverTest) set(st wire.State) {
	if t.s.cfg.Trace != nil {
		t.s.cfg.Trace(t.res, fmt.Sprintf("State change: State set to %d-%v (from %d-%v)", st, st, t.state, t.state))
	}
	t.state = st
}

// received records a state the client sent, for -d.
func (t *serverTest) received(st wire.State) {
	if t.s.cfg.Trace != nil {
		t.s.cfg.Trace(t.res, fmt.Sprintf("State change: server received and changed State to %d-%v", st, st))
	}
	t.state = st
}

func (t *serverTest) tracef(format string, args ...any) {
	if t.s.cfg.Trace != nil {
		t.s.cfg.Trace(t.res, fmt.Sprintf(format, args...))
	}
}

// refuse tells the client the test failed with iperf3's error code, and
// returns err.
func (t *serverTest) refuse(code int32, err error) error {
	t.told = true
	t.set(wire.ServerError)
	t.tracef("error %d sent: %v", code, err)
	t.ctrl.SetWriteDeadline(time.Now().Add(5 * time.Second))
	wire.WriteServerError(t.ctrl, code, errnoOf(code))
	if t.p.Blast != nil {
		wire.WriteReason(t.ctrl, err.Error())
	}
	return err
}

// terminate tells the client the server is shutting down.
func (t *serverTest) terminate() error {
	t.told = true
	t.set(wire.ServerTerminate)
	t.ctrl.SetWriteDeadline(time.Now().Add(5 * time.Second))
	wire.WriteState(t.ctrl, wire.ServerTerminate)
	return ErrShutdown
}

// readDeadline sets the control connection's read deadline, unless the
// server is shutting down (then a read must not block).
func (t *serverTest) readDeadline(d time.Time) {
	t.ctrl.SetReadDeadline(d)
	if t.ctx.Err() != nil {
		t.ctrl.SetReadDeadline(time.Unix(1, 0))
	}
}

// ctrlKeepAlive probes the control connection of a test (Go's default
// would take 2.5 minutes to give up on a dead client).
var ctrlKeepAlive = net.KeepAliveConfig{Enable: true, Idle: 10 * time.Second, Interval: 5 * time.Second, Count: 4}

// serverSendLimit is the byte budget the server's senders share. A TCP
// count is sent exactly; a UDP count is the client's to end, as iperf3's
// server does (iperf_run_server sends until TEST_END): the client ends the
// test when it has received the count, and a datagram lost on the way
// would leave one that waits for exactly the count waiting for ever
// (iperf3 3.12's -u -R -n 5M hung on 2 of 20 runs over loopback).
func serverSendLimit(p *wire.Params) int64 {
	if p.UDP {
		return 0
	}
	return p.ByteLimit()
}

// testGrace is how long after its time a client may take to end a test
// (iperf3's server timer: 10 state changes of 4 s); clientGoneWait how
// long a client told that the server ends the test may take to close.
const (
	testGrace      = 40 * time.Second
	clientGoneWait = 2 * time.Second
)

// wait waits for the client's next state during the test, or for the
// server to end the test: shutting down (the state zero), or an abort
// (--server-bitrate-limit, or --rcv-timeout: the receiving streams got
// nothing for that long). When the server ends it, the read of the
// client's next state is still pending.
func (t *serverTest) wait() (m stateMsg, pending <-chan stateMsg, abort *testAbort) {
	ctrlMsg := readStateAsync(t.ctrl)
	var aborts <-chan testAbort
	if t.mt != nil {
		aborts = t.mt.abort
	}
	// A timer armed again after each check, not a ticker: a test on a
	// fake clock sees each check's timer armed before it moves the clock.
	clk := t.s.clk
	every := min(t.s.cfg.RcvTimeout/2, time.Second)
	tk := clk.NewTimer(every)
	defer tk.Stop()
	hasRecv := false
	t.sess.each(false, func(*stream) { hasRecv = true })
	stall := stallLimit(t.s.cfg.RcvTimeout, t.p.BlockLen(), float64(t.p.Bandwidth))
	// A client whose streams are all done may take a moment to say
	// TEST_END (it waits for its last bytes to be acknowledged).
	const endWait = 5 * time.Second
	got, gotAt := t.sess.total(false), clk.Now()
	moved, movedAt := got+t.sess.total(true), gotAt
	for {
		select {
		case m := <-ctrlMsg:
			return m, nil, nil
		case <-t.ctx.Done():
			return stateMsg{}, ctrlMsg, nil
		case a := <-aborts:
			return stateMsg{}, ctrlMsg, &a
		case now := <-tk.C():
			recv := t.sess.total(false)
			if recv != got || !t.sess.recvEnd.load().IsZero() {
				got, gotAt = recv, now
			}
			if m := recv + t.sess.total(true); m != moved {
				moved, movedAt = m, now
			}
			limit := t.s.cfg.RcvTimeout.Milliseconds()
			switch {
			case hasRecv && now.Sub(gotAt) >= t.s.cfg.RcvTimeout:
				return stateMsg{}, ctrlMsg, &testAbort{wire.IENoMsg, fmt.Errorf("%w: nothing from the client for %v (--rcv-timeout %d ms): its sender stalled, or it is gone",
					ErrNoData, now.Sub(gotAt).Round(time.Millisecond), limit)}
			case now.Sub(movedAt) >= stall && (now.Sub(movedAt) >= endWait || !t.sess.allDone()):
				// No byte moved either way, and no word from the client:
				// it stopped reading (a test without a time limit would
				// hold its slot for ever), or it finished and never said
				// TEST_END.
				return stateMsg{}, ctrlMsg, &testAbort{wire.IENoMsg, fmt.Errorf("%w: the client neither took data nor ended the test for %v (--rcv-timeout %d ms): it stalled, or it is gone",
					ErrNoData, now.Sub(movedAt).Round(time.Millisecond), limit)}
			}
			tk.Reset(every)
		}
	}
}

// tcpStreams lets the client open n TCP streams: they come in on the
// control port, with the test's cookie.
func (s *Server) tcpStreams(ctx context.Context, ctrl net.Conn, cookie [wire.CookieSize]byte, n int) ([]*engine.Socket, error) {
	ch := make(chan dataConn, n)
	s.mu.Lock()
	s.waiting[cookie] = streamWait{ch, peerAddr(ctrl)}
	s.mu.Unlock()
	unregister := func() {
		s.mu.Lock()
		delete(s.waiting, cookie)
		s.mu.Unlock()
	}
	if err := wire.WriteState(ctrl, wire.CreateStreams); err != nil {
		unregister()
		return nil, errCreateStreams(err)
	}
	conns, err := s.collect(ctx, ch, n)
	unregister()
	// A stream that raced the unregistering is closed, not leaked.
	for len(ch) > 0 {
		(<-ch).c.Close()
	}
	var socks []*engine.Socket
	for i, dc := range conns {
		// The data stream came in on the control port; from here the
		// engine owns its socket.
		sock, aerr := engine.Adopt(dc.c)
		if aerr != nil {
			err = errors.Join(err, fmt.Errorf("stream %d: %w", i+1, aerr))
			continue
		}
		socks = append(socks, sock)
	}
	return socks, err
}

// setupError is a failure to set a test's streams up, with the iperf3
// error number to tell the client (0: the client is gone).
type setupError struct {
	code int32
	err  error
}

func (e setupError) Error() string { return e.err.Error() }
func (e setupError) Unwrap() error { return e.err }

func errCreateStreams(err error) error {
	return setupError{0, fmt.Errorf("send CREATE_STREAMS: %w", err)}
}

// udpStreams lets the client open n UDP streams from host: each hello on
// the server's UDP port gets a socket of its own, bound to the port and
// connected to the client's, which answers it, and answers it again
// (reanswer) until the returned stop, which the caller calls before the
// streams' flows start (and on every way out: it is safe twice).
func (s *Server) udpStreams(ctx context.Context, ctrl net.Conn, p *wire.Params, host netip.Addr, n int, sends func(int) bool) (_ []*engine.Socket, stop func(), _ error) {
	var stops []func()
	stop = func() {
		for _, f := range stops {
			f()
		}
	}
	socks, err := s.udpStreamsAnswered(ctx, ctrl, p, host, n, sends, &stops)
	return socks, stop, err
}

func (s *Server) udpStreamsAnswered(ctx context.Context, ctrl net.Conn, p *wire.Params, host netip.Addr, n int, sends func(int) bool, stops *[]func()) ([]*engine.Socket, error) {
	nw := "udp" + s.cfg.Family
	addr := net.JoinHostPort(s.cfg.Bind, strconv.Itoa(s.port()))
	s.udpMu.Lock()
	if err := s.openUDPLocked(); err != nil {
		s.udpMu.Unlock()
		return nil, setupError{102, err}
	}
	w, unregister := s.udp.wait(host, n)
	s.udpMu.Unlock()
	defer unregister()
	if err := wire.WriteState(ctrl, wire.CreateStreams); err != nil {
		return nil, errCreateStreams(err)
	}
	t := s.clk.NewTimer(s.cfg.StreamTimeout)
	defer t.Stop()
	var socks []*engine.Socket
	for i := 0; i < n; i++ {
		var peer netip.AddrPort
		select {
		case peer = <-w.ch:
		case <-t.C():
			return socks, fmt.Errorf("the client opened %d of %d UDP streams within %v (is UDP to port %d blocked?)", i, n, s.cfg.StreamTimeout, s.port())
		case <-ctx.Done():
			return socks, ctx.Err()
		}
		var sock *engine.Socket
		err := s.netns.Do(func() (err error) {
			so := dataSockOpts(p, !sends(i))
			so.Device = s.cfg.Device
			sock, err = engine.ListenUDP(ctx, nw, addr, so)
			return err
		})
		if err != nil {
			return socks, fmt.Errorf("UDP stream %d: %w", i+1, err)
		}
		socks = append(socks, sock)
		if err := sock.Connect(peer); err != nil {
			return socks, fmt.Errorf("UDP stream %d: %w", i+1, err)
		}
		if _, err := sock.Write(udpReply[:]); err != nil {
			return socks, fmt.Errorf("UDP stream %d: answer the hello: %w", i+1, err)
		}
		stop, err := reanswer(sock)
		if err != nil {
			return socks, fmt.Errorf("UDP stream %d: %w", i+1, err)
		}
		*stops = append(*stops, stop)
	}
	return socks, nil
}

// applyPeerPayload takes what the client asked of the server's streams
// beyond the socket options: iperf3's repeating payload on the streams it
// sends, and the CPU its stream threads run on (-A n,m).
func (s *Server) applyPeerPayload(sess *session, p *wire.Params, res *result.Result) {
	if p.RepeatingPayload != 0 {
		sess.repeatPayload()
	}
	if p.ServerAffinity != nil {
		if c := int(*p.ServerAffinity); cpuAllowed(c) {
			sess.affinity = []int{c}
		} else {
			res.Notes = append(res.Notes, fmt.Sprintf("the client asked the server to run on CPU %d, which is not online or not allowed here; its streams ran unpinned", c))
		}
	}
}

// port is the port the server listens on (the one picked, with -p 0).
func (s *Server) port() int {
	if a, ok := s.ln.Addr().(*net.TCPAddr); ok {
		return a.Port
	}
	return s.cfg.Port
}

// collect waits for n data connections and orders them as they were
// accepted, which is the order the client opened them in.
func (s *Server) collect(ctx context.Context, ch <-chan dataConn, n int) ([]dataConn, error) {
	var got []dataConn
	t := s.clk.NewTimer(s.cfg.StreamTimeout)
	defer t.Stop()
	for len(got) < n {
		select {
		case dc := <-ch:
			got = append(got, dc)
		case <-t.C():
			return got, fmt.Errorf("the client opened %d of %d streams within %v", len(got), n, s.cfg.StreamTimeout)
		case <-ctx.Done():
			return got, ctx.Err()
		}
	}
	sort.Slice(got, func(i, j int) bool { return got[i].seq < got[j].seq })
	return got, nil
}

// setOptions applies the client's socket options to the accepted streams.
// The server shares one listener among tests, so a window set here does
// not reach the SYN's window scale the way iperf3's per-test listener does.
func (s *Server) setOptions(sess *session, p *wire.Params, res *result.Result) error {
	for _, st := range sess.streams {
		if p.UDP {
			break // made with their options
		}
		if err := st.sock.Apply(dataSockOpts(p, false)); err != nil {
			return fmt.Errorf("stream %d: %w", st.id, err)
		}
	}
	if len(sess.streams) > 0 {
		first := sess.streams[0].sock
		res.SndBufActual, _ = first.BufSize(true)
		res.RcvBufActual, _ = first.BufSize(false)
		res.Congestion = congestionOf(first)
		res.TCPMSSDefault = mssOf(first)
	}
	return nil
}

// logResult writes the one line per test: who, what, result.
func (s *Server) logResult(r *result.Result) {
	if s.cfg.Log == nil {
		return
	}
	proto := "tcp"
	if r.UDP() {
		proto = "udp"
	}
	what := fmt.Sprintf("%s -P %d", proto, r.NumStreams())
	if r.Params.Bandwidth > 0 {
		what += " -b " + units.IperfBits(float64(r.Params.Bandwidth)/8) + "s/sec"
	}
	switch {
	case r.Bidir():
		what += " --bidir"
	case r.Reverse():
		what += " -R"
	}
	switch {
	case r.Params.Num > 0:
		what += fmt.Sprintf(" -n %d", r.Params.Num)
	case r.Params.BlockCount > 0:
		what += fmt.Sprintf(" -k %d", r.Params.BlockCount)
	default:
		what += fmt.Sprintf(" -t %d", r.Params.Time)
	}
	what += " backend " + r.Backend
	var parts []string
	for _, up := range []bool{true, false} {
		var bytes int64
		var secs float64
		n := 0
		for _, st := range r.Streams {
			if r.Upstream(st.Sender) != up {
				continue
			}
			b, sec := st.ReceivedBytes()
			if b < 0 {
				b, sec = st.Bytes, st.Seconds
			}
			bytes += b
			secs = max(secs, sec)
			n++
		}
		if n == 0 {
			continue
		}
		dir := "client->server"
		if !up {
			dir = "server->client"
		}
		rate := 0.0
		if secs > 0 {
			rate = float64(bytes) / secs
		}
		parts = append(parts, fmt.Sprintf("%s %ss %ss/sec", dir, units.IperfBytes(float64(bytes)), units.IperfBits(rate)))
	}
	outcome := "ok"
	if err := r.Invalid(); err != nil {
		outcome = "invalid: " + err.Error()
	}
	if r.Err != nil {
		outcome = "failed: " + r.Err.Error()
	}
	if f := result.TopFinding(r); f != nil && outcome == "ok" {
		// Why it was slow, in the same line.
		outcome += "; " + f.Severity.String() + " " + f.String()
	}
	line := fmt.Sprintf("%s: %s", r.Peer, what)
	for _, p := range parts {
		line += ", " + p
	}
	s.logf("%s: %s", line, outcome)
}
