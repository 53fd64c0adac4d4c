package clock

import (
	"slices"
	"testing"
	"time"
)

// at is a time d after Epoch.
func at(d time.Duration) time.Time { return Epoch.Add(d) }

// recv takes what c holds now, if anything.
func recv(c <-chan time.Time) (time.Time, bool) {
	select {
	case v := <-c:
		return v, true
	default:
		return time.Time{}, false
	}
}

// wait fails the test when ch is not closed within a minute of real
// time (a bound for a failure, not a timing: it is closed at once).
func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("waited a minute for %s", what)
	}
}

// TestTimersFireInOrder: Advance fires every timer that falls due, each
// at its own due time (the time it sends, and the Fake's time when it
// fires), in order; later ones stay armed.
func TestTimersFireInOrder(t *testing.T) {
	f := NewFake()
	timers := map[time.Duration]Timer{}
	for _, d := range []time.Duration{30, 10, 20, 40} {
		timers[d*time.Millisecond] = f.NewTimer(d * time.Millisecond)
	}
	// An AfterFunc runs in a goroutine of its own once it falls due.
	ran := make(chan struct{})
	f.AfterFunc(15*time.Millisecond, func() { close(ran) })
	if n := f.Timers(); n != 5 {
		t.Fatalf("%d armed, want 5", n)
	}
	if next, ok := f.Next(); !ok || !next.Equal(at(10*time.Millisecond)) {
		t.Errorf("Next = %v, %v; want 10ms after the epoch", next, ok)
	}
	f.Advance(35 * time.Millisecond)
	wait(t, ran, "the AfterFunc due at 15ms to run")
	for _, d := range []time.Duration{10, 20, 30} {
		v, ok := recv(timers[d*time.Millisecond].C())
		if !ok || !v.Equal(at(d*time.Millisecond)) {
			t.Errorf("timer of %dms: got %v, %v; want its due time", d, v, ok)
		}
	}
	if _, ok := recv(timers[40*time.Millisecond].C()); ok {
		t.Error("the 40ms timer fired at 35ms")
	}
	if e := f.Elapsed(); e != 35*time.Millisecond {
		t.Errorf("Elapsed = %v, want 35ms", e)
	}
	if n := f.Timers(); n != 1 {
		t.Errorf("%d armed after 35ms, want 1 (the 40ms timer)", n)
	}
	if next, _ := f.Next(); !next.Equal(at(40 * time.Millisecond)) {
		t.Errorf("Next = %v, want 40ms after the epoch", next)
	}
	f.Set(at(time.Second))
	if v, ok := recv(timers[40*time.Millisecond].C()); !ok || !v.Equal(at(40*time.Millisecond)) {
		t.Errorf("40ms timer after Set to 1s: %v, %v; want its due time", v, ok)
	}
	if _, ok := f.Next(); ok || f.Timers() != 0 {
		t.Errorf("timers still armed after all fired: %d", f.Timers())
	}
	f.Set(at(0)) // never back
	if !f.Now().Equal(at(time.Second)) {
		t.Errorf("Set back moved the Fake to %v", f.Now())
	}
}

// TestTimerDueOrder: two timers due at the same time both fire, with
// that time.
func TestTimerDueOrder(t *testing.T) {
	f := NewFake()
	a := f.NewTimer(10 * time.Millisecond)
	b := f.NewTimer(10 * time.Millisecond) // the same due time
	f.Advance(10 * time.Millisecond)
	va, oka := recv(a.C())
	vb, okb := recv(b.C())
	if !oka || !okb || !va.Equal(at(10*time.Millisecond)) || !vb.Equal(va) {
		t.Errorf("two timers due at 10ms: %v %v, %v %v", va, oka, vb, okb)
	}
}

// TestTickerDropsUnreadTicks: a ticker sends every period; a tick the
// reader has not taken is dropped (the first one unread stays).
func TestTickerDropsUnreadTicks(t *testing.T) {
	f := NewFake()
	tk := f.NewTicker(10 * time.Millisecond)
	f.Advance(35 * time.Millisecond) // ticks at 10, 20, 30: 20 and 30 dropped
	if v, ok := recv(tk.C()); !ok || !v.Equal(at(10*time.Millisecond)) {
		t.Errorf("first read: %v, %v; want the 10ms tick", v, ok)
	}
	if v, ok := recv(tk.C()); ok {
		t.Errorf("a second tick was kept: %v", v)
	}
	f.Advance(5 * time.Millisecond)
	if v, ok := recv(tk.C()); !ok || !v.Equal(at(40*time.Millisecond)) {
		t.Errorf("at 40ms: %v, %v; want the 40ms tick", v, ok)
	}
	tk.Reset(100 * time.Millisecond) // from 40 ms: next at 140
	f.Advance(99 * time.Millisecond)
	if v, ok := recv(tk.C()); ok {
		t.Errorf("tick at %v, before the reset period ran out", v)
	}
	f.Advance(time.Millisecond)
	if v, ok := recv(tk.C()); !ok || !v.Equal(at(140*time.Millisecond)) {
		t.Errorf("after Reset to 100ms: %v, %v; want the 140ms tick", v, ok)
	}
	f.Advance(100 * time.Millisecond) // a tick at 240, unread
	tk.Stop()
	if v, ok := recv(tk.C()); ok {
		t.Errorf("a stopped ticker still had the tick of %v", v)
	}
	f.Advance(time.Second)
	if _, ok := recv(tk.C()); ok || f.Timers() != 0 {
		t.Errorf("a stopped ticker ticked (%d armed)", f.Timers())
	}
}

// TestStopReset: Stop says whether it stopped an armed timer and leaves
// no time in C; Reset re-arms from now.
func TestStopReset(t *testing.T) {
	f := NewFake()
	tm := f.NewTimer(10 * time.Millisecond)
	if !tm.Stop() {
		t.Error("Stop of an armed timer: false")
	}
	if tm.Stop() {
		t.Error("second Stop: true")
	}
	f.Advance(20 * time.Millisecond)
	if _, ok := recv(tm.C()); ok {
		t.Error("a stopped timer fired")
	}
	if tm.Reset(10 * time.Millisecond) { // at 20: due at 30
		t.Error("Reset of a stopped timer: true, want false")
	}
	f.Advance(9 * time.Millisecond)
	if tm.Reset(10*time.Millisecond) == false { // at 29: due at 39
		t.Error("Reset of an armed timer: false, want true")
	}
	f.Advance(9 * time.Millisecond)
	if _, ok := recv(tm.C()); ok {
		t.Error("fired at its old due time after Reset")
	}
	f.Advance(time.Millisecond)
	if v, ok := recv(tm.C()); !ok || !v.Equal(at(39*time.Millisecond)) {
		t.Errorf("after Reset: %v, %v; want 39ms", v, ok)
	}
	// Fired and unread: Stop says false, and takes the stale time.
	f.Advance(0)
	tm.Reset(time.Millisecond)
	f.Advance(time.Millisecond)
	if tm.Stop() {
		t.Error("Stop of a fired timer: true")
	}
	if v, ok := recv(tm.C()); ok {
		t.Errorf("a stale time %v after Stop", v)
	}
	// Fired and unread, then Reset: only the new time comes.
	tm.Reset(time.Millisecond)
	f.Advance(time.Millisecond)
	tm.Reset(5 * time.Millisecond)
	if v, ok := recv(tm.C()); ok {
		t.Errorf("a stale time %v after Reset", v)
	}
}

// TestDueNow: a timer of d <= 0 fires at once, without being armed, as a
// real one does; an AfterFunc of 0 runs.
func TestDueNow(t *testing.T) {
	f := NewFake()
	for _, d := range []time.Duration{0, -time.Second} {
		if v, ok := recv(f.NewTimer(d).C()); !ok || !v.Equal(Epoch) {
			t.Errorf("NewTimer(%v): %v, %v; want the time now, at once", d, v, ok)
		}
		select {
		case <-f.After(d):
		default:
			t.Errorf("After(%v) did not fire at once", d)
		}
	}
	ran := make(chan struct{})
	f.AfterFunc(0, func() { close(ran) })
	wait(t, ran, "AfterFunc(0) to run")
	if n := f.Timers(); n != 0 {
		t.Errorf("%d armed, want none", n)
	}
	tm := f.NewTimer(time.Second)
	tm.Reset(0)
	if _, ok := recv(tm.C()); !ok {
		t.Error("Reset(0) did not fire at once")
	}
}

// TestArmed: Armed(n) is closed once n timers are armed, at once when
// they are.
func TestArmed(t *testing.T) {
	f := NewFake()
	two := f.Armed(2)
	f.NewTimer(time.Second)
	select {
	case <-two:
		t.Fatal("Armed(2) closed with one timer")
	default:
	}
	f.NewTicker(time.Second)
	select {
	case <-two:
	default:
		t.Fatal("Armed(2) still open with two")
	}
	select {
	case <-f.Armed(1):
	default:
		t.Fatal("Armed(1) with two armed is not closed at once")
	}
	// A timer armed from another goroutine, as code under test does.
	three := f.Armed(3)
	go f.NewTimer(time.Minute)
	wait(t, three, "Armed(3) to close")
}

// TestSleep: Sleep moves the Fake by what it was asked plus what OnSleep
// adds (a late wakeup), fires what falls due on the way, records each
// duration asked, and returns at once.
func TestSleep(t *testing.T) {
	f := NewFake()
	tm := f.NewTimer(12 * time.Millisecond)
	f.OnSleep = func(d time.Duration) time.Duration { return d / 2 }
	f.Sleep(10 * time.Millisecond) // to 15 ms
	if e := f.Elapsed(); e != 15*time.Millisecond {
		t.Errorf("after Sleep(10ms), 5ms late: at %v, want 15ms", e)
	}
	if v, ok := recv(tm.C()); !ok || !v.Equal(at(12*time.Millisecond)) {
		t.Errorf("timer due at 12ms during the sleep: %v, %v", v, ok)
	}
	f.OnSleep = nil
	f.Sleep(time.Millisecond)
	f.Sleep(-time.Millisecond) // not back
	if e := f.Elapsed(); e != 16*time.Millisecond {
		t.Errorf("at %v, want 16ms", e)
	}
	if want := []time.Duration{10 * time.Millisecond, time.Millisecond, -time.Millisecond}; !slices.Equal(f.Slept, want) {
		t.Errorf("Slept = %v, want %v", f.Slept, want)
	}
	if d := f.Since(Epoch); d != 16*time.Millisecond {
		t.Errorf("Since(Epoch) = %v", d)
	}
	if d := f.Until(at(20 * time.Millisecond)); d != 4*time.Millisecond {
		t.Errorf("Until(20ms) = %v, want 4ms", d)
	}
}

// TestOr: a nil Clock is the real one.
func TestOr(t *testing.T) {
	if Or(nil) != Real {
		t.Error("Or(nil) is not Real")
	}
	f := NewFake()
	if Or(f) != Clock(f) {
		t.Error("Or(f) is not f")
	}
}
