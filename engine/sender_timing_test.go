//go:build timing && linux

package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/blastnet/blast/internal/timingcheck"
)

// The pacer on the real clock: what the fake-clock tests of
// sender_linux_test.go assert exactly, measured here on the host's own
// sleeps and scheduler, each judged on a median of runs.

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
			// Busy, as a thread that did not get the CPU.
			for start := time.Now(); time.Since(start) < l.stall; {
			}
		}
	}
}

// TestTimingPacedRateOverLateWakeups: a paced sender whose thread is held
// up for 300 µs (three buffers' time) every tenth buffer still sends the
// rate's count over the time limit: buffers 0 to 9999 are due within the
// second (a pacer that took each late wakeup as lost time sends about a
// quarter less).
func TestTimingPacedRateOverLateWakeups(t *testing.T) {
	timingcheck.Check(t, timingcheck.Property{
		Name:  "80 Mbit/s of 1000-byte buffers for 1 s, held up 300 µs every tenth: buffers sent of the 10,000 due",
		Unit:  "%",
		Bound: "97 to 100",
		Holds: func(m float64) bool { return m >= 97 && m <= 100 },
		Measure: func(t *testing.T, run int) (float64, error) {
			fr := &stampTimes{}
			f := &Flow{Spec: &Spec{Protocol: UDP, BufLen: 1000, Duration: time.Second, Rate: 80e6, Framing: fr}, Stats: &Counters{}}
			if err := Run(context.Background(), stallLoop{stall: 300 * time.Microsecond}, f, true); err != nil {
				return 0, err
			}
			return 100 * float64(len(fr.at)) / 10000, nil
		},
	})
}

// burstRun is one paced flow of 20 bursts of 10 buffers of 1000 bytes at
// 8 Mbit/s (a burst every 10 ms), as its grants were stamped.
func burstRun() (before time.Time, at []time.Time, err error) {
	fr := &stampTimes{}
	f := &Flow{Spec: &Spec{Protocol: UDP, BufLen: 1000, Bytes: 200 * 1000, Rate: 8e6, Burst: 10, Framing: fr}, Stats: &Counters{}}
	before = time.Now() // the Sender starts after this
	if err := Run(context.Background(), nextLoop{}, f, true); err != nil {
		return before, nil, err
	}
	if len(fr.at) != 200 {
		return before, nil, fmt.Errorf("%d buffers granted, want 200", len(fr.at))
	}
	return before, fr.at, nil
}

// TestTimingBurstPacing runs a paced flow of bursts (20 bursts of 10
// 1000-byte buffers at 8 Mbit/s: one every 10 ms) through Run and times
// the grants as Stamp sees them: no burst leaves before it is due, a
// burst's buffers leave back to back, and the rate over the second half
// holds (a late wakeup delays a burst, but the schedule is absolute).
func TestTimingBurstPacing(t *testing.T) {
	const period = 10 * time.Millisecond
	timingcheck.Check(t, timingcheck.Property{
		Name:  "bursts of 10 at 8 Mbit/s: how early the earliest burst left (from a time before the Sender started)",
		Unit:  "µs",
		Bound: "at most 0",
		Holds: func(m float64) bool { return m <= 0 },
		Measure: func(t *testing.T, run int) (float64, error) {
			before, at, err := burstRun()
			if err != nil {
				return 0, err
			}
			early := time.Duration(-1 << 62)
			for k := range 20 {
				early = max(early, before.Add(time.Duration(k)*period).Sub(at[k*10]))
			}
			return float64(early.Microseconds()), nil
		},
	})
	timingcheck.Check(t, timingcheck.Property{
		Name:  "bursts of 10 at 8 Mbit/s: median spread of a burst (paced one by one: 9 ms)",
		Unit:  "ms",
		Bound: "at most 5",
		Holds: func(m float64) bool { return m <= 5 },
		Measure: func(t *testing.T, run int) (float64, error) {
			_, at, err := burstRun()
			if err != nil {
				return 0, err
			}
			var spreads []float64
			for k := range 20 {
				spreads = append(spreads, at[k*10+9].Sub(at[k*10]).Seconds()*1000)
			}
			return timingcheck.Median(spreads), nil
		},
	})
	timingcheck.Check(t, timingcheck.Property{
		Name:  "bursts of 10 at 8 Mbit/s: median rate from the first burst to each of the second half's, off 8 Mbit/s by",
		Unit:  "%",
		Bound: "at most 3",
		Holds: func(m float64) bool { return m <= 3 },
		Measure: func(t *testing.T, run int) (float64, error) {
			_, at, err := burstRun()
			if err != nil {
				return 0, err
			}
			var rates []float64
			for k := 10; k < 20; k++ {
				rates = append(rates, float64(k*10*1000*8)/at[k*10].Sub(at[0]).Seconds())
			}
			m := timingcheck.Median(rates)
			return 100 * max(m/8e6-1, 1-m/8e6), nil
		},
	})
}

// pacedLimitRun is one paced send of 1000 buffers a second (1000 bytes
// at 8 Mbit/s) for a time limit of 300 ms: buffer k is due at k ms, so 0
// to 299 are due within the limit.
func pacedLimitRun() (n int, lastLate, took time.Duration, err error) {
	const limit = 300 * time.Millisecond
	fr := &stampTimes{}
	f := &Flow{Spec: &Spec{Protocol: UDP, BufLen: 1000, Duration: limit, Rate: 8e6, Framing: fr}, Stats: &Counters{}}
	before := time.Now()
	if err := Run(context.Background(), nextLoop{}, f, true); err != nil {
		return 0, 0, 0, err
	}
	took = time.Since(before)
	if len(fr.at) == 0 {
		return 0, 0, took, errors.New("no buffer sent")
	}
	// The limit runs from the flow's start, when its first buffer went.
	return len(fr.at), fr.at[len(fr.at)-1].Sub(fr.at[0].Add(limit)), took, nil
}

// TestTimingPacedTimeLimit: a paced, time-limited send hands out the
// buffers due before the limit and no more (none at full speed once the
// limit nears), its last buffer goes before the limit, and the send ends
// soon after it.
func TestTimingPacedTimeLimit(t *testing.T) {
	timingcheck.Check(t, timingcheck.Property{
		Name:  "1000 buffers a second for 300 ms: buffers sent (300 due)",
		Unit:  "buffers",
		Bound: "285 to 300",
		Holds: func(m float64) bool { return m >= 285 && m <= 300 },
		Measure: func(t *testing.T, run int) (float64, error) {
			n, _, _, err := pacedLimitRun()
			return float64(n), err
		},
	})
	timingcheck.Check(t, timingcheck.Property{
		Name:  "1000 buffers a second for 300 ms: the last buffer after the limit by",
		Unit:  "ms",
		Bound: "at most 0",
		Holds: func(m float64) bool { return m <= 0 },
		Measure: func(t *testing.T, run int) (float64, error) {
			_, late, _, err := pacedLimitRun()
			return late.Seconds() * 1000, err
		},
	})
	timingcheck.Check(t, timingcheck.Property{
		Name:  "1000 buffers a second for 300 ms: Run returned after the limit by",
		Unit:  "ms",
		Bound: "at most 50",
		Holds: func(m float64) bool { return m <= 50 },
		Measure: func(t *testing.T, run int) (float64, error) {
			_, _, took, err := pacedLimitRun()
			return (took - 300*time.Millisecond).Seconds() * 1000, err
		},
	})
}

// TestTimingPacedWindows: at 100 Mbit/s of 1250-byte buffers for a
// second, the share of 10 ms windows whose bytes are within 10% of
// 125,000 (the fake-clock test has every window exact).
func TestTimingPacedWindows(t *testing.T) {
	timingcheck.Check(t, timingcheck.Property{
		Name:  "100 Mbit/s for 1 s: 10 ms windows within 10% of the rate",
		Unit:  "%",
		Bound: "at least 90",
		Holds: func(m float64) bool { return m >= 90 },
		Measure: func(t *testing.T, run int) (float64, error) {
			fr := &stampTimes{}
			f := &Flow{Spec: &Spec{Protocol: UDP, BufLen: 1250, Duration: time.Second, Rate: 100e6, Framing: fr}, Stats: &Counters{}}
			if err := Run(context.Background(), nextLoop{}, f, true); err != nil {
				return 0, err
			}
			if len(fr.at) == 0 {
				return 0, errors.New("no buffer sent")
			}
			windows := make([]int, 100)
			for _, at := range fr.at {
				if w := int(at.Sub(fr.at[0]) / (10 * time.Millisecond)); w < len(windows) {
					windows[w] += 1250
				}
			}
			good := 0
			for _, b := range windows {
				if b >= 112500 && b <= 137500 {
					good++
				}
			}
			return float64(good), nil
		},
	})
}
