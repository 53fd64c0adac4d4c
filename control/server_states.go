package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/blastnet/blast/control/render"
	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/engine"
)

// serverStep is what the server does in one state of iperf3's protocol:
// it returns the state that comes next (IperfDone: the test is over), or
// the error that ended the test.
type serverStep func(t *serverTest) (wire.State, error)

// serverSteps is the server's side of a test, state by state, in the
// order a test that goes well takes them. The client's TEST_END ends
// TEST_RUNNING; every other step ends on what the server sent.
var serverSteps = map[wire.State]serverStep{
	wire.ParamExchange:   (*serverTest).paramExchange,   // read and check the parameters, choose the backends, take a slot
	wire.CreateStreams:   (*serverTest).createStreams,   // take the client's streams, set their options
	wire.TestStart:       (*serverTest).testStart,       // the streams are ready
	wire.TestRunning:     (*serverTest).testRunning,     // move the data until the client's TEST_END, or end the test
	wire.TestEnd:         (*serverTest).testEnd,         // count what is still on its way, close the streams
	wire.ExchangeResults: (*serverTest).exchangeResults, // the client's results for the server's
	wire.DisplayResults:  (*serverTest).displayResults,  // wait for the client's IPERF_DONE
}

// runTest runs one test on its control connection, from PARAM_EXCHANGE to
// the end, through serverSteps.
func (s *Server) runTest(ctx context.Context, ctrl net.Conn, cookie [wire.CookieSize]byte, res *result.Result, pc *pendingConn) (err error) {
	t := &serverTest{s: s, ctx: ctx, ctrl: ctrl, res: res, cookie: cookie, pc: pc, state: wire.IperfStart, watching: true}
	// Shutting down wakes a blocked read; writes still reach the client,
	// which is told SERVER_TERMINATE.
	t.stopWatch = context.AfterFunc(ctx, func() {
		t.watchMu.Lock()
		defer t.watchMu.Unlock()
		if t.watching {
			ctrl.SetReadDeadline(time.Unix(1, 0))
		}
	})
	defer t.stopWatch()
	t.tracef("Accepted connection from %v, cookie %s", res.Peer, res.Cookie)
	defer func() {
		if err != nil && !t.told && !t.results && ctx.Err() != nil {
			err = t.terminate()
		}
	}()
	defer t.cleanup()
	for st := wire.ParamExchange; st != wire.IperfDone; {
		step, ok := serverSteps[st]
		if !ok {
			return fmt.Errorf("server: no step for state %v", st)
		}
		if st, err = step(t); err != nil {
			return err
		}
	}
	return nil
}

// onEnd has fn run when the test ends, after what was registered later.
func (t *serverTest) onEnd(fn func()) { t.cleanups = append(t.cleanups, fn) }

// cleanup releases what the steps acquired, the last first.
func (t *serverTest) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
	t.cleanups = nil
}

// paramExchange asks for the parameters and, once they pass, gives the
// test its backends and a slot.
func (t *serverTest) paramExchange() (wire.State, error) {
	t.set(wire.ParamExchange)
	if err := wire.WriteState(t.ctrl, wire.ParamExchange); err != nil {
		return 0, fmt.Errorf("send PARAM_EXCHANGE: %w", err)
	}
	if err := t.readParams(); err != nil {
		return 0, err
	}
	t.chooseBackends()
	if err := t.takeSlot(); err != nil {
		return 0, err
	}
	return wire.CreateStreams, nil
}

// readParams reads the client's parameters and checks them: the frame,
// the authentication, the duration, the server's rate budget.
func (t *serverTest) readParams() error {
	s, res, pc := t.s, t.res, t.pc
	t.readDeadline(time.Now().Add(s.cfg.StreamTimeout))
	pc.recheck()
	b, err := wire.ReadFrame(t.ctrl, wire.MaxParamsJSON)
	if err != nil {
		if t.ctx.Err() != nil {
			return err
		}
		if !pc.identified() && pc.shed() {
			return errShed
		}
		return t.refuse(114, fmt.Errorf("read parameters: %w", err))
	}
	t.tracef("get_parameters: %s", redactToken(b))
	p := &t.p
	if err := json.Unmarshal(b, p); err != nil {
		return t.refuse(114, fmt.Errorf("parameters: %w", err))
	}
	if p.Parallel == 0 {
		p.Parallel = 1
	}
	res.Params = *p
	if code, err := p.ValidateFrame(b); err != nil {
		return t.refuse(code, fmt.Errorf("parameters refused: %w", err))
	}
	if err := s.cfg.Auth.Check(p.AuthToken, s.clk.Now()); err != nil {
		return t.refuse(wire.IEAuthTest, err)
	}
	if err := s.checkDuration(p); err != nil {
		return t.refuse(wire.IEMaxDuration, err)
	}
	if s.meter != nil {
		if t.mt, err = s.meter.admit(res, p); err != nil {
			return t.refuse(wire.IETotalRate, err)
		}
		t.onEnd(func() { s.meter.remove(t.mt) })
	}
	return nil
}

// chooseBackends picks what sends and what receives here: the server's
// own, or what the client asked for where this side can; the Result notes
// what it could not.
func (t *serverTest) chooseBackends() {
	s, p, res := t.s, &t.p, t.res
	t.backend, t.rxBackend = s.backend, s.rxBackend
	if bool(p.UDP) && s.udpAuto && (p.Blast == nil || p.Blast.Backend == "") {
		if b, _, err := engine.Open(udpDefaultBackend()); err == nil {
			t.backend = b
		}
	}
	if p.Blast != nil && p.Blast.Backend != "" && p.Blast.Backend != t.backend.Name() {
		// The client's --backend names what sends; it applies here when
		// this side sends (-R, --bidir).
		if b, err := engine.Usable(p.Blast.Backend); err == nil {
			t.backend = b
		} else {
			res.Notes = append(res.Notes, fmt.Sprintf("the server cannot send with %s (%v); it sent with %s", p.Blast.Backend, err, t.backend.Name()))
		}
	} else if p.ZeroCopy != 0 && p.Blast == nil {
		if b, err := engine.Usable("sendfile"); err == nil {
			t.backend = b
		} else {
			res.Notes = append(res.Notes, "iperf3 -Z asked for zero-copy sends; sendfile is not available here, so "+t.backend.Name()+" moved the bytes")
		}
	}
	if p.Blast != nil && p.Blast.RxBackend != "" {
		if b, err := engine.Usable(p.Blast.RxBackend); err == nil {
			t.rxBackend = b
		} else {
			res.Notes = append(res.Notes, fmt.Sprintf("the server cannot receive with %s (%v)", p.Blast.RxBackend, err))
		}
	}
	if p.Blast != nil {
		t.backend, t.rxBackend = peerOptions(t.backend, t.rxBackend, p.Blast, res)
	}
	if p.Reverse || p.Bidirectional {
		t.checkSender()
	}
}

// checkSender falls back to the default backend where the chosen one
// cannot send the test's streams.
func (t *serverTest) checkSender() {
	p := &t.p
	spec := &engine.Spec{Protocol: engine.TCP}
	if p.UDP {
		spec = &engine.Spec{Protocol: engine.UDP, Framing: newUDPFraming(p.UDPCounters64 != 0)}
	}
	err := engine.Check(t.backend, spec, true)
	if err == nil {
		return
	}
	fallback, _, ferr := engine.Open(engine.DefaultBackend, "")
	if p.UDP {
		fallback, _, ferr = engine.Open(udpDefaultBackend())
	}
	if ferr == nil {
		t.res.Notes = append(t.res.Notes, fmt.Sprintf("the server cannot send with %s (%v); it sent with %s", t.backend.Name(), err, fallback.Name()))
		t.backend = fallback
	}
}

// sends reports whether the server sends on stream i: the client's
// senders come first (--bidir).
func (t *serverTest) sends(i int) bool {
	if t.p.Bidirectional {
		return i >= int(t.p.Parallel)
	}
	return bool(t.p.Reverse)
}

// streams is the number of the test's streams, both directions.
func (t *serverTest) streams() int {
	if t.p.Bidirectional {
		return 2 * int(t.p.Parallel)
	}
	return int(t.p.Parallel)
}

// takeSlot admits the test (the parameters are valid) and makes its
// session.
func (t *serverTest) takeSlot() error {
	s, p, res, pc := t.s, &t.p, t.res, t.pc
	if !pc.identified() {
		if pc.shed() {
			return errShed
		}
		return t.refuse(114, fmt.Errorf("read parameters: not within %v (the server's handshake timeout)", s.cfg.HandshakeTimeout))
	}
	adm, code, err := s.admit(res.Peer.Addr(), p, footprint(p, t.backend, t.rxBackend, t.sends, t.streams()))
	var busy busyError
	switch {
	case errors.As(err, &busy):
		t.told = true
		s.refused(t.ctrl, string(busy))
		return fmt.Errorf("%w: %v", errNotAdmitted, err)
	case err != nil:
		return t.refuse(code, err)
	}
	t.onEnd(adm.release)
	t.adm = adm
	res.Backend = t.backend.Name()
	res.SockBufSize = int(p.Window)

	sess := &session{res: res, backend: t.backend, rxBackend: t.rxBackend, rxAuto: t.rxBackend == nil, interval: s.cfg.Interval, omit: time.Duration(p.Omit) * time.Second,
		udp: bool(p.UDP), udp64: p.UDPCounters64 != 0, rate: float64(p.Bandwidth), burst: int(p.Burst), onInterval: s.cfg.OnInterval}
	if p.ByteLimit() == 0 && p.Time > 0 {
		sess.sendFor = time.Duration(p.Time+p.Omit) * time.Second
	}
	t.sess = sess
	t.onEnd(sess.closeAll)
	return nil
}

// createStreams takes the client's streams and sets their options; the
// test is then ready to start.
func (t *serverTest) createStreams() (wire.State, error) {
	s, p, res, sess := t.s, &t.p, t.res, t.sess
	var socks []*engine.Socket
	var err error
	t.set(wire.CreateStreams)
	if p.UDP {
		var stop func()
		socks, stop, err = s.udpStreams(t.ctx, t.ctrl, p, res.Peer.Addr(), t.streams(), t.sends)
		t.stopAnswers = stop
		t.onEnd(stop)
	} else {
		socks, err = s.tcpStreams(t.ctx, t.ctrl, t.cookie, t.streams())
	}
	for i, sock := range socks {
		sess.streams = append(sess.streams, newStream(wire.StreamID(i), sock, t.sends(i)))
		t.tracef("stream %d: local %v, remote %v, %s", wire.StreamID(i), sock.LocalAddr(), sock.RemoteAddr(), map[bool]string{true: "sends", false: "receives"}[t.sends(i)])
	}
	if err != nil {
		return 0, t.streamsFailed(err)
	}
	s.applyPeerPayload(sess, p, res)
	sess.announce()
	if err := s.setOptions(sess, p, res); err != nil {
		return 0, t.refuse(124, err)
	}
	res.Backend = sess.backendWords()
	t.tracef("backend: %s", res.Backend)
	if s.cfg.OnStart != nil {
		s.cfg.OnStart(res)
	}
	t.readDeadline(time.Time{})
	t.stopWatch()
	sess.prepare(t.ctx, p.BlockLen())
	return wire.TestStart, nil
}

// streamsFailed tells the client why its streams did not connect
// (iperf3's IESTREAMCONNECT unless the error has a code of its own).
func (t *serverTest) streamsFailed(err error) error {
	if t.ctx.Err() != nil {
		return err
	}
	code := int32(204) // IESTREAMCONNECT
	var se setupError
	if errors.As(err, &se) {
		code = se.code
	}
	if code != 0 {
		return t.refuse(code, err)
	}
	return err
}

// testStart tells the client the streams are ready.
func (t *serverTest) testStart() (wire.State, error) {
	t.set(wire.TestStart)
	if err := wire.WriteState(t.ctrl, wire.TestStart); err != nil {
		return 0, fmt.Errorf("send TEST_START: %w", err)
	}
	return wire.TestRunning, nil
}

// testRunning starts the data and waits for the client's TEST_END, or
// for the server to end the test (--rcv-timeout, --server-bitrate-limit,
// shutting down).
func (t *serverTest) testRunning() (wire.State, error) {
	s, sess, p := t.s, t.sess, &t.p
	t.cpu = startCPU()
	t.watchNIC()
	sess.sys = p.Blast != nil && p.Blast.Sys
	dataCtx, cancelData := context.WithCancel(context.Background())
	t.onEnd(cancelData)
	// The test's time starts before the client may send: a receiver
	// whose start was taken after TEST_RUNNING, late on a busy host,
	// counted what had waited in its socket in a second too short (34
	// Mbit/s through a 20 Mbit/s shaper in make test).
	sess.startAt = time.Now()
	t.set(wire.TestRunning)
	if err := wire.WriteState(t.ctrl, wire.TestRunning); err != nil {
		return 0, fmt.Errorf("send TEST_RUNNING: %w", err)
	}
	if t.stopAnswers != nil {
		t.stopAnswers() // before the flows read their sockets
	}
	sess.run(dataCtx, p.BlockLen(), serverSendLimit(p))
	countDone := make(chan struct{})
	t.onEnd(func() { close(countDone) })
	sess.watchCount(p.ByteLimit(), countDone)
	t.grace = time.Duration(p.Time+p.Omit)*time.Second + testGrace
	if p.Time > 0 {
		// A client that vanishes without closing must not hold the slot
		// for ever: iperf3 gives it 40 s of grace after the test time.
		t.readDeadline(time.Now().Add(t.grace))
	}
	if t.mt != nil {
		s.meter.running(t.mt, func() int64 { return sess.total(true) + sess.total(false) })
	}
	m, pending, abort := t.wait()
	sess.sendEnd = time.Now()
	sess.stopTicker()
	if abort == nil && m.err == nil && m.s == wire.TestEnd {
		sess.stop(true)
		t.res.CPU = t.cpu.read()
		return wire.TestEnd, nil
	}
	return 0, t.ended(m, pending, abort)
}

// watchNIC starts the watch of the interface the streams use, if the
// server watches NICs; a watch that fails is a note.
func (t *serverTest) watchNIC() {
	sess := t.sess
	if t.s.cfg.NoNIC || len(sess.streams) == 0 {
		return
	}
	nic, err := watchNIC(sess.streams[0].remote.Addr())
	if err != nil {
		t.res.Notes = append(t.res.Notes, "no NIC report: "+err.Error())
	}
	t.onEnd(nic.close)
	if nic != nil {
		sess.iface = nic.iface
	}
	t.nic = nic
}

// ended ends a test that ended otherwise than by the client's TEST_END:
// it tells the client first, if the server ends it, and lets it close
// the control connection (iperf3's client then prints what it measured)
// before its streams fail. It returns why the test ended.
func (t *serverTest) ended(m stateMsg, pending <-chan stateMsg, abort *testAbort) error {
	sess, p := t.sess, &t.p
	shutdown := abort == nil && t.ctx.Err() != nil
	told := true
	switch {
	case abort != nil:
		t.refuse(abort.code, abort.err)
	case shutdown:
		t.terminate()
	case isTimeout(m.err) && p.Time > 0:
		t.refuse(wire.IEDurationExpired, errors.New("server test duration expired"))
	default:
		told = false
	}
	if told && pending != nil {
		t.unwatch()
		t.ctrl.SetReadDeadline(time.Now().Add(clientGoneWait))
		<-pending
	}
	sess.stop(true)
	t.res.CPU = t.cpu.read()
	sess.stop(false)
	sess.finish(time.Now())
	switch {
	case abort != nil:
		return abort.err
	case shutdown:
		return ErrShutdown
	case m.err == nil && m.s == wire.ClientTerminate:
		t.received(wire.ClientTerminate)
		return errors.New("the client has terminated the test")
	case m.err != nil && (errors.Is(m.err, io.EOF) || errors.Is(m.err, syscall.ECONNRESET)):
		return errors.New("the client is gone (it closed the control connection mid-test)")
	case isTimeout(m.err) && p.Time > 0:
		return fmt.Errorf("the client did not end its %d s test within %v (iperf3's server test duration expired)", p.Time+p.Omit, t.grace)
	case m.err != nil:
		return fmt.Errorf("control connection: %w", m.err)
	}
	return fmt.Errorf("unexpected %v from the client", m.s)
}

// testEnd counts what the client's streams still had on their way, and
// closes them.
func (t *serverTest) testEnd() (wire.State, error) {
	t.received(wire.TestEnd)
	t.results = true
	// From here the results reach the client even if the server is
	// shutting down.
	t.unwatch()
	t.sess.finish(t.sess.drain(20*time.Millisecond, time.Second))
	t.sess.closeAll()
	stopNIC(t.res, t.nic)
	return wire.ExchangeResults, nil
}

// exchangeResults reads the client's results and sends the server's
// (with its report, if the client asked for it), then gives the slot
// back.
func (t *serverTest) exchangeResults() (wire.State, error) {
	s, sess, res, ctrl := t.s, t.sess, t.res, t.ctrl
	ctrl.SetDeadline(time.Now().Add(30 * time.Second))
	t.set(wire.ExchangeResults)
	if err := wire.WriteState(ctrl, wire.ExchangeResults); err != nil {
		return 0, fmt.Errorf("send EXCHANGE_RESULTS: %w", err)
	}
	b, err := wire.ReadFrame(ctrl, MaxPeerResultsJSON)
	if err != nil {
		return 0, fmt.Errorf("read the client's results: %w", err)
	}
	t.tracef("get_results: %s", b)
	pr, err := wire.DecodeResults(b)
	if err != nil {
		return 0, fmt.Errorf("the client's results: %w", err)
	}
	if err := sess.merge(pr); err != nil {
		return 0, err
	}
	res.Diagnose()
	res.Backend = sess.backendWords()
	mine := sess.results(res.CPU, res.Congestion, res.Backend)
	if len(res.Notes) > 0 {
		mine.Blast.Note = res.Notes[0]
	}
	if t.p.GetServerOutput != 0 {
		if s.cfg.JSONOutput {
			if j, err := render.JSONBytes(res); err == nil {
				mine.ServerOutputJSON = j
			}
		} else {
			mine.ServerOutputText = render.TextString(res)
		}
	}
	if s.cfg.Trace != nil {
		if j, err := json.Marshal(mine); err == nil {
			t.tracef("send_results: %s", j)
		}
	}
	if err := wire.WriteJSON(ctrl, mine); err != nil {
		return 0, fmt.Errorf("send results: %w", err)
	}
	t.adm.release() // the data streams are closed and the results sent
	return wire.DisplayResults, nil
}

// displayResults tells the client to print its results, and takes its
// IPERF_DONE (iperf3 clients answer it; a missing answer is no failure).
func (t *serverTest) displayResults() (wire.State, error) {
	t.set(wire.DisplayResults)
	if err := wire.WriteState(t.ctrl, wire.DisplayResults); err != nil {
		return 0, fmt.Errorf("send DISPLAY_RESULTS: %w", err)
	}
	t.ctrl.SetReadDeadline(time.Now().Add(5 * time.Second))
	if st, err := wire.ReadState(t.ctrl); err == nil {
		t.received(st)
	}
	return wire.IperfDone, nil
}
