package control

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/clock"
	"github.com/blastnet/blast/units"
)

// Config is one client test. The zero value of an optional field means
// iperf3's default; Defaults fills them in.
type Config struct {
	Host   string
	Port   int    // 5201
	Family string // "", "4" or "6"

	Duration time.Duration // -t (whole seconds on the wire); 10 s by default
	Bytes    int64         // -n: end after this many bytes
	Blocks   int64         // -k: end after this many blocks
	Parallel int           // -P streams (per direction)
	Reverse  bool          // -R: the server sends
	Bidir    bool          // --bidir: both send
	Interval time.Duration // -i; 0 turns interval reports off
	Omit     time.Duration // -O (whole seconds on the wire)

	// UDP (-u) runs UDP streams with iperf3's datagram header.
	UDP bool
	// Sys (--sys) adds the host's load to every interval and the summary:
	// CPU user, system and idle, interrupts and context switches per
	// second, the interface's packets per second; the server's too when
	// it is blast.
	Sys bool
	// Rate is -b, bits per second per stream; with RateSet false iperf3's
	// default applies (1 Mbit/s for UDP, unlimited for TCP), and 0 with
	// RateSet is unlimited. Burst is -b's /BURST: buffers sent back to
	// back between pauses (0: smooth pacing).
	Rate    float64
	RateSet bool
	Burst   int
	// FQRate (--fq-rate) caps each stream in the kernel, bits per second
	// (SO_MAX_PACING_RATE).
	FQRate int64
	// DontFragment (--dont-fragment) sets the IP don't-fragment bit.
	DontFragment bool
	// UDP64 (--udp-counters-64bit) uses 64-bit datagram sequence numbers.
	UDP64 bool

	Window     int    // -w: SO_SNDBUF and SO_RCVBUF on both ends
	MSS        int    // -M
	NoDelay    bool   // -N
	Congestion string // -C
	TOS        int    // -S / --dscp<<2
	BlockLen   int    // -l
	ZeroCopy   bool   // -Z: ask for the sendfile backend on both ends
	Backend    string // --backend: what sends (readwrite by default)
	// RxBackend (--rx-backend) receives; "" means Backend, or readwrite
	// if Backend only sends.
	RxBackend string
	// BackendOptions and RxBackendOptions configure the two backends,
	// as written after the colon of --backend ("batch=64,gso"); a blast
	// server applies them too, except a file to send.
	BackendOptions, RxBackendOptions string

	Title           string // -T
	GetServerOutput bool   // --get-server-output
	ConnectTimeout  time.Duration

	// Bind (-B) is the local address of the control and data
	// connections (zero: any); BindDev (--bind-dev, -B ADDR%DEV or -c
	// HOST%DEV) binds them to that interface (SO_BINDTODEVICE).
	Bind    netip.Addr
	BindDev string
	// CPort (--cport) is the local port of the data streams, as iperf3
	// numbers them: stream i (from 0) binds CPort+i, and a --bidir test's
	// receiving streams follow the sending ones (CPort+P+i). 0: the
	// kernel picks. The control connection keeps an ephemeral port.
	CPort int
	// Affinity (-A n) pins the thread of every data stream of the client
	// to these CPUs (nil: not pinned); ServerAffinity (-A n,m) asks the
	// server for CPU m (nil: not asked).
	Affinity       []int
	ServerAffinity *int
	// File (-F) is sent by a client that sends (each stream reads it from
	// its start) and written by a client that receives (one stream; the
	// file is truncated first). A sender's test ends at the file's end.
	File string
	// FlowLabel (-L) is the IPv6 flow label of the data streams (0: none).
	FlowLabel int
	// RepeatingPayload (--repeating-payload) sends iperf3's '0'..'9'
	// repeating payload instead of blast's pattern, and asks the server to.
	RepeatingPayload bool
	// ExtraData (--extra-data) travels in the parameters and in the -J
	// documents of both ends.
	ExtraData string
	// StateTimeout bounds each wait for the server's next message while
	// the test is set up, and (three times it) while it ends; a server
	// that stays silent longer ends the test with an error that names
	// what the client was waiting for (DefaultStateTimeout).
	StateTimeout time.Duration
	// StallTimeout ends a test in which no byte moved either way for this
	// long (the server stopped reading and sending: a test without a time
	// limit would wait for ever); 0: RcvTimeout if set, else
	// DefaultRcvTimeout.
	StallTimeout time.Duration
	// RcvTimeout (--rcv-timeout) ends a test whose receiving streams got
	// nothing for this long, with iperf3's "idle timeout for receiving
	// data"; iperf3's 120 s when the client receives and it is 0.
	RcvTimeout time.Duration
	// SndTimeout (--snd-timeout) is TCP_USER_TIMEOUT of the control and
	// the TCP data connections: how long sent data may stay unacknowledged
	// before the connection fails (0: the system's).
	SndTimeout time.Duration
	// KeepAlive (--cntl-ka) turns TCP keepalive on for the control
	// connection; a negative field keeps the system's value (nil: Go's
	// default for a dialled connection, 15 s probes).
	KeepAlive *net.KeepAliveConfig
	// SkipRxCopy (--skip-rx-copy) receives with MSG_TRUNC (the trunc
	// backend), and asks the server to.
	SkipRxCopy bool
	// GSRO (--gsro) sends and receives UDP with GSO and GRO (the mmsg
	// backend, gso and gro) and asks the server to, with iperf3 3.21's
	// parameters; for TCP it does nothing, as in iperf3.
	GSRO bool
	// MPTCP (-m) makes the TCP data streams Multipath TCP.
	MPTCP bool
	// Verify (--verify) sends numbered, checksummed blocks and checks
	// them at the receiver, both ways; it needs a blast server
	// (control/verify.go).
	Verify bool
	// Debug receives iperf3's -d lines up to DebugLevel (1 to 4: the
	// parameters and results exchanged from 1, every state change from 3).
	Debug      io.Writer
	DebugLevel int

	// NoNIC skips watching the interface that carries the test.
	NoNIC bool
	// Clock is the client's clock for the checks of StallTimeout and
	// RcvTimeout and for the time in an auth token (nil: the real one).
	// The waits for the server's messages (StateTimeout) are socket
	// deadlines, on the real clock.
	Clock clock.Clock
	// Auth are the credentials sent to a server that asks for them
	// (--username, --rsa-public-key-path; nil: none).
	Auth *ClientAuth

	// OnStart is called once the streams are connected; OnInterval after
	// every interval. Both run on the test's goroutines: keep them quick.
	OnStart    func(*result.Result)
	OnInterval func(*result.Result, *result.Interval)
}

// Validate reports the first thing wrong with c, in words naming the fix.
func (c *Config) Validate() error {
	switch {
	case c.Host == "":
		return errors.New("no server: give the host to connect to")
	case c.Port < 1 || c.Port > 65535:
		return fmt.Errorf("port %d: must be 1 to 65535", c.Port)
	case c.Family != "" && c.Family != "4" && c.Family != "6":
		return fmt.Errorf("address family %q: use -4 or -6", c.Family)
	case c.Duration < 0 || c.Duration > wire.MaxTime*time.Second:
		return fmt.Errorf("duration %v: must be 0 to %d s", c.Duration, wire.MaxTime)
	case c.Duration%time.Second != 0:
		return fmt.Errorf("duration %v: iperf3's protocol carries whole seconds; use -t 1 or more", c.Duration)
	case c.Omit < 0 || c.Omit > wire.MaxOmit*time.Second || c.Omit%time.Second != 0:
		return fmt.Errorf("omit %v: must be whole seconds from 0 to %d", c.Omit, wire.MaxOmit)
	case c.Bytes < 0 || c.Blocks < 0:
		return errors.New("-n and -k must not be negative")
	case c.Bytes > 0 && c.Blocks > 0:
		return errors.New("-n and -k both given: choose one end condition")
	case c.Parallel < 1 || c.Parallel > wire.MaxStreams:
		return fmt.Errorf("-P %d: invalid number of parallel streams (min = 1, max = %d)", c.Parallel, wire.MaxStreams)
	case c.Reverse && c.Bidir:
		return errors.New("-R and --bidir both given: --bidir already sends both ways")
	case c.Interval < 0 || (c.Interval > 0 && c.Interval < 100*time.Millisecond) || c.Interval > 60*time.Second:
		return fmt.Errorf("-i %v: must be 0 (off) or 0.1 to 60 seconds", c.Interval)
	case c.Window < 0 || c.Window > 512<<20:
		return fmt.Errorf("-w %d: must be at most 512M", c.Window)
	case c.MSS < 0 || c.MSS > wire.MaxMSS:
		return fmt.Errorf("-M %d: must be 0 (the system's) to %d", c.MSS, wire.MaxMSS)
	case c.TOS < 0 || c.TOS > 255:
		return fmt.Errorf("TOS %d: must be 0 to 255", c.TOS)
	case !c.UDP && (c.BlockLen < 1 || c.BlockLen > 1<<20):
		return fmt.Errorf("-l %d: must be 1 to 1M for TCP", c.BlockLen)
	case c.UDP && c.BlockLen != 0 && (c.BlockLen < wire.MinUDPBlock || c.BlockLen > wire.MaxUDPBlock):
		return fmt.Errorf("-l %d: a UDP datagram must be %d to %d bytes", c.BlockLen, wire.MinUDPBlock, wire.MaxUDPBlock)
	case c.Rate < 0 || c.Rate > units.MaxRate:
		return fmt.Errorf("-b %g: must be 0 (unlimited) to 10T", c.Rate)
	case c.Burst < 0 || c.Burst > units.MaxBurst:
		return fmt.Errorf("-b .../%d: the burst must be 1 to %d", c.Burst, units.MaxBurst)
	case c.FQRate < 0 || float64(c.FQRate) > units.MaxRate:
		return fmt.Errorf("--fq-rate %d: must be 0 to 10T", c.FQRate)
	case c.UDP64 && !c.UDP:
		return errors.New("--udp-counters-64bit is for UDP tests: add -u")
	case c.DontFragment && !c.UDP:
		return errors.New("--dont-fragment is for UDP tests: add -u")
	case c.ZeroCopy && c.Backend != "" && c.Backend != "sendfile":
		return fmt.Errorf("-Z and --backend %s both given: -Z means --backend sendfile", c.Backend)
	}
	if err := c.validateVerify(); err != nil {
		return err
	}
	return c.validateClientOptions()
}

// CheckBackends opens the backends c asks for and makes sure they can move
// its streams the way it sends and receives, before anything connects: a
// wrong choice is the command line's (an unknown backend, afxdp asked to
// send iperf3's UDP headers). Call it after Defaults.
func (c *Config) CheckBackends() error {
	tx, _, err := engine.Open(c.Backend, c.BackendOptions)
	if err != nil {
		return err
	}
	rx := tx
	if c.RxBackend != "" || c.RxBackendOptions != "" {
		name := c.RxBackend
		if name == "" {
			name = c.Backend
		}
		if rx, _, err = engine.Open(name, c.RxBackendOptions); err != nil {
			return err
		}
	}
	return c.checkBackends(tx, rx)
}

// checkBackends asks the backends whether they can send and receive the
// test's streams (engine.Check).
func (c *Config) checkBackends(tx, rx engine.Backend) error {
	spec := &engine.Spec{Protocol: engine.TCP}
	if c.UDP {
		spec = &engine.Spec{Protocol: engine.UDP, Framing: newUDPFraming(c.UDP64)}
	}
	if !c.Reverse || c.Bidir {
		if err := engine.Check(tx, spec, true); err != nil {
			return fmt.Errorf("--backend %s: %w", tx.Name(), err)
		}
	}
	if c.Reverse || c.Bidir {
		if err := engine.Check(rx, spec, false); err != nil {
			return fmt.Errorf("--rx-backend %s: %w", rx.Name(), err)
		}
	}
	return nil
}

// Defaults fills in iperf3's defaults for unset fields.
func (c *Config) Defaults() {
	if c.Port == 0 {
		c.Port = wire.DefaultPort
	}
	if c.Parallel == 0 {
		c.Parallel = 1
	}
	if c.BlockLen == 0 && !c.UDP {
		c.BlockLen = wire.DefaultTCPBlock // UDP's follows the control connection's MSS (run)
	}
	if !c.RateSet && c.UDP {
		c.Rate = DefaultUDPRate
	}
	if c.Backend == "" {
		c.Backend = engine.DefaultBackend
		switch {
		case c.ZeroCopy:
			c.Backend = "sendfile"
		case c.UDP && c.BackendOptions == "":
			c.Backend, c.BackendOptions = udpDefaultBackend()
		}
	}
	if c.SkipRxCopy && c.RxBackend == "" {
		c.RxBackend = "trunc"
	}
	if c.RcvTimeout == 0 && (c.Reverse || c.Bidir) {
		c.RcvTimeout = DefaultRcvTimeout
	}
	if c.StateTimeout == 0 {
		c.StateTimeout = DefaultStateTimeout
	}
	c.gsroDefaults()
}

func (c *Config) network() string {
	return "tcp" + c.Family
}

func (c *Config) dataNetwork() string {
	if c.UDP {
		return "udp" + c.Family
	}
	return "tcp" + c.Family
}

func (c *Config) params() wire.Params {
	p := wire.Params{
		TCP:           wire.Flag(!c.UDP),
		UDP:           wire.Flag(c.UDP),
		Bandwidth:     wire.Int(c.Rate),
		Burst:         wire.Int(c.Burst),
		FQRate:        wire.Int(c.FQRate),
		Omit:          wire.Int(c.Omit / time.Second),
		Time:          wire.Int(c.Duration / time.Second),
		Num:           wire.Int(c.Bytes),
		BlockCount:    wire.Int(c.Blocks),
		MSS:           wire.Int(c.MSS),
		NoDelay:       wire.Flag(c.NoDelay),
		Parallel:      wire.Int(c.Parallel),
		Reverse:       wire.Flag(c.Reverse),
		Bidirectional: wire.Flag(c.Bidir),
		Window:        wire.Int(c.Window),
		Len:           wire.Int(c.BlockLen),
		TOS:           wire.Int(c.TOS),
		Title:         c.Title,
		Congestion:    c.Congestion,
		ClientVersion: "3.12",
		Blast: &wire.BlastParams{Version: result.Version, Sys: c.Sys, Backend: c.Backend, RxBackend: c.RxBackend,
			BackendOptions: c.BackendOptions, RxBackendOptions: c.RxBackendOptions, Verify: c.Verify},
	}
	if c.Bytes > 0 || c.Blocks > 0 {
		p.Time = 0 // iperf3 drops the default duration when a byte or block count is given
	}
	if c.GetServerOutput {
		p.GetServerOutput = 1
	}
	if c.ZeroCopy {
		p.ZeroCopy = 1
	}
	if c.UDP64 {
		p.UDPCounters64 = 1
	}
	if c.DontFragment {
		p.DontFragment = 1
	}
	c.clientParams(&p)
	return p
}

// stateMsg is one state read off the control connection.
type stateMsg struct {
	s   wire.State
	err error
}

// readStateAsync reads one state (and SERVER_ERROR's details) in the
// background.
func readStateAsync(c net.Conn) <-chan stateMsg {
	ch := make(chan stateMsg, 1)
	go func() {
		s, err := wire.ReadState(c)
		if err == nil && s == wire.ServerError {
			err = wire.ReadServerError(c)
			if se, ok := err.(wire.ServerErrorCode); ok {
				se.Reason = wire.ReadReason(c, time.Second)
				err = se
			}
		}
		ch <- stateMsg{s, err}
	}()
	return ch
}

// peerStateError turns an unexpected state into an error.
func peerStateError(m stateMsg, waiting string) error {
	switch {
	case m.err != nil && errors.Is(m.err, syscall.ETIMEDOUT):
		return fmt.Errorf("the control connection to the server timed out while %s (the kernel gave it up: --snd-timeout, or keepalive found no answer): the path to it is down", waiting)
	case m.err != nil && (errors.Is(m.err, io.EOF) || errors.Is(m.err, syscall.ECONNRESET)):
		return fmt.Errorf("the server closed the control connection while %s (is it still running? does its --allow admit this address?)", waiting)
	case m.err != nil:
		var se wire.ServerErrorCode
		if errors.As(m.err, &se) {
			return se
		}
		return fmt.Errorf("control connection, while %s: %w", waiting, m.err)
	case m.s == wire.AccessDenied:
		return wire.ErrBusy
	case m.s == wire.ServerTerminate:
		return errors.New("the server has terminated the test")
	}
	return fmt.Errorf("unexpected %v from the server while %s", m.s, waiting)
}

// Run runs one test against the server and returns what it measured. On a
// failure after the streams started, the Result holds the partial
// measurements and its Err the failure (also returned).
func Run(ctx context.Context, cfg Config) (*result.Result, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	backend, _, err := engine.Open(cfg.Backend, cfg.BackendOptions)
	if err != nil {
		return nil, err
	}
	cl := &client{cfg: cfg, backend: backend, rxBackend: backend}
	if cfg.RxBackend != "" || cfg.RxBackendOptions != "" {
		rx := cfg.RxBackend
		if rx == "" {
			rx = cfg.Backend
		}
		if cl.rxBackend, _, err = engine.Open(rx, cfg.RxBackendOptions); err != nil {
			return nil, err
		}
	}
	if err := cfg.checkBackends(cl.backend, cl.rxBackend); err != nil {
		return nil, err
	}
	if cfg.MPTCP && !cfg.UDP {
		if err := engine.ProbeMPTCP(); err != nil {
			return nil, fmt.Errorf("-m: %w", err)
		}
	}
	if cl.files, err = openClientFiles(&cfg); err != nil {
		return nil, err
	}
	res, err := cl.run(ctx)
	if res != nil {
		res.Err = err // the rules read whether the test failed
		res.Diagnose()
	}
	if cerr := cl.files.close(); cerr != nil && err == nil {
		err = cerr
	}
	if err == nil {
		err = res.Invalid()
	}
	if res != nil && cl.files != nil {
		res.File = cl.files.result()
	}
	if res != nil && err == nil {
		err = res.VerifyErr()
	}
	if res != nil && err != nil {
		res.Err = err
	}
	return res, err
}

type client struct {
	cfg       Config
	backend   engine.Backend
	rxBackend engine.Backend
	nic       *nicWatch
	ctrl      net.Conn
	cookie    [wire.CookieSize]byte
	res       *result.Result
	sess      *session
	// lastRecv is what the receivers had at lastRecvAt (bytesDone).
	lastRecv   int64
	lastRecvAt time.Time
	// files is the -F file, opened for the streams (nil: none).
	files *clientFiles
	// state is the last state read from or written to the server (for
	// the -d lines).
	state atomic.Int32
	// addr is the server's host:port as given; params the test's
	// parameters as sent.
	addr   string
	params wire.Params
	// after is what the client waits after once the test has ended (for
	// the error of a server that stops answering).
	after string
}

func dialError(addr string, err error) error {
	var errno syscall.Errno
	switch {
	case errors.As(err, &errno) && errno == syscall.ECONNREFUSED:
		return fmt.Errorf("connect to %s: connection refused: is a server running there (blast server, or iperf3 -s)? %w", addr, err)
	case isTimeout(err):
		return fmt.Errorf("connect to %s: timed out: check the address and any firewall, or raise --connect-timeout: %w", addr, err)
	}
	return fmt.Errorf("connect to %s: %w", addr, err)
}

// connectStreams opens the data streams: with --bidir the sending ones
// first, then the receiving ones, as iperf3 does.
func (cl *client) connectStreams(ctx context.Context, addr string) error {
	cfg := &cl.cfg
	so := cl.dataSockOptsFor(dataSockOpts(&cl.res.Params, cfg.UDP && (cfg.Reverse || cfg.Bidir)))
	so.MSS = cfg.MSS
	// The streams go where the control connection went.
	peer := cl.res.Peer
	if peer.IsValid() {
		addr = net.JoinHostPort(peer.Addr().String(), strconv.Itoa(cfg.Port))
	}
	if cfg.ConnectTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.ConnectTimeout)
		defer cancel()
	}
	n := cfg.Parallel
	if cfg.Bidir {
		n *= 2
	}
	for i := 0; i < n; i++ {
		var err error
		if so.Local, err = cl.localAddr(i, peer.Addr()); err != nil {
			return err
		}
		c, err := engine.Dial(ctx, cfg.dataNetwork(), addr, so)
		if err != nil {
			return fmt.Errorf("open stream %d of %d: %w", i+1, n, err)
		}
		if cfg.SndTimeout > 0 && !cfg.UDP {
			if err := c.Control(func(fd int) error { return setUserTimeout(fd, cfg.SndTimeout) }); err != nil {
				c.Close()
				return err
			}
		}
		cl.debugStream(c)
		sender := !cfg.Reverse
		if cfg.Bidir {
			sender = i < cfg.Parallel
		}
		st := newStream(wire.StreamID(i), c, sender)
		cl.sess.streams = append(cl.sess.streams, st)
		if cfg.UDP {
			hctx, cancel := ctx, context.CancelFunc(func() {})
			if cfg.ConnectTimeout == 0 {
				hctx, cancel = context.WithTimeout(ctx, 30*time.Second) // iperf3's wait
			}
			err = udpHandshake(hctx, c)
			cancel()
			if err != nil {
				return fmt.Errorf("open UDP stream %d of %d: %w", i+1, n, err)
			}
			continue
		}
		if _, err := c.Write(cl.cookie[:]); err != nil {
			return fmt.Errorf("open stream %d of %d: send cookie: %w", i+1, n, err)
		}
	}
	first := cl.sess.streams[0].sock
	cl.res.SndBufActual, _ = first.BufSize(true)
	cl.res.RcvBufActual, _ = first.BufSize(false)
	cl.res.Congestion = congestionOf(first)
	if cl.files != nil {
		cl.files.attach(cl.sess.streams)
	} else if cfg.RepeatingPayload {
		cl.sess.repeatPayload()
	}
	cl.sess.announce()
	cl.sess.prepare(ctx, cl.res.Params.BlockLen())
	if testHookConnected != nil {
		testHookConnected(cl)
	}
	return nil
}

// testHookConnected, set by tests only, sees the client once its streams
// are connected (the sockets' options).
var testHookConnected func(*client)

// senderLimit is the byte budget the client's senders share.
func senderLimit(limit int64) int64 { return limit }

// bytesDone tells whether a byte- or block-limited test has reached its
// count: this side's senders have sent their share and its receivers got
// the count. (iperf3 ends a --bidir test when either direction is done;
// blast lets both finish, so both directions move exactly the count.)
func (cl *client) bytesDone(limit int64) bool {
	sess := cl.sess
	done := true
	hasRecv := false
	for _, st := range sess.streams {
		if !st.sender {
			hasRecv = true
			continue
		}
		select {
		case <-st.done:
		default:
			done = false
		}
	}
	if !done || !hasRecv {
		return done
	}
	got := sess.total(false)
	if got >= limit {
		return true
	}
	if !cl.cfg.UDP {
		return false
	}
	// A server that sends until TEST_END (blast's and iperf3's) gets the
	// receivers to the count whatever was lost. One that stopped at
	// exactly the count (blast before it sent until TEST_END) never will
	// when a datagram was lost: its count is over once nothing has come
	// for countQuiet.
	now := time.Now()
	if got != cl.lastRecv || cl.lastRecvAt.IsZero() {
		cl.lastRecv, cl.lastRecvAt = got, now
		return false
	}
	return got > 0 && now.Sub(cl.lastRecvAt) >= countQuiet(&cl.res.Params)
}

// countQuiet is how long a UDP count test's receivers may get nothing
// before the client takes the count as over (the rest lost): a second,
// or four of the gaps the pacing leaves between one stream's datagrams
// (or bursts) when those are longer, so that a slow test is not cut
// short between two datagrams.
func countQuiet(p *wire.Params) time.Duration {
	const least = time.Second
	if p.Bandwidth <= 0 {
		return least
	}
	gap := float64(p.BlockLen()) * 8 * float64(max(p.Burst, 1)) / float64(p.Bandwidth)
	return max(least, time.Duration(min(4*gap, 3600)*float64(time.Second)))
}

// omitDone reports whether the omit period is over.
func (s *session) omitDone() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.omitting
}
