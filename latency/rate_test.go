package latency

import (
	"context"
	"testing"
	"time"

	"github.com/blastnet/blast/internal/clock"
)

// fakeFlow is a flow on a fake clock: each round trip takes rtt (or what
// slow says for its sequence number) of the clock's time, and the flow
// records when each request left.
type fakeFlow struct {
	clk  *clock.Fake
	rtt  time.Duration
	slow map[uint64]time.Duration
	sent []time.Duration // offsets from clock.Epoch
}

func (f *fakeFlow) roundTrip(seq uint64) (time.Time, time.Duration, bool, error) {
	start := f.clk.Now()
	f.sent = append(f.sent, start.Sub(clock.Epoch))
	d, ok := f.slow[seq]
	if !ok {
		d = f.rtt
	}
	f.clk.Advance(d)
	end := f.clk.Now()
	return end, end.Sub(start), true, nil
}

func (f *fakeFlow) interrupt()   {}
func (f *fakeFlow) close() error { return nil }

// measureFake runs one measuring phase of cfg over f on its fake clock.
func measureFake(t *testing.T, cfg Config, f *fakeFlow) *Result {
	t.Helper()
	var seq uint64
	res := &Result{}
	if err := measure(context.Background(), f.clk, f, cfg, &seq, res, nil); err != nil {
		t.Fatal(err)
	}
	return res
}

// slowerThan is how many round trips a result holds of at least d (d
// falls between buckets in the tests below).
func slowerThan(res *Result, d time.Duration) int64 {
	var n int64
	for _, b := range res.Buckets {
		if b.From >= d {
			n += b.Count
		}
	}
	return n
}

// --rate 5000 -t 2 with 50 µs round trips: a request every 200 µs, each
// on its slot, from the start to the end of the 2 s.
func TestRateSchedule(t *testing.T) {
	f := &fakeFlow{clk: clock.NewFake(), rtt: 50 * time.Microsecond}
	cfg := clientConfig(5202, false, 0)
	cfg.Rate, cfg.Duration = 5000, 2*time.Second
	res := measureFake(t, cfg, f)
	// The last request whose slot comes before the end is number 10000
	// (at 1.9998 s); it ends at 1.99985 s, and the next slot, at 2 s, is
	// the end: 10000 requests, and the run lasts its 2 s.
	const want = 10000
	if res.Requests != want || res.RoundTrips != want || res.Lost != 0 || int64(len(f.sent)) != want {
		t.Fatalf("%d requests (%d sent), %d round trips, %d lost; want %d of each and none lost", res.Requests, len(f.sent), res.RoundTrips, res.Lost, want)
	}
	for i, at := range f.sent {
		if slot := time.Duration(i) * 200 * time.Microsecond; at != slot {
			t.Fatalf("request %d left at %v, want its slot %v", i+1, at, slot)
		}
	}
	if want := 2 * time.Second; res.Elapsed != want {
		t.Errorf("elapsed %v, want %v (the schedule's end)", res.Elapsed, want)
	}
	if s := res.RTT; s.Min != 50*time.Microsecond || s.Max != 50*time.Microsecond || s.Count != want {
		t.Errorf("round trips %+v, want every one 50 µs", s)
	}

	// -n counts requests at a rate as without one.
	f = &fakeFlow{clk: clock.NewFake(), rtt: 50 * time.Microsecond}
	cfg.Count = 600
	if res := measureFake(t, cfg, f); res.Requests != 600 || res.RoundTrips != 600 || f.sent[599] != 599*200*time.Microsecond {
		t.Errorf("-n 600 --rate 5000: %d requests, %d round trips, the last sent at %v; want 600, 600, 119.8 ms", res.Requests, res.RoundTrips, f.sent[len(f.sent)-1])
	}
}

// One reply held for 300 ms (request 60, at 59 ms) of 600, each other
// round trip 50 µs: a closed loop records one slow round trip. On a
// schedule of 1000 requests a second, the requests whose slots passed
// during the stall go at once when it ends, one every 50 µs, and each
// time counts from its slot, as the coordinated-omission correction
// says: request k (from 0, 59 the held one) ends at 359 ms + (k-59)·50
// µs, 356.05 ms - 0.95·k ms after its slot, 10 ms or more for k up to
// 364: 306 of them. From request 375 on, each leaves on its slot again.
func TestRateCorrectsCoordinatedOmission(t *testing.T) {
	run := func(rate float64) (*Result, *fakeFlow) {
		f := &fakeFlow{clk: clock.NewFake(), rtt: 50 * time.Microsecond, slow: map[uint64]time.Duration{60: 300 * time.Millisecond}}
		cfg := clientConfig(5202, false, 600)
		cfg.Rate = rate
		res := measureFake(t, cfg, f)
		if res.RoundTrips != 600 {
			t.Fatalf("rate %g: %d round trips, want 600", rate, res.RoundTrips)
		}
		return res, f
	}
	res, _ := run(0)
	if n := slowerThan(res, 10*time.Millisecond); n != 1 || res.RTT.Max != 300*time.Millisecond {
		t.Errorf("closed loop: %d round trips of 10 ms or more, the slowest %v; want the one that was held, 300 ms", n, res.RTT.Max)
	}
	res, f := run(1000)
	if n := slowerThan(res, 10*time.Millisecond); n != 306 {
		t.Errorf("1000/s: %d round trips of 10 ms or more, want 306 (those due during the stall, and the queue behind it)", n)
	}
	if res.RTT.Max != 300*time.Millisecond {
		t.Errorf("1000/s: slowest %v, want 300 ms (the held one)", res.RTT.Max)
	}
	for k, want := range map[int]time.Duration{
		59: 59 * time.Millisecond, 60: 359 * time.Millisecond, 364: 359*time.Millisecond + 304*50*time.Microsecond,
		374: 359*time.Millisecond + 314*50*time.Microsecond, 375: 375 * time.Millisecond, 599: 599 * time.Millisecond,
	} {
		if f.sent[k] != want {
			t.Errorf("1000/s: request %d (from 0) left at %v, want %v", k, f.sent[k], want)
		}
	}
}

// -t 1 -i 0.25 with 50 µs round trips, one of which (number 4000, from
// 1) takes 100 ms: an interval ends with the first reply at or after its
// tick, the next tick is the first after that reply, and the run ends
// with the first reply at or after its second.
func TestIntervals(t *testing.T) {
	f := &fakeFlow{clk: clock.NewFake(), rtt: 50 * time.Microsecond, slow: map[uint64]time.Duration{4000: 100 * time.Millisecond}}
	cfg := clientConfig(5202, false, 0)
	cfg.Duration, cfg.Interval = time.Second, 250*time.Millisecond
	var reported []Interval
	var seq uint64
	res := &Result{}
	if err := measure(context.Background(), f.clk, f, cfg, &seq, res, func(iv Interval) { reported = append(reported, iv) }); err != nil {
		t.Fatal(err)
	}
	us := time.Microsecond
	want := []struct {
		start, end time.Duration
		n          int64
	}{
		{0, 299950 * us, 4000},            // the slow reply, at 299.95 ms, ends the first
		{299950 * us, 500000 * us, 4001},  // ticks at 500 ms
		{500000 * us, 750000 * us, 5000},  //
		{750000 * us, 1000000 * us, 5000}, // and the run, at 1 s
	}
	if len(reported) != len(want) || len(res.Intervals) != len(want) {
		t.Fatalf("%d intervals reported, %d kept: %+v; want %d", len(reported), len(res.Intervals), reported, len(want))
	}
	for i, w := range want {
		iv := reported[i]
		if iv.Start != w.start || iv.End != w.end || iv.Requests != w.n || iv.RoundTrips != w.n || iv.RTT.Count != w.n {
			t.Errorf("interval %d: %v-%v, %d requests, %d round trips; want %v-%v, %d", i+1, iv.Start, iv.End, iv.Requests, iv.RoundTrips, w.start, w.end, w.n)
		}
	}
	if res.Requests != 18001 || res.RoundTrips != 18001 || res.Elapsed != time.Second {
		t.Errorf("%d requests, %d round trips in %v; want 18001 in 1 s", res.Requests, res.RoundTrips, res.Elapsed)
	}
	if s := reported[0].RTT; s.Max != 100*time.Millisecond || s.Min != 50*us {
		t.Errorf("first interval: min %v, max %v; want 50 µs and the slow 100 ms", s.Min, s.Max)
	}
}

func TestRateValidate(t *testing.T) {
	for _, r := range []float64{-1, 2e6} {
		c := clientConfig(5202, false, 10)
		c.Rate = r
		if err := c.Validate(); err == nil || !IsUsage(err) {
			t.Errorf("--rate %g: %v, want a usage error", r, err)
		}
	}
}

// --rate over loopback: every request answered, none lost.
func TestRateLoopback(t *testing.T) {
	port, _, _ := startServer(t, false)
	cfg := clientConfig(port, false, 200)
	cfg.Rate = 10000
	res, err := Run(t.Context(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 200 || res.RoundTrips != 200 || res.Rate != 10000 {
		t.Errorf("%d requests, %d round trips, rate %g: want 200, 200, 10000", res.Requests, res.RoundTrips, res.Rate)
	}
}

// --load runs a bulk stream to the same echo server beside the ping-pong:
// the round trips are all there, and the stream's rate is reported.
func TestLoad(t *testing.T) {
	port, _, _ := startServer(t, false)
	cfg := clientConfig(port, false, 300)
	cfg.Load = true
	res, err := Run(t.Context(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.RoundTrips != 300 || res.LoadBps <= 0 {
		t.Errorf("%d round trips, load %.0f bit/s: want 300 and a rate", res.RoundTrips, res.LoadBps)
	}
	if j := ToJSON(res); j.LoadBps != res.LoadBps {
		t.Errorf("JSON load %v, want %v", j.LoadBps, res.LoadBps)
	}
}
