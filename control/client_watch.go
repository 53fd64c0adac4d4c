package control

import (
	"fmt"
	"time"
)

// idleWatch ends a test whose receiving streams got nothing for the
// receive timeout (--rcv-timeout, iperf3's 120 s by default), as iperf3's
// client does when it receives.
type idleWatch struct {
	tick    <-chan time.Time
	stop    func()
	cl      *client
	last    int64
	lastAt  time.Time
	timeout time.Duration
}

// idleWatch starts the watch; its tick is nil (never fires) when the
// client does not receive.
func (cl *client) idleWatch() *idleWatch {
	w := &idleWatch{cl: cl, stop: func() {}, timeout: cl.cfg.RcvTimeout, lastAt: time.Now()}
	hasRecv := false
	cl.sess.each(false, func(*stream) { hasRecv = true })
	if !hasRecv || w.timeout <= 0 {
		return w
	}
	t := time.NewTicker(min(w.timeout/4, 100*time.Millisecond))
	w.tick, w.stop = t.C, t.Stop
	return w
}

// check looks at the receivers' count at now: ErrNoData once it has not
// grown for the timeout.
func (w *idleWatch) check(now time.Time) error {
	got := w.cl.sess.total(false)
	if got != w.last {
		w.last, w.lastAt = got, now
		return nil
	}
	if now.Sub(w.lastAt) >= w.timeout {
		return fmt.Errorf("%w: nothing arrived for %d ms (--rcv-timeout)", ErrNoData, w.timeout.Milliseconds())
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
