package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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

// nextLoop is a backend that only asks the Sender for buffers with Next,
// sending none: the Sender's pacing and stamping alone.
type nextLoop struct{}

func (nextLoop) Name() string { return "nextloop" }
func (nextLoop) Probe() error { return nil }
func (nextLoop) Recv(context.Context, *Flow) error {
	return errors.New("nextloop only sends")
}
func (nextLoop) Send(ctx context.Context, f *Flow) error {
	s := NewSender(f)
	buf := make([]byte, f.Spec.BufLen)
	for {
		p, err := s.Next(buf)
		if err != nil || len(p) == 0 {
			return err
		}
	}
}

// stallLoop asks the Sender for buffers like nextLoop, and every tenth
// buffer its thread does not run for stall (as a busy host's scheduler
// wakes a thread late).
type stallLoop struct{ stall time.Duration }

func (stallLoop) Name() string { return "stallloop" }
func (stallLoop) Probe() error { return nil }
func (stallLoop) Recv(context.Context, *Flow) error {
	return errors.New("stallloop only sends")
}
func (l stallLoop) Send(ctx context.Context, f *Flow) error {
	s := NewSender(f)
	buf := make([]byte, f.Spec.BufLen)
	for i := 1; ; i++ {
		p, err := s.Next(buf)
		if err != nil || len(p) == 0 {
			return err
		}
		if i%10 == 0 {
			// Busy, as a thread that did not get the CPU: a sleep
			// this short lasts a millisecond or more on the runtime's
			// timers.
			for start := time.Now(); time.Since(start) < l.stall; {
			}
		}
	}
}

// TestPacedRateHoldsOverLateWakeups: a paced sender whose thread is held
// up for 300 µs (three buffers' time) every tenth buffer still sends the
// rate's count over the time limit (a pacer that took each late wakeup
// as lost time sends about a quarter less here).
func TestPacedRateHoldsOverLateWakeups(t *testing.T) {
	const (
		bufLen = 1000
		rate   = 80e6 // 10,000 buffers a second: 1 ms between stalls
		limit  = time.Second
	)
	fr := &stampTimes{}
	f := &Flow{Spec: &Spec{Protocol: UDP, BufLen: bufLen, Duration: limit, Rate: rate, Framing: fr}, Stats: &Counters{}}
	if err := Run(context.Background(), stallLoop{stall: 300 * time.Microsecond}, f, true); err != nil {
		t.Fatal(err)
	}
	// Buffers 0 to 9999 are due within the limit; 3% short is what a
	// busy host's longer sleeps may cost.
	if n := len(fr.at); n > 10000 || n < 9700 {
		t.Errorf("%d buffers in %v at 10,000 a second with a 300 µs stall every tenth, want 10,000 (at least 9700)", n, limit)
	}
}

// TestBurstPacing runs a paced flow of bursts for 200 ms through Run and
// times the Sender's grants, as Stamp sees them. The assertions take the
// noise of a loaded machine: no grant comes before it is due (a sleep
// never ends early); most bursts leave back to back; and the median rate
// measured over the second half holds to 3% (a late wakeup delays a burst,
// but the schedule is absolute, so it does not carry over).
func TestBurstPacing(t *testing.T) {
	const (
		bufLen = 1000
		burst  = 10
		bursts = 20
		period = 10 * time.Millisecond // one burst of 10 kB at 8 Mbit/s
		rate   = burst * bufLen * 8 / 0.010
	)
	fr := &stampTimes{}
	spec := &Spec{Protocol: UDP, BufLen: bufLen, Bytes: bursts * burst * bufLen, Rate: rate, Burst: burst, Framing: fr}
	f := &Flow{Spec: spec, Stats: &Counters{}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	before := time.Now() // the Sender starts after this
	if err := Run(ctx, nextLoop{}, f, true); err != nil {
		t.Fatal(err)
	}
	if len(fr.at) != bursts*burst {
		t.Fatalf("%d buffers granted, want %d", len(fr.at), bursts*burst)
	}
	var spreads []time.Duration
	var rates []float64
	for k := range bursts {
		first := fr.at[k*burst]
		due := before.Add(time.Duration(k) * period)
		if early := due.Sub(first); early > 0 {
			t.Errorf("burst %d granted %v before it was due", k, early)
		}
		spreads = append(spreads, fr.at[k*burst+burst-1].Sub(first))
		if k >= bursts/2 {
			rates = append(rates, float64(k*burst*bufLen*8)/first.Sub(fr.at[0]).Seconds())
		}
	}
	// Paced one by one, a burst would spread over 9 ms.
	if m := median(spreads); m > period/2 {
		t.Errorf("median burst spread %v, want its buffers back to back (spreads %v)", m, spreads)
	}
	if m := median(rates); m < 0.97*rate || m > 1.03*rate {
		t.Errorf("median rate %.0f bit/s, want %.0f within 3%% (rates %.0f)", m, rate, rates)
	}
}

func median[T time.Duration | float64](v []T) T {
	s := slices.Sorted(slices.Values(v))
	return s[len(s)/2]
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

// A paced, time-limited send hands out the buffers due before the limit
// and no more: none at full speed once the limit nears.
func TestPacedTimeLimit(t *testing.T) {
	const (
		bufLen = 1000
		rate   = 8e6 // 1000 buffers a second
		limit  = 300 * time.Millisecond
	)
	fr := &stampTimes{}
	spec := &Spec{Protocol: UDP, BufLen: bufLen, Duration: limit, Rate: rate, Framing: fr}
	f := &Flow{Spec: spec, Stats: &Counters{}}
	before := time.Now()
	if err := Run(context.Background(), nextLoop{}, f, true); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	// Buffer k is due at k ms: 0 to 299 are due before the limit.
	if n := len(fr.at); n > 300 || n < 285 {
		t.Errorf("%d buffers in %v at 1000 a second, want 300 (at least 285 on a busy machine)", n, limit)
	}
	// The limit runs from the flow's start, when its first buffer went
	// (the thread that runs it starts a moment after Run is called).
	if start, last := fr.at[0], fr.at[len(fr.at)-1]; last.After(start.Add(limit)) {
		t.Errorf("the last buffer went %v after the limit", last.Sub(start.Add(limit)))
	}
	if after.Sub(before) > limit+50*time.Millisecond {
		t.Errorf("the send took %v for a limit of %v", after.Sub(before), limit)
	}
}
