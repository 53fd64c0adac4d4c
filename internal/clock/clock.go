// Package clock makes time an input. Code that paces, ticks, times out or
// retries takes a Clock; production passes Real, and tests pass a *Fake,
// whose time moves only when the test moves it, so that a schedule can be
// asserted exactly and passes the same on an idle host and on a saturated
// one.
//
// A Fake moves in two ways. Advance (or Set) moves it from the test's
// goroutine and fires every timer, ticker and AfterFunc that falls due, in
// order of their due times. Sleep, called by the code under test, moves it
// by the time slept at once (plus whatever the test's OnSleep hook adds, to
// play a late wakeup): a single goroutine that paces itself with Sleep runs
// through its whole schedule without waiting for anyone.
package clock

import (
	"sync"
	"time"
)

// Clock is where code reads the time, sleeps and arms timers.
type Clock interface {
	Now() time.Time
	Since(t time.Time) time.Duration
	Until(t time.Time) time.Duration
	Sleep(d time.Duration)
	// After fires once, d from now.
	After(d time.Duration) <-chan time.Time
	NewTimer(d time.Duration) Timer
	NewTicker(d time.Duration) Ticker
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a time.Timer of some Clock.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration) bool
}

// Ticker is a time.Ticker of some Clock.
type Ticker interface {
	C() <-chan time.Time
	Stop()
	Reset(d time.Duration)
}

// Real is the system's clock.
var Real Clock = realClock{}

// Or returns c, or Real when c is nil: the zero value of a Config's Clock
// field means the real clock.
func Or(c Clock) Clock {
	if c == nil {
		return Real
	}
	return c
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) Since(t time.Time) time.Duration        { return time.Since(t) }
func (realClock) Until(t time.Time) time.Duration        { return time.Until(t) }
func (realClock) Sleep(d time.Duration)                  { time.Sleep(d) }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (realClock) NewTimer(d time.Duration) Timer         { return realTimer{time.NewTimer(d)} }
func (realClock) NewTicker(d time.Duration) Ticker       { return realTicker{time.NewTicker(d)} }
func (realClock) AfterFunc(d time.Duration, f func()) Timer {
	return realTimer{time.AfterFunc(d, f)}
}

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time   { return r.t.C }
func (r realTicker) Stop()                 { r.t.Stop() }
func (r realTicker) Reset(d time.Duration) { r.t.Reset(d) }

// Fake is a Clock whose time moves only when told. The zero value is not
// usable; make one with NewFake.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers []*fakeTimer
	// waiters are closed when the number of armed timers reaches their n.
	waiters []waiter

	// OnSleep, when set, is called with each Sleep's duration and returns
	// how much longer the sleeper really slept (a late wakeup). It is
	// called without the Fake's lock held.
	OnSleep func(d time.Duration) time.Duration
	// Slept records every Sleep's duration, in order.
	Slept []time.Duration
}

type waiter struct {
	n  int
	ch chan struct{}
}

// Epoch is where every NewFake starts: a fixed instant, so that printed
// times are the same in every run.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// NewFake returns a Fake at Epoch.
func NewFake() *Fake { return &Fake{now: Epoch} }

// Now returns the Fake's time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Since is Now().Sub(t).
func (f *Fake) Since(t time.Time) time.Duration { return f.Now().Sub(t) }

// Until is t.Sub(Now()).
func (f *Fake) Until(t time.Time) time.Duration { return t.Sub(f.Now()) }

// Elapsed is how far the Fake moved from Epoch.
func (f *Fake) Elapsed() time.Duration { return f.Since(Epoch) }

// Sleep moves the Fake by d (and by what OnSleep adds), firing what falls
// due, and returns at once.
func (f *Fake) Sleep(d time.Duration) {
	f.mu.Lock()
	f.Slept = append(f.Slept, d)
	hook := f.OnSleep
	f.mu.Unlock()
	if d < 0 {
		d = 0
	}
	if hook != nil {
		d += hook(d)
	}
	f.Advance(d)
}

// Advance moves the Fake by d, firing every timer that falls due on the
// way, each at its own due time, in order.
func (f *Fake) Advance(d time.Duration) { f.Set(f.Now().Add(d)) }

// Set moves the Fake to t (never back), firing what falls due on the way.
func (f *Fake) Set(t time.Time) {
	for {
		f.mu.Lock()
		next := f.nextDue(t)
		if next == nil {
			if t.After(f.now) {
				f.now = t
			}
			f.mu.Unlock()
			return
		}
		if next.due.After(f.now) {
			f.now = next.due
		}
		next.fireLocked()
		f.mu.Unlock()
	}
}

// nextDue is the armed timer due first at or before t.
func (f *Fake) nextDue(t time.Time) *fakeTimer {
	var best *fakeTimer
	for _, tm := range f.timers {
		if tm.due.After(t) {
			continue
		}
		if best == nil || tm.due.Before(best.due) || (tm.due.Equal(best.due) && tm.seq < best.seq) {
			best = tm
		}
	}
	return best
}

// Timers is how many timers, tickers and AfterFuncs are armed now.
func (f *Fake) Timers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// Next is when the first armed timer falls due, false when none is.
func (f *Fake) Next() (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var best *fakeTimer
	for _, tm := range f.timers {
		if best == nil || tm.due.Before(best.due) {
			best = tm
		}
	}
	if best == nil {
		return time.Time{}, false
	}
	return best.due, true
}

// Armed returns a channel closed once at least n timers are armed: a test
// waits on it (with a bound of its own) until the code under test has
// armed what it will wait on, then advances.
func (f *Fake) Armed(n int) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan struct{})
	if len(f.timers) >= n {
		close(ch)
		return ch
	}
	f.waiters = append(f.waiters, waiter{n, ch})
	return ch
}

func (f *Fake) add(tm *fakeTimer) {
	f.seq++
	tm.seq = f.seq
	f.timers = append(f.timers, tm)
	kept := f.waiters[:0]
	for _, w := range f.waiters {
		if len(f.timers) >= w.n {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	f.waiters = kept
}

func (f *Fake) remove(tm *fakeTimer) bool {
	for i, t := range f.timers {
		if t == tm {
			f.timers = append(f.timers[:i], f.timers[i+1:]...)
			return true
		}
	}
	return false
}

// After fires once, d from now.
func (f *Fake) After(d time.Duration) <-chan time.Time { return f.NewTimer(d).C() }

// NewTimer arms a timer that sends the time on C when it falls due (at
// once for d <= 0, as time.NewTimer).
func (f *Fake) NewTimer(d time.Duration) Timer {
	tm := &fakeTimer{f: f, ch: make(chan time.Time, 1)}
	f.mu.Lock()
	tm.armLocked(d)
	f.mu.Unlock()
	return tm
}

// AfterFunc arms a timer that calls fn in its own goroutine when it
// falls due (at once for d <= 0).
func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	tm := &fakeTimer{f: f, fn: fn}
	f.mu.Lock()
	tm.armLocked(d)
	f.mu.Unlock()
	return tm
}

// NewTicker arms a ticker that sends on C every d (a tick the reader has
// not taken yet is dropped, as time.Ticker drops it).
func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	tm := &fakeTimer{f: f, ch: make(chan time.Time, 1), period: d}
	f.mu.Lock()
	tm.due = f.now.Add(d)
	f.add(tm)
	f.mu.Unlock()
	return fakeTicker{tm}
}

type fakeTimer struct {
	f      *Fake
	due    time.Time
	seq    uint64
	ch     chan time.Time
	fn     func()
	period time.Duration
}

// armLocked arms the timer tm (not a ticker) d from now; one due now or
// before fires at once, without being armed.
func (tm *fakeTimer) armLocked(d time.Duration) {
	tm.due = tm.f.now.Add(max(d, 0))
	if d <= 0 {
		tm.fireLocked()
		return
	}
	tm.f.add(tm)
}

// fireLocked disarms (or re-arms, a ticker) tm and fires it: sends its
// due time on C (dropped when the last is still unread, as a ticker drops
// it) or starts its func. It runs under the lock, so that Stop and Reset,
// which empty C, leave no stale time in it.
func (tm *fakeTimer) fireLocked() {
	at := tm.due
	if tm.period > 0 {
		tm.due = tm.due.Add(tm.period)
	} else {
		tm.f.remove(tm)
	}
	if tm.fn != nil {
		go tm.fn()
		return
	}
	select {
	case tm.ch <- at:
	default:
	}
}

// drainLocked takes a time sent but not read: after Stop or Reset the
// reader gets none from before (as time.Timer since Go 1.23).
func (tm *fakeTimer) drainLocked() {
	if tm.ch == nil {
		return
	}
	select {
	case <-tm.ch:
	default:
	}
}

func (tm *fakeTimer) C() <-chan time.Time { return tm.ch }

func (tm *fakeTimer) Stop() bool {
	tm.f.mu.Lock()
	defer tm.f.mu.Unlock()
	tm.drainLocked()
	return tm.f.remove(tm)
}

func (tm *fakeTimer) Reset(d time.Duration) bool {
	tm.f.mu.Lock()
	defer tm.f.mu.Unlock()
	tm.drainLocked()
	was := tm.f.remove(tm)
	if tm.period > 0 {
		tm.period = d
		tm.due = tm.f.now.Add(d)
		tm.f.add(tm)
		return was
	}
	tm.armLocked(d)
	return was
}

// fakeTicker is a fakeTimer with a period, seen through Ticker.
type fakeTicker struct{ *fakeTimer }

func (t fakeTicker) Stop() { t.fakeTimer.Stop() }

func (t fakeTicker) Reset(d time.Duration) {
	if d <= 0 {
		panic("clock: non-positive interval for Ticker.Reset")
	}
	t.fakeTimer.Reset(d)
}

var (
	_ Clock = (*Fake)(nil)
	_ Clock = realClock{}
)
