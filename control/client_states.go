package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/internal/clock"
)

// clientSetupStep is what the client does on a state the server sends
// while the test is set up: it returns what the client then waits after
// (for the error of a server that stops answering; "" once the test
// runs), or the error that ended the test.
type clientSetupStep func(cl *client, ctx context.Context) (after string, err error)

// clientSetupSteps are the client's answers to the server's states up
// to TEST_RUNNING, in the order a test takes them.
var clientSetupSteps = map[wire.State]clientSetupStep{
	wire.ParamExchange: (*client).sendParams,     // send the parameters
	wire.CreateStreams: (*client).createStreams,  // connect the data streams
	wire.TestStart:     (*client).testStart,      // the server is ready
	wire.TestRunning:   (*client).testRunningNow, // the test's time starts
}

// clientEndStep is what the client does on a state the server sends once
// the test has ended: done when the test is over.
type clientEndStep func(cl *client, ctx context.Context) (done bool, err error)

// clientEndSteps are the client's answers to the server's states after
// TEST_END.
var clientEndSteps = map[wire.State]clientEndStep{
	wire.ExchangeResults: (*client).exchangeResults, // this side's results for the server's
	wire.DisplayResults:  (*client).displayResults,  // answer IPERF_DONE
	wire.IperfDone:       func(*client, context.Context) (bool, error) { return true, nil },
}

// run connects to the server and runs the test through clientSetupSteps,
// then running.
func (cl *client) run(ctx context.Context) (*result.Result, error) {
	cfg := &cl.cfg
	cl.addr = net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	ctrl, err := cl.dialer().DialContext(ctx, cfg.network(), cl.addr)
	if err != nil {
		return nil, dialError(cl.addr, err)
	}
	cl.ctrl = ctrl
	defer ctrl.Close()
	stopWatch := context.AfterFunc(ctx, func() { ctrl.SetDeadline(time.Unix(1, 0)) })
	defer stopWatch()
	if err := cl.newTest(); err != nil {
		return nil, err
	}
	defer cl.sess.closeAll() // the data streams, on every path (closing twice is harmless)
	if _, err := ctrl.Write(cl.cookie[:]); err != nil {
		return nil, fmt.Errorf("send cookie to %s: %w", cl.addr, err)
	}
	cpu := startCPU()
	if !cfg.NoNIC {
		w, err := watchNIC(cl.res.Peer.Addr())
		if err != nil {
			cl.res.Notes = append(cl.res.Notes, "no NIC report: "+err.Error())
		}
		cl.nic = w
		defer w.close()
		if w != nil {
			cl.sess.iface = w.iface
		}
	}
	if err := cl.setup(ctx); err != nil {
		return nil, err
	}
	return cl.running(ctx, cpu)
}

// newTest makes the test's cookie, parameters, Result and session once
// the control connection is up.
func (cl *client) newTest() error {
	cfg, ctrl := &cl.cfg, cl.ctrl
	cl.cookie = wire.NewCookie()
	mss := ctrlMSS(ctrl)
	blockAuto := cfg.UDP && cfg.BlockLen == 0
	if cfg.UDP && cfg.BlockLen == 0 {
		// iperf3's default: the control connection's MSS, so that a
		// datagram fits a segment of the path.
		cfg.BlockLen = wire.DefaultUDPBlock
		if mss >= wire.MinUDPBlock && mss <= wire.MaxUDPBlock {
			cfg.BlockLen = mss
		}
	}
	cl.params = cfg.params()
	var err error
	if cl.params.AuthToken, err = cfg.Auth.Token(clock.Or(cfg.Clock).Now()); err != nil {
		return err
	}
	res := &result.Result{Role: "client", Version: result.Version, SystemInfo: systemInfo(), Time: time.Now(),
		Host: cfg.Host, Cookie: wire.CookieString(cl.cookie), Params: cl.params, SockBufSize: cfg.Window,
		Backend: cl.backend.Name(), TCPMSSDefault: mss, BlockLenAuto: blockAuto}
	if cfg.GSRO && cfg.UDP && cl.backend.Name() != "mmsg" {
		res.Notes = append(res.Notes, "--gsro: this host has no mmsg backend to send with UDP GSO and receive with GRO; the server was asked to use them")
	}
	if a, ok := ctrl.RemoteAddr().(*net.TCPAddr); ok {
		res.Peer = unmap(a.AddrPort())
	}
	if cfg.FlowLabel > 0 && res.Peer.Addr().Is4() {
		return fmt.Errorf("-L %#x: unable to set IPv6 flow label: the server's address %s is IPv4 (use -6, or its IPv6 address)", cfg.FlowLabel, res.Peer.Addr())
	}
	cl.res = res
	cl.sess = &session{res: res, backend: cl.backend, rxBackend: cl.rxBackend, rxAuto: cfg.RxBackend == "", interval: cfg.Interval, omit: cfg.Omit, onInterval: cfg.OnInterval,
		udp: cfg.UDP, udp64: cfg.UDP64, rate: cfg.Rate, burst: cfg.Burst,
		affinity: cfg.Affinity, endAtStop: true}
	cl.sess.sys = cfg.Sys
	return nil
}

// setup answers the server's states until TEST_RUNNING.
func (cl *client) setup(ctx context.Context) error {
	cfg := &cl.cfg
	after := "the cookie (no PARAM_EXCHANGE)"
	for after != "" {
		cl.readDeadline(ctx, time.Now().Add(cfg.StateTimeout))
		m := <-cl.readState(cl.ctrl)
		if m.err != nil || m.s < 0 {
			switch {
			case ctx.Err() != nil:
				return fmt.Errorf("%w while the test was being set up: nothing was measured", ErrInterrupted)
			case deadlinePassed(m.err):
				return stalled(after, cfg.StateTimeout)
			}
			return peerStateError(m, "setting up the test")
		}
		step, ok := clientSetupSteps[m.s]
		if !ok {
			return peerStateError(m, "setting up the test")
		}
		var err error
		if after, err = step(cl, ctx); err != nil {
			return err
		}
	}
	return nil
}

func (cl *client) sendParams(context.Context) (string, error) {
	cl.debugJSON(1, "send_parameters:", &cl.params)
	if err := wire.WriteJSON(cl.ctrl, &cl.params); err != nil {
		return "", fmt.Errorf("send parameters: %w", err)
	}
	return "the parameters (no CREATE_STREAMS)", nil
}

func (cl *client) createStreams(ctx context.Context) (string, error) {
	if err := cl.connectStreams(ctx, cl.addr); err != nil {
		cl.sess.closeAll()
		if ctx.Err() != nil {
			return "", fmt.Errorf("%w while the streams were connected: nothing was measured", ErrInterrupted)
		}
		return "", err
	}
	if cl.cfg.OnStart != nil {
		cl.cfg.OnStart(cl.res)
	}
	return "its streams were connected (no TEST_START)", nil
}

func (cl *client) testStart(context.Context) (string, error) {
	return "TEST_START (no TEST_RUNNING)", nil
}

// testRunningNow starts the test's time when the server said it may: a
// reverse test's data comes right after, and a start taken later (a busy
// host) would count it in too short a time.
func (cl *client) testRunningNow(ctx context.Context) (string, error) {
	cl.sess.startAt = time.Now()
	cl.readDeadline(ctx, time.Time{})
	return "", nil
}

// running drives the test from TEST_RUNNING to the end.
func (cl *client) running(ctx context.Context, cpu cpuMeter) (*result.Result, error) {
	cfg, sess, res := &cl.cfg, cl.sess, cl.res
	limit := res.Params.ByteLimit()
	dataCtx, cancelData := context.WithCancel(context.Background())
	defer cancelData()
	if limit == 0 && cfg.Duration > 0 {
		sess.sendFor = cfg.Omit + cfg.Duration
	}
	sess.run(dataCtx, res.Params.BlockLen(), senderLimit(limit))
	countDone := make(chan struct{})
	defer close(countDone)
	sess.watchCount(limit, countDone)
	defer sess.closeAll()

	ctrlMsg, fail := cl.waitEnd(ctx, limit)
	sess.stopTicker()
	if fail == nil && cfg.UDP && limit > 0 {
		// The count is in. A UDP server sends until it reads TEST_END
		// (as iperf3's does, so that loss cannot hang a client waiting
		// for the count): what it sent meanwhile is no part of the
		// test, and receivers that read it would count it in the
		// test's time. Stop them now, as iperf3's client stops reading.
		sess.stop(false)
	}
	sess.sendEnd = time.Now()
	sess.stop(true)
	if fail != nil {
		if ctx.Err() != nil || errors.Is(fail, ErrNoData) {
			cl.writeState(wire.ClientTerminate)
		}
		sess.stop(false)
		sess.finish(time.Now())
		res.CPU = cpu.read()
		stopNIC(res, cl.nic)
		return res, fail
	}
	if err := cl.testEnd(ctx, limit, cpu); err != nil {
		return res, err
	}
	return res, cl.ending(ctx, ctrlMsg)
}

// endWait is how long the server may take to answer once the test has
// ended.
func (cl *client) endWait() time.Duration { return 3 * cl.cfg.StateTimeout }

// testEnd waits for the last bytes to be acknowledged, sends TEST_END
// and takes what the streams still have on their way.
func (cl *client) testEnd(ctx context.Context, limit int64, cpu cpuMeter) error {
	cfg, sess, res := &cl.cfg, cl.sess, cl.res
	sess.waitAcked(sess.ackWait())
	if limit > 0 && !(cfg.UDP && !cfg.sends()) {
		// Acknowledged is not yet read: iperf3 stops counting at
		// TEST_END, so give its reader a moment to take the last bytes
		// out of the socket.
		time.Sleep(50 * time.Millisecond)
	}
	res.CPU = cpu.read()
	// From TEST_END on, each answer has a deadline (the read of the next
	// state is pending already: the deadline reaches it).
	cl.after = "TEST_END (no EXCHANGE_RESULTS)"
	cl.readDeadline(ctx, time.Now().Add(cl.endWait()))
	if err := cl.writeState(wire.TestEnd); err != nil {
		sess.stop(false)
		sess.finish(time.Now())
		return fmt.Errorf("send TEST_END: %w", err)
	}
	if cfg.UDP {
		// A UDP stream has no end to read to: take what is on its way
		// until nothing more comes.
		sess.drain(20*time.Millisecond, time.Second)
	} else {
		// The server closes its streams on TEST_END: read to their
		// end, so every byte it sent is counted.
		sess.wait(false, 2*time.Second)
	}
	sess.stop(false)
	sess.finish(time.Now())
	stopNIC(res, cl.nic)
	return nil
}

// ending answers the server's states after TEST_END through
// clientEndSteps, ctrlMsg the read of the first of them.
func (cl *client) ending(ctx context.Context, ctrlMsg <-chan stateMsg) error {
	for {
		var m stateMsg
		select {
		case m = <-ctrlMsg:
		case <-ctx.Done():
			cl.writeState(wire.ClientTerminate)
			return fmt.Errorf("%w while the results were exchanged: these are this side's", ErrInterrupted)
		}
		if m.err != nil || m.s < 0 {
			if deadlinePassed(m.err) && ctx.Err() == nil {
				return stalled(cl.after, cl.endWait())
			}
			return peerStateError(m, "ending the test")
		}
		step, ok := clientEndSteps[m.s]
		if !ok {
			return peerStateError(m, "ending the test")
		}
		done, err := step(cl, ctx)
		if done || err != nil {
			return err
		}
		ctrlMsg = cl.readState(cl.ctrl)
	}
}

// exchangeResults sends this side's results and reads the server's.
func (cl *client) exchangeResults(ctx context.Context) (bool, error) {
	sess, res, ctrl := cl.sess, cl.res, cl.ctrl
	res.Backend = sess.backendWords()
	mine := sess.results(res.CPU, res.Congestion, res.Backend)
	cl.debugJSON(1, "send_results", mine)
	if err := wire.WriteJSON(ctrl, mine); err != nil {
		return false, fmt.Errorf("send results: %w", err)
	}
	cl.readDeadline(ctx, time.Now().Add(cl.endWait()))
	b, err := wire.ReadFrame(ctrl, wire.MaxResultsJSON)
	if err != nil {
		if deadlinePassed(err) && ctx.Err() == nil {
			return false, stalled("the client's results (no results of its own)", cl.endWait())
		}
		return false, fmt.Errorf("read the server's results: %w", err)
	}
	cl.after = "the results (no DISPLAY_RESULTS)"
	cl.readDeadline(ctx, time.Now().Add(cl.endWait()))
	cl.debugJSON(1, "get_results", json.RawMessage(b))
	pr, err := wire.DecodeResults(b)
	if err != nil {
		return false, fmt.Errorf("the server's results: %w", err)
	}
	return false, sess.merge(pr)
}

func (cl *client) displayResults(context.Context) (bool, error) {
	cl.writeState(wire.IperfDone)
	return true, nil
}

// waitEnd waits for the test's end: its time up, its count in, the -F
// file sent; or for a failure (a stall, the server's word, a stream's
// error, the caller's stop). It returns the pending read of the server's
// next state, and the failure.
func (cl *client) waitEnd(ctx context.Context, limit int64) (<-chan stateMsg, error) {
	cfg, sess := &cl.cfg, cl.sess
	var timeUp <-chan time.Time
	if limit == 0 && cfg.Duration > 0 {
		t := time.NewTimer(cfg.Omit + cfg.Duration)
		defer t.Stop()
		timeUp = t.C
	}
	var poll <-chan time.Time
	fileEnds := cl.files != nil && cfg.sends()
	if limit > 0 || fileEnds {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		poll = t.C
	}
	idle := cl.idleWatch()
	streamErr, stopWatch := sess.watchErrors()
	defer stopWatch()
	ctrlMsg := cl.readState(cl.ctrl)

	var fail error
wait:
	for {
		select {
		case <-timeUp:
			break wait
		case <-poll:
			if sess.omitDone() && limit > 0 && cl.bytesDone(limit) {
				break wait
			}
			if fileEnds && cl.sendersDone() {
				break wait // iperf3 ends the test at the end of the -F file
			}
		case now := <-idle.tick.C():
			if fail = idle.check(now); fail != nil {
				break wait
			}
			idle.tick.Reset(idle.every)
		case m := <-ctrlMsg:
			fail = peerStateError(m, "the test was running")
			break wait
		case err := <-streamErr:
			fail = fmt.Errorf("data stream failed (the server may be gone): %w", err)
			break wait
		case <-ctx.Done():
			fail = ErrInterrupted
			break wait
		}
	}
	if fail != nil && ctx.Err() != nil {
		// Told to stop: the control connection's deadline, set by the
		// cancel, may have been read first, but the cause is the stop.
		fail = ErrInterrupted
	}
	cl.stalls(idle, fail == nil && timeUp != nil && limit == 0)
	return ctrlMsg, fail
}

// stalls keeps the longest stalls the idle watch saw in the Result;
// timeUp: the test's time ran out, and a direction that stood still to
// its end stalled there.
func (cl *client) stalls(idle *idleWatch, timeUp bool) {
	idle.tick.Stop()
	if timeUp {
		now := clock.Or(cl.cfg.Clock).Now()
		idle.send.timeUp(now, idle.start)
		idle.recv.timeUp(now, idle.start)
	}
	cl.res.SendStall, cl.res.RecvStall = idle.stalls()
}
