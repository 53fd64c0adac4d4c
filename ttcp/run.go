package ttcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/clock"
	"github.com/blastnet/blast/internal/safetext"
	"github.com/blastnet/blast/report"
)

// udpIdle ends a UDP receive whose end sentinel was lost: once data has
// flowed, this long without a datagram means the transmitter is done.
const udpIdle = 2 * time.Second

// run is one ttcp run in progress.
type run struct {
	c        *Config
	out      io.Writer // the report lines
	backend  engine.Backend
	opts     engine.Options // the backend's options, as it ran
	flow     *engine.Flow
	extra    int64 // sentinel calls, which ttcp counts as I/O calls
	notes    []string
	start    time.Time
	ru0      syscall.Rusage
	idleStop time.Time // a UDP receive that ended by silence stopped here
	nic      *nicWatch
	// tcpInfo is the transmitter's TCP_INFO when the transfer ended.
	tcpInfo *engine.TCPInfo
	blocks  *blockWriter // -B: the Sink that writes whole blocks
	verify  *verifier    // --verify: the blocks' Source or Sink
	bufAddr uintptr      // the sentinels' buffer, for -v (UDP)
	// sess is the Session this transfer belongs to (nil: a single run),
	// wait how long its listening end waits for this transfer.
	sess *Session
	wait time.Duration
}

// Run performs the transfer c describes, printing ttcp's lines as it
// goes. It returns the result it printed; after a failure mid-transfer it
// prints and returns the partial result along with the error.
func Run(ctx context.Context, c Config) (*report.TTCPResult, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return transfer(ctx, c, nil, 0)
}

// ErrNoTransfer is what Session.Next returns when the end that listens
// waited its time and no transfer came: the peer has stopped.
var ErrNoTransfer = errors.New("no transfer came")

// A Session is one end of several transfers in a row (--repeat,
// --confidence), each a new connection and each reported as a run of its
// own in ttcp's lines. The end that listens keeps its listener from the
// first transfer to the last, so the peer may connect again the moment a
// transfer ends; the end that connects connects once per transfer. The
// wire is ttcp's: each transfer is what one ttcp run sends or takes.
//
// A Session is TCP only: ttcp's UDP has no connection, and a receiver
// could not tell one transfer's trailing end sentinels from the next
// one's start sentinel.
type Session struct {
	c  Config
	ln *engine.Listener // the end that listens: open from the first accept to Close
	// Clock times the wait for a transfer after the first (nil: the
	// real clock).
	Clock clock.Clock
}

// NewSession validates c for a session of several transfers.
func NewSession(c Config) (*Session, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.UDP {
		return nil, usagef("several transfers (--repeat, --confidence) are TCP only: ttcp's UDP has no connection, so a receiver cannot tell one transfer's end sentinels from the next one's start; drop -u or run one transfer at a time")
	}
	return &Session{c: c}, nil
}

// Next performs the session's next transfer, as Run performs one. wait
// bounds how long the end that listens waits for a transfer after the
// first (0: for ever); when it passes, Next returns ErrNoTransfer and a
// nil result. The end that connects ignores wait.
func (s *Session) Next(ctx context.Context, wait time.Duration) (*report.TTCPResult, error) {
	return transfer(ctx, s.c, s, wait)
}

// Close closes the listener the session kept, if any.
func (s *Session) Close() error {
	if s.ln == nil {
		return nil
	}
	err := s.ln.Close()
	s.ln = nil
	return err
}

// transfer is one transfer of c: of a Session (sess, with its wait for a
// listening end), or a single run (sess nil).
func transfer(ctx context.Context, c Config, sess *Session, wait time.Duration) (*report.TTCPResult, error) {
	b, opts, err := engine.Open(c.Backend, c.options())
	if err != nil {
		return nil, err
	}
	r := &run{c: &c, out: c.Stdout, backend: b, opts: opts, sess: sess, wait: wait}
	if c.dataOnStdout() {
		r.out = c.Stderr
	}
	// ttcp's header names the host on the end that connects: the
	// transmitter, or the receiver with -R (TTCPHeader's Transmit says
	// "-> host").
	host := ""
	if c.connects() {
		host = c.Host
	}
	report.WriteLines(r.out, report.TTCPHeader{
		Prefix: c.prefix(), Transmit: c.connects(), BufLen: c.BufLen, NBuf: c.NBuf,
		Align: c.Align, Offset: c.Offset, Port: c.Port, SockBuf: c.SockBuf, UDP: c.UDP, Host: host,
	}.Line())
	r.mes("socket")

	spec := &engine.Spec{Protocol: engine.TCP, BufLen: c.BufLen, Rate: c.Rate, Touch: c.Touch,
		BufAlign: c.Align, BufOffset: c.Offset}
	if c.UDP {
		spec.Protocol = engine.UDP
		spec.SentinelMax = sentinel
	}
	if c.Transmit {
		switch {
		case c.SendsFile():
			// The backend opens the file and sends it to its end.
		case c.SinkMode:
			spec.Bytes = int64(c.NBuf) * int64(c.BufLen)
		default:
			spec.Source = c.Stdin
		}
	} else if !c.SinkMode {
		spec.Sink = c.Stdout
		if c.Blocks {
			r.blocks = &blockWriter{w: c.Stdout, n: c.BufLen}
			spec.Sink = r.blocks
		}
	}
	if c.Verify {
		if r.verify, err = newVerifier(&c, spec); err != nil {
			return nil, err
		}
	}
	r.flow = &engine.Flow{Spec: spec, Stats: &engine.Counters{}}

	var xerr error
	switch {
	case c.Transmit && c.UDP:
		xerr = r.transmitUDP(ctx)
	case c.UDP:
		xerr = r.receiveUDP(ctx)
	default:
		xerr = r.tcp(ctx)
	}
	if r.blocks != nil {
		// ttcp writes the last, short block once the stream ends; so
		// do we, also after a failure: every byte counted is written.
		if err := r.blocks.Flush(); err != nil && xerr == nil {
			xerr = fmt.Errorf("write received data: %w", err)
		}
	}
	xerr = r.verify.end(xerr)
	if r.start.IsZero() { // failed before any data could move
		return nil, xerr
	}
	res := r.result(time.Now())
	res.Notes = append(r.verify.lines(), res.Notes...)
	if r.tcpInfo != nil {
		res.Notes = append(res.Notes, tcpLine(*r.tcpInfo))
	}
	nicLines, nic := r.nic.lines("", float64(res.Bytes)*8/res.Real.Seconds())
	res.Notes = append(res.Notes, nicLines...)
	for _, f := range r.pathFindings(res, nic) {
		res.Notes = append(res.Notes, safetext.Line(fmt.Sprintf("path %s: %s (%s). Fix: %s", f.Head(), f.Summary, f.Evidence, f.Fix)))
	}
	if bad := nic.Invalid(); bad != nil && xerr == nil {
		xerr = fmt.Errorf("the result is not valid: %s", bad)
	}
	lines := res.Lines()
	if c.Verbose {
		// ttcp prints the buffer address after its rusage line.
		at := slices.Index(lines, res.Prefix+": "+res.Rusage.Format(res.Real)) + 1
		lines = slices.Insert(lines, at, r.bufferLine())
	}
	report.WriteLines(r.out, lines...)
	return res, xerr
}

// bufferLine is ttcp's -v line "buffer address %#x", for the buffer ttcp
// mode saw data move through: the data path's with -B, the sentinels'
// with -u (ttcp uses one buffer for both). Otherwise the buffers are the
// backend's own and never pass through ttcp mode, and the line says so
// instead of showing an address that is not theirs.
func (r *run) bufferLine() string {
	addr := r.bufAddr
	if r.blocks != nil {
		addr = r.blocks.addr
	}
	if addr == 0 {
		return fmt.Sprintf("%s: buffer address not shown: the %s backend's buffers stay inside it (-B and -u show one)", r.c.prefix(), r.backend.Name())
	}
	return fmt.Sprintf("%s: buffer address %#x", r.c.prefix(), addr)
}

func (r *run) mes(s string) { fmt.Fprintf(r.c.Stderr, "%s: %s\n", r.c.prefix(), s) }

func (r *run) options() engine.SockOpts {
	o := engine.SockOpts{TOS: r.c.TOS, Device: r.c.Device, Debug: r.c.Debug}
	if r.c.Transmit {
		o.SndBuf = r.c.SockBuf
	} else {
		o.RcvBuf = r.c.SockBuf
	}
	return o
}

// reportBuf prints what the kernel granted for -b.
func (r *run) reportBuf(c interface{ BufSize(send bool) (int, error) }) error {
	if r.c.SockBuf == 0 {
		return nil
	}
	if r.c.Transmit {
		r.mes("sndbuf")
	} else {
		r.mes("rcvbuf")
	}
	n, err := c.BufSize(r.c.Transmit)
	if err != nil {
		return err
	}
	report.WriteLines(r.out, fmt.Sprintf("%s: real buffer size = %d", r.c.prefix(), n))
	return nil
}

// startTimer starts the clock and the NIC watch on the interface that
// carries traffic to or from peer.
func (r *run) startTimer(peer netip.AddrPort) {
	r.nic = watchNIC(r.c.Device, peer)
	syscall.Getrusage(syscall.RUSAGE_SELF, &r.ru0)
	r.start = time.Now()
}

// dial connects to the peer and reports the socket buffer granted.
func (r *run) dial(ctx context.Context) (*engine.Socket, error) {
	addr := net.JoinHostPort(r.c.Host, strconv.Itoa(r.c.Port))
	sock, err := engine.Dial(ctx, r.c.network(), addr, r.options())
	if err != nil {
		return nil, dialError(r.c, err)
	}
	if err := r.reportBuf(sock); err != nil {
		sock.Close()
		return nil, err
	}
	return sock, nil
}

// tcp is a TCP run: this end connects or accepts (-R swaps which end
// does which), then sends or receives.
func (r *run) tcp(ctx context.Context) error {
	var sock *engine.Socket
	var err error
	if r.c.connects() {
		sock, err = r.connect(ctx)
	} else {
		sock, err = r.accept(ctx)
	}
	if err != nil {
		return err
	}
	defer sock.Close()
	r.flow.Sock = sock
	r.startTimer(sock.RemoteAddr())
	if !r.c.Transmit {
		return transferError(r.c, engine.Run(ctx, r.backend, r.flow, false))
	}
	err = engine.Run(ctx, r.backend, r.flow, true)
	if ti, terr := sock.TCPInfo(); terr == nil {
		r.tcpInfo = &ti
	}
	// ttcp closes before it stops the clock: the data still in the socket
	// buffer is the kernel's to deliver.
	if cerr := sock.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return transferError(r.c, err)
}

// connect is ttcp's connecting end. Its lines come in ttcp's order:
// socket, sndbuf or rcvbuf (with -b), nodelay (with -D), connect. ttcp
// sets TCP_NODELAY and SO_DEBUG on this end before it connects, and so
// does the engine (blast's TCP sockets always have TCP_NODELAY; -D only
// prints the line).
func (r *run) connect(ctx context.Context) (*engine.Socket, error) {
	sock, err := r.dial(ctx)
	if err != nil {
		return nil, err
	}
	if r.c.NoDelay {
		r.mes("nodelay")
	}
	r.mes("connect")
	return sock, nil
}

// accept is ttcp's listening end: socket, sndbuf or rcvbuf (with -b),
// then "accept from" once the one connection it takes has arrived. The
// listener carries SO_DEBUG (-d), which the accepted socket inherits.
//
// In a Session the listener stays open from the first transfer to the
// session's Close, and a transfer after the first is waited for at most
// r.wait (if set): then accept returns ErrNoTransfer.
func (r *run) accept(ctx context.Context) (*engine.Socket, error) {
	ln, first := (*engine.Listener)(nil), true
	if r.sess != nil && r.sess.ln != nil {
		ln, first = r.sess.ln, false
	} else {
		var err error
		ln, err = engine.Listen(ctx, r.c.network(), net.JoinHostPort("", strconv.Itoa(r.c.Port)), r.options())
		if err != nil {
			return nil, listenError(r.c, err)
		}
		if r.sess != nil {
			r.sess.ln = ln // the Session closes it
		} else {
			defer ln.Close()
		}
	}
	if err := r.reportBuf(ln); err != nil {
		return nil, err
	}
	actx := ctx
	if !first && r.wait > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithCancel(ctx)
		defer cancel()
		waited := clock.Or(r.sess.Clock).AfterFunc(r.wait, cancel)
		defer waited.Stop()
	}
	sock, err := ln.Accept(actx)
	if err != nil {
		if ctx.Err() != nil {
			peer, _ := r.c.peer()
			return nil, fmt.Errorf("interrupted while waiting for the %s: %w", peer, ctx.Err())
		}
		if actx.Err() != nil {
			r.sess.Close() // the timed-out Accept shut the listener down
			return nil, ErrNoTransfer
		}
		return nil, fmt.Errorf("accept: %w", err)
	}
	if r.sess == nil {
		ln.Close() // ttcp takes exactly one connection
	}
	r.mes("accept from " + sock.RemoteAddr().Addr().String())
	return sock, nil
}

func (r *run) transmitUDP(ctx context.Context) error {
	sock, err := r.dial(ctx)
	if err != nil {
		return err
	}
	defer sock.Close()
	r.flow.Sock = sock
	mark := engine.Buffer(r.flow.Spec)[:sentinel]
	r.bufAddr = uintptr(unsafe.Pointer(&mark[0]))
	r.sentinel(sock, mark) // start
	r.startTimer(sock.RemoteAddr())
	err = engine.Run(ctx, r.backend, r.flow, true)
	r.sentinel(sock, mark) // end
	// The end sentinel may be lost; ttcp sends four more after timing,
	// and so do we (they are counted, as ttcp counts them).
	defer func() {
		for range 4 {
			r.sentinel(sock, mark)
		}
	}()
	return transferError(r.c, err)
}

func (r *run) sentinel(sock *engine.Socket, mark []byte) {
	sock.Write(mark)
	r.extra++
}

func (r *run) receiveUDP(ctx context.Context) error {
	sock, err := engine.ListenUDP(ctx, r.c.network(), net.JoinHostPort("", strconv.Itoa(r.c.Port)), r.options())
	if err != nil {
		return listenError(r.c, err)
	}
	defer sock.Close()
	if err := r.reportBuf(sock); err != nil {
		return err
	}
	r.flow.Sock = sock
	// A backend that steers datagrams away from the socket (afxdp) sets
	// up before the transmitter can start, not after the sentinel.
	release, err := engine.Prepare(ctx, r.backend, r.flow)
	if err != nil {
		return err
	}
	defer release()

	// Wait for the start sentinel; a datagram of data first means the
	// sentinel was lost, and the data counts from there.
	buf := engine.Buffer(r.flow.Spec)
	r.bufAddr = uintptr(unsafe.Pointer(&buf[0]))
	stop := context.AfterFunc(ctx, func() { sock.Shutdown() })
	n, from, err := sock.ReadFrom(buf)
	stopped := !stop()
	if err == nil && stopped {
		err = ctx.Err()
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted while waiting for the transmitter: %w", ctx.Err())
		}
		return fmt.Errorf("read: %w", err)
	}
	// From here the socket hears only from the transmitter.
	if err := sock.Connect(from); err != nil {
		return err
	}
	r.startTimer(from)
	if n <= sentinel {
		r.extra++
	} else {
		engine.Deliver(r.flow, buf[:n], true)
		r.notes = append(r.notes, "the start sentinel was lost: timing starts at the first data datagram")
	}

	// Watch for a lost end sentinel: silence after data ends the test.
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	errIdle := errors.New("idle")
	var lastMove time.Time
	go func() {
		t := time.NewTicker(udpIdle / 8)
		defer t.Stop()
		last, at := r.flow.Stats.Snapshot().Bytes, time.Now()
		for {
			select {
			case <-rctx.Done():
				return
			case now := <-t.C:
				if b := r.flow.Stats.Snapshot().Bytes; b != last {
					last, at = b, now
				} else if now.Sub(at) >= udpIdle {
					lastMove = at
					cancel(errIdle)
					return
				}
			}
		}
	}()
	err = engine.Run(rctx, r.backend, r.flow, false)
	if errors.Is(context.Cause(rctx), errIdle) && ctx.Err() == nil {
		r.notes = append(r.notes, fmt.Sprintf("no end sentinel arrived: stopped after %v without data", udpIdle))
		r.idleStop = lastMove
		return nil
	}
	return transferError(r.c, err)
}

func (r *run) result(stop time.Time) *report.TTCPResult {
	if !r.idleStop.IsZero() {
		stop = r.idleStop
	}
	var ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	s := r.flow.Stats.Snapshot()
	return &report.TTCPResult{
		Prefix:   r.c.prefix(),
		Transmit: r.c.Transmit,
		Format:   r.c.Format,
		Verbose:  r.c.Verbose,
		Bytes:    s.Bytes,
		Real:     stop.Sub(r.start),
		Calls:    s.Calls + r.extra,
		Rusage:   rusageDelta(&r.ru0, &ru1),
		Data:     s,
		UDP:      r.c.UDP,
		Backend:  r.backendName(),
		Notes:    append(r.notes, r.facts()...),
	}
}

// backendName is the backend with its options, as --backend takes it.
func (r *run) backendName() string {
	return engine.Spelled(r.backend.Name(), r.opts)
}

// facts renders what the backend reported about the flow (engine.Facts):
// counts such as system calls and zero-copy completions, and its notes.
func (r *run) facts() []string {
	fs := r.flow.Facts.Snapshot()
	var lines []string
	for _, l := range fs.Lines() {
		lines = append(lines, r.backend.Name()+": "+l)
	}
	return lines
}

func rusageDelta(a, b *syscall.Rusage) report.Rusage {
	tv := func(t syscall.Timeval) time.Duration {
		return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
	}
	return report.Rusage{
		User:   tv(b.Utime) - tv(a.Utime),
		Sys:    tv(b.Stime) - tv(a.Stime),
		MaxRSS: b.Maxrss,
		MajFlt: b.Majflt - a.Majflt,
		MinFlt: b.Minflt - a.Minflt,
		NVCSw:  b.Nvcsw - a.Nvcsw,
		NIVCSw: b.Nivcsw - a.Nivcsw,
		IXRSS:  b.Ixrss - a.Ixrss,
		IDRSS:  b.Idrss + b.Isrss - a.Idrss - a.Isrss,
	}
}
