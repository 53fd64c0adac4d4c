package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/internal/clock"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// TestDue checks the pacer's schedule, exactly: when each buffer of a
// flow of 1000-byte buffers at 8 Mbit/s (1 ms a buffer) may leave.
func TestDue(t *testing.T) {
	const bufLen = 1000
	for _, tc := range []struct {
		burst int
		want  []time.Duration // of buffers 0, 1, 2, ..., in ms
	}{
		{0, []time.Duration{0, 1, 2, 3, 4, 5, 6, 7}},
		{1, []time.Duration{0, 1, 2, 3, 4, 5, 6, 7}},
		{3, []time.Duration{0, 0, 0, 3, 3, 3, 6, 6}},
		{4, []time.Duration{0, 0, 0, 0, 4, 4, 4, 4}},
	} {
		s := NewSender(&Flow{Spec: &Spec{Protocol: UDP, BufLen: bufLen, Rate: 8e6, Burst: tc.burst}})
		var got []time.Duration
		for i := range tc.want {
			got = append(got, s.due(int64(i*bufLen))/time.Millisecond)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("burst %d: due times in ms (-want +got):\n%s", tc.burst, diff)
		}
		// The average rate: the millionth buffer is due when the bytes
		// before it are, to the burst.
		const n = 1_000_000
		want := time.Duration(n-n%max(tc.burst, 1)) * time.Millisecond
		if d := s.due(n * bufLen); d != want {
			t.Errorf("burst %d: buffer %d due at %v, want %v", tc.burst, n, d, want)
		}
	}
}

// stampTimes is a Framing that records when each datagram was stamped,
// and writes its number (from 1) into its first 8 bytes.
type stampTimes struct{ at []time.Time }

func (s *stampTimes) Stamp(p []byte, _ time.Duration) {
	s.at = append(s.at, time.Now())
	if len(p) >= 8 {
		binary.BigEndian.PutUint64(p, uint64(len(s.at)))
	}
}

func (s *stampTimes) Receive([]byte, time.Duration) {}

// The tests below run a Sender outside Run, on a fake clock: its sleeps
// move the fake's time at once, so every buffer's time is exact and the
// same on an idle host and a saturated one. Each expected figure is worked
// out from the rules documented on Sender, pace and lagSlack.

// fakeFlow is a flow of spec on a fake clock (not run: its Sender sleeps
// on the fake's time).
func fakeFlow(spec *Spec) (*Flow, *clock.Fake) {
	clk := clock.NewFake()
	return &Flow{Spec: spec, Stats: &Counters{}, Facts: Facts{}, Clock: clk}, clk
}

// ms is a time in milliseconds, fractions allowed (to the nearest
// nanosecond).
func ms(v float64) time.Duration { return time.Duration(math.Round(v * float64(time.Millisecond))) }

// takeAll takes buffers of the spec's length from s until the send is
// over, calling stall(i) after buffer i (0 on) left, and returns when each
// left, as the fake's time since its epoch.
func takeAll(t *testing.T, s *Sender, clk *clock.Fake, stall func(i int)) []time.Duration {
	t.Helper()
	var at []time.Duration
	for i := 0; ; i++ {
		n, err := s.Take(s.f.Spec.BufLen)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return at
		}
		at = append(at, clk.Elapsed())
		if stall != nil {
			stall(i)
		}
	}
}

// schedule is want[k] = f(k) for k in [0, n).
func schedule(n int, f func(k int) time.Duration) []time.Duration {
	v := make([]time.Duration, n)
	for k := range v {
		v[k] = f(k)
	}
	return v
}

// TestPacedSchedule: at 1 Mbit/s, buffers of 1250 bytes (10 ms each)
// leave at exactly k*10 ms, the Sender sleeping 10 ms before each but the
// first, and the send ends when the last went.
func TestPacedSchedule(t *testing.T) {
	const n = 100
	f, clk := fakeFlow(&Spec{Protocol: UDP, BufLen: 1250, Bytes: n * 1250, Rate: 1e6})
	got := takeAll(t, NewSender(f), clk, nil)
	if diff := cmp.Diff(schedule(n, func(k int) time.Duration { return time.Duration(k) * 10 * time.Millisecond }), got); diff != "" {
		t.Errorf("when each buffer left (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(schedule(n-1, func(int) time.Duration { return 10 * time.Millisecond }), clk.Slept); diff != "" {
		t.Errorf("sleeps (-want +got):\n%s", diff)
	}
	if e := clk.Elapsed(); e != 990*time.Millisecond {
		t.Errorf("the send ended at %v, want 990ms (when the last buffer left)", e)
	}
}

// TestPacedNext: Next paces as Take does, and stamps each datagram once
// it is due (the Framing sees the fake's time at k*10 ms).
func TestPacedNext(t *testing.T) {
	const n = 5
	fr := &clockStamps{}
	f, clk := fakeFlow(&Spec{Protocol: UDP, BufLen: 1250, Bytes: n * 1250, Rate: 1e6, Framing: fr})
	fr.clk = clk
	s := NewSender(f)
	buf := make([]byte, 1250)
	for {
		p, err := s.Next(buf)
		if err != nil {
			t.Fatal(err)
		}
		if len(p) == 0 {
			break
		}
	}
	if diff := cmp.Diff(schedule(n, func(k int) time.Duration { return time.Duration(k) * 10 * time.Millisecond }), fr.at); diff != "" {
		t.Errorf("when each datagram was stamped (-want +got):\n%s", diff)
	}
}

// clockStamps is a Framing that records the fake's time of each Stamp.
type clockStamps struct {
	clk *clock.Fake
	at  []time.Duration
}

func (c *clockStamps) Stamp([]byte, time.Duration)   { c.at = append(c.at, c.clk.Elapsed()) }
func (c *clockStamps) Receive([]byte, time.Duration) {}

// TestBurstSchedule: with Burst 4 at 1 Mbit/s of 1250-byte buffers, a
// burst (40 ms of bytes) leaves back to back when its first buffer is
// due: at 0, 40, 80 ms, with one sleep of 40 ms between bursts.
func TestBurstSchedule(t *testing.T) {
	f, clk := fakeFlow(&Spec{Protocol: UDP, BufLen: 1250, Bytes: 12 * 1250, Rate: 1e6, Burst: 4})
	got := takeAll(t, NewSender(f), clk, nil)
	want := []time.Duration{0, 0, 0, 0, ms(40), ms(40), ms(40), ms(40), ms(80), ms(80), ms(80), ms(80)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("when each buffer left (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]time.Duration{ms(40), ms(40)}, clk.Slept); diff != "" {
		t.Errorf("sleeps (-want +got):\n%s", diff)
	}
}

// TestStallCatchUp checks the rule for a sender held up after buffer 9,
// at 10 Mbit/s of 1250-byte buffers (1 ms each): buffer k is due at k ms.
func TestStallCatchUp(t *testing.T) {
	const n = 100
	for _, tc := range []struct {
		name  string
		stall time.Duration // after buffer 9 left, at 9 ms
		want  func(k int) time.Duration
	}{
		{
			// Resumes at 13.5 ms: buffers 10 to 13 are at most
			// lagSlack late and leave back to back, after their time;
			// 14 is due in 0.5 ms and the schedule is unchanged.
			name:  "within lagSlack",
			stall: ms(4.5),
			want: func(k int) time.Duration {
				if k >= 10 && k <= 13 {
					return ms(13.5)
				}
				return ms(float64(k))
			},
		},
		{
			// Resumes at 15 ms: buffer 10 is exactly lagSlack late,
			// which is still made up; 10 to 15 leave at 15 ms.
			name:  "exactly lagSlack",
			stall: ms(6),
			want: func(k int) time.Duration {
				if k >= 10 && k <= 15 {
					return ms(15)
				}
				return ms(float64(k))
			},
		},
		{
			// Resumes at 29 ms: buffer 10 is 19 ms late, so the
			// schedule moves by the excess over lagSlack, 14 ms, and
			// each buffer from 10 on pays 1 ms * (1 - 1/1.25) = 0.2 ms
			// of it back. Buffer k is then due at 14 - 0.2(k-10) + k
			// = 16 + 0.8k ms: 10 to 16 are due by 28.8 ms and leave at
			// 29; from 17 on one leaves every 0.8 ms (1.25 times the
			// rate), until buffer 79 has paid the 14 ms (70 buffers)
			// and from 80 on buffer k leaves at k ms again.
			name:  "debt paid at 1.25 times the rate",
			stall: ms(20),
			want: func(k int) time.Duration {
				switch {
				case k < 10:
					return ms(float64(k))
				case k <= 16:
					return ms(29)
				case k <= 79:
					return ms(16 + 0.8*float64(k))
				}
				return ms(float64(k))
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, clk := fakeFlow(&Spec{Protocol: UDP, BufLen: 1250, Bytes: n * 1250, Rate: 10e6})
			got := takeAll(t, NewSender(f), clk, func(i int) {
				if i == 9 {
					clk.Advance(tc.stall)
				}
			})
			if diff := cmp.Diff(schedule(n, tc.want), got); diff != "" {
				t.Errorf("when each buffer left (-want +got):\n%s", diff)
			}
			// Every stall was made up: the sender is behind by nothing.
			if b := f.Facts.Count(FactPaceBehind); b != 0 {
				t.Errorf("%s = %v, want 0 (the stall was made up)", FactPaceBehind, time.Duration(b))
			}
		})
	}
}

// TestStallDebtForgiven: a stall of 200 ms after buffer 9 (1 ms buffers,
// as above) moves the schedule by 194 ms, more than maxDebt: only 100 ms
// are owed, paid back 0.2 ms a buffer by buffers 10 to 509, and the
// other 94 ms are forgiven. Buffer k is due at 194 - 0.2(k-10) + k =
// 196 + 0.8k ms until then (10 to 16 leave at 209 ms, back to back), and
// at 94 + k ms after.
func TestStallDebtForgiven(t *testing.T) {
	const n = 700
	f, clk := fakeFlow(&Spec{Protocol: UDP, BufLen: 1250, Bytes: n * 1250, Rate: 10e6})
	got := takeAll(t, NewSender(f), clk, func(i int) {
		if i == 9 {
			clk.Advance(200 * time.Millisecond)
		}
	})
	want := schedule(n, func(k int) time.Duration {
		switch {
		case k < 10:
			return ms(float64(k))
		case k <= 16:
			return ms(209)
		case k <= 509:
			return ms(196 + 0.8*float64(k))
		}
		return ms(94 + float64(k))
	})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("when each buffer left (-want +got):\n%s", diff)
	}
	// The 94 ms forgiven are what the sender fell behind and reports.
	if b := time.Duration(f.Facts.Count(FactPaceBehind)); b != 94*time.Millisecond {
		t.Errorf("%s = %v, want 94ms (forgiven)", FactPaceBehind, b)
	}
}

// TestPaceBehindUnpaid: the same stall in a send that ends after buffer
// 299: buffers 10 to 299 paid back 290 * 0.2 = 58 ms of the 100 owed, so
// the sender ends 94 + 42 = 136 ms behind its rate, and says so.
func TestPaceBehindUnpaid(t *testing.T) {
	const n = 300
	f, clk := fakeFlow(&Spec{Protocol: UDP, BufLen: 1250, Bytes: n * 1250, Rate: 10e6})
	takeAll(t, NewSender(f), clk, func(i int) {
		if i == 9 {
			clk.Advance(200 * time.Millisecond)
		}
	})
	if b := time.Duration(f.Facts.Count(FactPaceBehind)); b != 136*time.Millisecond {
		t.Errorf("%s = %v, want 136ms (94 forgiven, 42 unpaid)", FactPaceBehind, b)
	}
}

// TestPacedTimeLimit: a paced send with a time limit hands out the
// buffers due before the limit, and ends when the last of them left: at
// 1 Mbit/s of 1250-byte buffers, buffer k is due at k*10 ms.
func TestPacedTimeLimit(t *testing.T) {
	for _, tc := range []struct {
		limit   time.Duration
		buffers int
	}{
		{95 * time.Millisecond, 10},  // 0 to 9; 10 is due at 100 ms, after the limit
		{100 * time.Millisecond, 10}, // 10 is due at the limit: not sent
		{101 * time.Millisecond, 11}, // 10 is due 1 ms before it
	} {
		f, clk := fakeFlow(&Spec{Protocol: UDP, BufLen: 1250, Duration: tc.limit, Rate: 1e6})
		got := takeAll(t, NewSender(f), clk, nil)
		want := schedule(tc.buffers, func(k int) time.Duration { return time.Duration(k) * 10 * time.Millisecond })
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("limit %v: when each buffer left (-want +got):\n%s", tc.limit, diff)
		}
		if e, last := clk.Elapsed(), want[len(want)-1]; e != last {
			t.Errorf("limit %v: the send ended at %v, want %v (when its last buffer left, without sleeping to the limit)", tc.limit, e, last)
		}
	}
}

// TestTimeLimitChecks: an unpaced send reads the clock for the time
// limit at every buffer of 8 KiB or more, and at grants 1, 17, 33, ... of
// smaller ones. Each buffer here takes 1 ms (the test moves the clock)
// and the limit is 100 ms.
func TestTimeLimitChecks(t *testing.T) {
	for _, tc := range []struct {
		bufLen, buffers int
	}{
		// Grant g (from 1) comes at g-1 ms: grant 101, at 100 ms,
		// sees the limit.
		{8 << 10, 100},
		// Checked at grant 97 (96 ms: on) and 113 (112 ms: over):
		// grants 1 to 112 go, 12 past the limit (at most 16 small
		// buffers late, as documented).
		{100, 112},
	} {
		f, clk := fakeFlow(&Spec{Protocol: TCP, BufLen: tc.bufLen, Duration: 100 * time.Millisecond})
		got := takeAll(t, NewSender(f), clk, func(int) { clk.Advance(time.Millisecond) })
		if len(got) != tc.buffers {
			t.Errorf("buffers of %d bytes, 1 ms each, limit 100 ms: %d sent, want %d", tc.bufLen, len(got), tc.buffers)
		}
		if len(clk.Slept) != 0 {
			t.Errorf("an unpaced send slept %v", clk.Slept)
		}
	}
}

// TestPacedWindows: at 100 Mbit/s of 1250-byte buffers (one every
// 100 µs) for a second, every 10 ms window carries exactly 100 buffers,
// 125,000 bytes (100 Mbit/s for 10 ms); buffer 10000 is due at the limit
// and not sent.
func TestPacedWindows(t *testing.T) {
	f, clk := fakeFlow(&Spec{Protocol: UDP, BufLen: 1250, Duration: time.Second, Rate: 100e6})
	got := takeAll(t, NewSender(f), clk, nil)
	if len(got) != 10000 {
		t.Errorf("%d buffers in a second, want 10000", len(got))
	}
	windows := make([]int, 100)
	for _, at := range got {
		if w := int(at / (10 * time.Millisecond)); w < len(windows) {
			windows[w] += 1250
		} else {
			t.Errorf("a buffer left at %v, after the limit", at)
		}
	}
	if diff := cmp.Diff(schedule(100, func(int) time.Duration { return 125000 }), func() []time.Duration {
		v := make([]time.Duration, len(windows))
		for i, b := range windows {
			v[i] = time.Duration(b)
		}
		return v
	}()); diff != "" {
		t.Errorf("bytes in each 10 ms window (-want +got):\n%s", diff)
	}
}

// TestPacedRateOverLateWakeups: every sleep of a paced sender wakes
// 300 µs late (at 80 Mbit/s of 1000-byte buffers, 100 µs each, for a
// second). Buffer 1 sleeps 100 µs and leaves at 400 µs; 2, 3 and 4 are
// due by then (less than lagSlack late) and leave with it; 5 sleeps
// again, and so on: buffers 4j+1 to 4j+4 leave at 400(j+1) µs, after one
// sleep each. Buffer 9997 wakes at the limit, so 9998 of the 10,000 due
// go (a pacer that took the late wakeups as lost time would send 2500).
func TestPacedRateOverLateWakeups(t *testing.T) {
	f, clk := fakeFlow(&Spec{Protocol: UDP, BufLen: 1000, Duration: time.Second, Rate: 80e6})
	clk.OnSleep = func(time.Duration) time.Duration { return 300 * time.Microsecond }
	got := takeAll(t, NewSender(f), clk, nil)
	if len(got) != 9998 {
		t.Fatalf("%d buffers in a second at 10,000 a second with every wakeup 300 µs late, want 9998", len(got))
	}
	want := schedule(9998, func(k int) time.Duration {
		if k == 0 {
			return 0
		}
		return time.Duration((k-1)/4+1) * 400 * time.Microsecond
	})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("when each buffer left (-want +got):\n%s", diff)
	}
	if len(clk.Slept) != 2500 || slices.ContainsFunc(clk.Slept, func(d time.Duration) bool { return d != 100*time.Microsecond }) {
		t.Errorf("%d sleeps, want 2500 of 100µs each", len(clk.Slept))
	}
}

// TestAhead: Ahead is how long until the next buffer is due.
func TestAhead(t *testing.T) {
	f, clk := fakeFlow(&Spec{Protocol: UDP, BufLen: 1250, Rate: 1e6})
	s := NewSender(f)
	var got []time.Duration
	got = append(got, s.Ahead()) // buffer 0 is due now
	if _, err := s.Take(1250); err != nil {
		t.Fatal(err)
	}
	got = append(got, s.Ahead()) // buffer 1 in 10 ms
	clk.Advance(3 * time.Millisecond)
	got = append(got, s.Ahead())
	clk.Advance(10 * time.Millisecond)
	got = append(got, s.Ahead()) // late: due now
	if diff := cmp.Diff([]time.Duration{0, ms(10), ms(7), 0}, got); diff != "" {
		t.Errorf("Ahead (-want +got):\n%s", diff)
	}
	u, _ := fakeFlow(&Spec{Protocol: UDP, BufLen: 1250})
	us := NewSender(u)
	us.Take(1250)
	if a := us.Ahead(); a != 0 {
		t.Errorf("Ahead of an unpaced sender: %v, want 0", a)
	}
}

// TestRetry: ENOBUFS on UDP is counted and, with no socket to watch the
// host's queue on, paused for noBufsPause on the flow's clock (the wait
// counted), then sent again; a send timeout or EAGAIN is retried
// until the time limit and then ends the send; EINTR is retried; anything
// else is returned.
func TestRetry(t *testing.T) {
	f, clk := fakeFlow(&Spec{Protocol: UDP, BufLen: 100, Duration: 100 * time.Millisecond})
	s := NewSender(f)
	if again, err := s.Retry(unix.ENOBUFS); !again || err != nil {
		t.Errorf("ENOBUFS: %v, %v; want true, nil", again, err)
	}
	if diff := cmp.Diff([]time.Duration{noBufsPause}, clk.Slept); diff != "" || clk.Elapsed() != noBufsPause {
		t.Errorf("ENOBUFS paused %v, now at %v; want one pause of %v", clk.Slept, clk.Elapsed(), noBufsPause)
	}
	if n, e := f.Facts.Count(FactNoBufs), f.Stats.Snapshot().Errors; n != 1 || e != 1 {
		t.Errorf("after ENOBUFS: %s %d, errors %d; want 1, 1", FactNoBufs, n, e)
	}
	// No socket to watch the host's queue on: the whole pause, counted.
	if w := time.Duration(f.Facts.Count(FactNoBufsWait)); w != noBufsPause {
		t.Errorf("after ENOBUFS: %s %v, want %v", FactNoBufsWait, w, noBufsPause)
	}
	if again, err := s.Retry(unix.EINTR); !again || err != nil {
		t.Errorf("EINTR: %v, %v; want true, nil", again, err)
	}
	if again, err := s.Retry(ErrTimeout); !again || err != nil || s.Over() {
		t.Errorf("a send timeout at %v of a 100ms limit: %v, %v, over %v; want true, nil, not over", clk.Elapsed(), again, err, s.Over())
	}
	clk.Set(clock.Epoch.Add(100 * time.Millisecond))
	if again, err := s.Retry(unix.EAGAIN); again || err != nil || !s.Over() {
		t.Errorf("EAGAIN at the limit: %v, %v, over %v; want false, nil, over", again, err, s.Over())
	}
	if again, err := s.Retry(unix.EPIPE); again || !errors.Is(err, unix.EPIPE) {
		t.Errorf("EPIPE: %v, %v; want false, EPIPE", again, err)
	}

	tf, tclk := fakeFlow(&Spec{Protocol: TCP, BufLen: 100})
	ts := NewSender(tf)
	if again, err := ts.Retry(unix.ENOBUFS); again || !errors.Is(err, unix.ENOBUFS) || len(tclk.Slept) != 0 {
		t.Errorf("ENOBUFS on TCP: %v, %v after sleeping %v; want false, ENOBUFS, no pause", again, err, tclk.Slept)
	}
	if again, err := ts.Retry(unix.EAGAIN); again || !errors.Is(err, unix.EAGAIN) {
		t.Errorf("EAGAIN without a time limit: %v, %v; want false, EAGAIN", again, err)
	}
}

// TestCancelledPacing: a cancelled flow's paced sender on a fake clock
// ends at its first sleep with ErrCancelled.
func TestCancelledPacing(t *testing.T) {
	f, _ := fakeFlow(&Spec{Protocol: UDP, BufLen: 1250, Rate: 1e6})
	s := NewSender(f)
	f.wake.fire()
	if _, err := s.Take(1250); err != nil {
		t.Fatalf("buffer 0 (due at once): %v", err)
	}
	if _, err := s.Take(1250); !errors.Is(err, ErrCancelled) {
		t.Errorf("buffer 1 of a cancelled flow: %v, want ErrCancelled", err)
	}
}

// TestRealClock: a Sender on no clock, or on clock.Real, reads time.Now
// and sleeps in the kernel on the flow's eventfd (Flow.Sleep), as before
// clocks were injected: outside Run that sleep refuses to run.
func TestRealClock(t *testing.T) {
	for _, c := range []clock.Clock{nil, clock.Real} {
		f := &Flow{Spec: &Spec{Protocol: UDP, BufLen: 1250, Rate: 1e6}, Stats: &Counters{}, Clock: c}
		s := NewSender(f)
		if s.clk != nil {
			t.Errorf("clock %v: the Sender keeps it, want the real clock read directly", c)
		}
		s.Take(1250)
		if _, err := s.Take(1250); !errors.Is(err, errNotRunning) {
			t.Errorf("clock %v: a paced sleep outside Run: %v, want Flow.Sleep's errNotRunning", c, err)
		}
	}
}

// TestNextStamps checks Next with a Framing: each datagram is stamped in
// order over the start of the buffer, the rest of the buffer is left as
// it was, the byte limit's last datagram is short, and Take is refused.
func TestNextStamps(t *testing.T) {
	fr := &stampTimes{}
	s := NewSender(&Flow{Spec: &Spec{Protocol: UDP, BufLen: 100, Bytes: 250, Framing: fr}})
	if !s.Fills() {
		t.Errorf("Fills() = false with a Framing, want true")
	}
	if _, err := s.Take(100); err == nil || !strings.Contains(err.Error(), "Framing") {
		t.Errorf("Take with a Framing: got %v, want it refused", err)
	}
	buf := make([]byte, 100)
	Pattern(buf)
	pattern := bytes.Clone(buf)
	var lens []int
	for i := uint64(1); ; i++ {
		p, err := s.Next(buf)
		if err != nil {
			t.Fatal(err)
		}
		if len(p) == 0 {
			break
		}
		lens = append(lens, len(p))
		if got := binary.BigEndian.Uint64(p); got != i {
			t.Errorf("datagram %d stamped %d", i, got)
		}
		if !bytes.Equal(buf[8:], pattern[8:]) {
			t.Errorf("datagram %d: the bytes after the stamp changed", i)
		}
	}
	if diff := cmp.Diff([]int{100, 100, 50}, lens); diff != "" {
		t.Errorf("datagram lengths (-want +got):\n%s", diff)
	}
	if s := NewSender(&Flow{Spec: &Spec{Protocol: UDP, BufLen: 100}}); s.Fills() {
		t.Errorf("Fills() = true for the pattern without a Framing, want false")
	}
}
