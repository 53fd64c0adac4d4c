package control

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/internal/clock"
)

// idleWatch ends a test whose receiving streams got nothing for the
// receive timeout (--rcv-timeout, iperf3's 120 s by default), as iperf3's
// client does when it receives; and, whatever the direction, a test in
// which no byte moved either way for as long (the server stopped reading
// and sending: a test without a time limit would wait for ever).
type idleWatch struct {
	// tick is armed again after each check (every), not a ticker: a
	// test on a fake clock sees each check's timer armed before it moves
	// the clock.
	tick   clock.Timer
	every  time.Duration
	cl     *client
	last   int64 // received
	sent   int64
	lastAt time.Time
	moved  int64 // received and sent
	// movedAt is when moved last grew; stall how long it may not.
	movedAt time.Time
	stall   time.Duration
	timeout time.Duration // receive timeout (0: none)
	// start is the test's; recv and send find the longest stall of the
	// receivers' count and of the senders'.
	start      time.Time
	recv, send stallTrack
}

// stallTrack finds a count's longest stall: from the last check that saw
// it grow to the next one that did, with at least one check between that
// saw it stand still (a watch that itself ran late sees none).
type stallTrack struct {
	grew    bool      // it has grown once
	at      time.Time // the last check that saw it grow
	still   int       // checks since then that saw it stand still
	longest result.Stall
}

func (s *stallTrack) see(grew bool, now, start time.Time) {
	if !grew {
		if s.grew {
			s.still++
		}
		return
	}
	if d := now.Sub(s.at).Seconds(); s.grew && s.still > 0 && d > s.longest.Seconds {
		s.longest = result.Stall{Start: s.at.Sub(start).Seconds(), Seconds: d}
	}
	s.grew, s.at, s.still = true, now, 0
}

// timeUp closes the count's last stall when a time-limited test's time
// ran out while it stood still: the direction was due to move to the end,
// so a stall to the end is one (an outage that outlasts the test). A
// count that ends with a byte count or a file is not due to move after.
func (s *stallTrack) timeUp(now, start time.Time) {
	if d := now.Sub(s.at).Seconds(); s.grew && s.still > 0 && d > s.longest.Seconds {
		s.longest = result.Stall{Start: s.at.Sub(start).Seconds(), Seconds: d}
	}
}

// idleWatch starts the watch.
func (cl *client) idleWatch() *idleWatch {
	clk := clock.Or(cl.cfg.Clock)
	now := clk.Now()
	w := &idleWatch{cl: cl, timeout: cl.cfg.RcvTimeout, lastAt: now, movedAt: now, start: now}
	hasRecv := false
	cl.sess.each(false, func(*stream) { hasRecv = true })
	if !hasRecv {
		w.timeout = 0
	}
	stall := cl.cfg.StallTimeout
	switch {
	case stall > 0:
	case cl.cfg.RcvTimeout > 0:
		stall = cl.cfg.RcvTimeout
	default:
		stall = DefaultRcvTimeout
	}
	w.stall = stallLimit(stall, cl.res.Params.BlockLen(), cl.cfg.Rate)
	period := w.stall
	if w.timeout > 0 {
		period = min(period, w.timeout)
	}
	w.every = min(period/4, 100*time.Millisecond)
	w.tick = clk.NewTimer(w.every)
	return w
}

// stalls are the longest stalls the watch saw, the senders' and the
// receivers'.
func (w *idleWatch) stalls() (send, recv result.Stall) { return w.send.longest, w.recv.longest }

// check looks at the counts at now: ErrNoData once the receivers' has not
// grown for the receive timeout, or neither direction's for the stall
// limit.
func (w *idleWatch) check(now time.Time) error {
	got, sent := w.cl.sess.total(false), w.cl.sess.total(true)
	w.recv.see(got != w.last, now, w.start)
	w.send.see(sent != w.sent, now, w.start)
	w.sent = sent
	if got != w.last {
		w.last, w.lastAt = got, now
	}
	if m := got + sent; m != w.moved {
		w.moved, w.movedAt = m, now
	}
	switch {
	case w.timeout > 0 && now.Sub(w.lastAt) >= w.timeout:
		return fmt.Errorf("%w: nothing arrived for %d ms (--rcv-timeout)", ErrNoData, w.timeout.Milliseconds())
	case now.Sub(w.movedAt) >= w.stall:
		return fmt.Errorf("%w: the server neither took nor sent a byte for %v: it stalled, or the path is down",
			ErrNoData, now.Sub(w.movedAt).Round(time.Millisecond))
	}
	return nil
}

// sendersDone reports whether every sending stream of the client has
// ended (its -F file is sent).
func (cl *client) sendersDone() bool {
	for _, st := range cl.sess.streams {
		if !st.sender {
			continue
		}
		select {
		case <-st.done:
		default:
			return false
		}
	}
	return true
}

// DefaultStateTimeout is how long a client waits for each message of the
// server while a test is set up (three times that while it ends).
const DefaultStateTimeout = 10 * time.Second

// ErrInterrupted ends a test the client was told to stop (Ctrl-C): what
// was measured so far is in its Result.
var ErrInterrupted = errors.New("interrupted")

// deadlinePassed says whether err is a read deadline of ours passing (a
// server that stayed silent), not the kernel giving the connection up
// (ETIMEDOUT: TCP_USER_TIMEOUT, keepalive), which says more.
func deadlinePassed(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// stalled is the error of a server that stopped answering after what.
func stalled(after string, wait time.Duration) error {
	return fmt.Errorf("the server stopped answering after %s for %v: it stalled, or the path to it is down", after, wait)
}

// readDeadline sets the control connection's read deadline, unless the
// test is being interrupted (then a read must not block).
func (cl *client) readDeadline(ctx context.Context, d time.Time) {
	cl.ctrl.SetReadDeadline(d)
	if ctx.Err() != nil {
		cl.ctrl.SetReadDeadline(time.Unix(1, 0))
	}
}

// stallLimit is how long a test may move no byte either way before it is
// taken for stalled: limit, or longer for a paced sender (rate bits/s,
// 0: unpaced), which may wait two of its buffers' time for the next one
// (-b 1k with 128 KiB blocks).
func stallLimit(limit time.Duration, blockLen int, rate float64) time.Duration {
	if rate <= 0 {
		return limit
	}
	return max(limit, 2*time.Duration(float64(blockLen)*8/rate*float64(time.Second)))
}
