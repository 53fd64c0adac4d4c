package latency

import (
	"io"
	"net"
	"testing"
	"time"
)

// stallingEcho serves one TCP latency client on loopback: it answers the
// greeting, then echoes 64-byte requests, and holds request number stallAt
// for 300 ms. It returns the port.
func stallingEcho(t *testing.T, stallAt int) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		var hi [len(Hello)]byte
		if _, err := io.ReadFull(c, hi[:]); err != nil {
			return
		}
		c.Write(hi[:])
		buf := make([]byte, 64)
		for n := 1; ; n++ {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			if n == stallAt {
				time.Sleep(300 * time.Millisecond)
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// One reply held for 300 ms: a closed loop records one slow round trip;
// on a schedule of 1000 requests a second, the requests whose slots passed
// during the stall record their wait too (each time counts from its slot),
// as the coordinated-omission correction says: slots 60 to about 360, of
// which about 290 still wait 10 ms or more. (A shared machine may stall a
// few round trips of its own: the bounds leave room for that, and for
// nothing like the difference the correction makes.)
func TestRateCorrectsCoordinatedOmission(t *testing.T) {
	slow := func(rate float64) int64 {
		cfg := clientConfig(stallingEcho(t, 60), false, 600)
		cfg.Warmup, cfg.Rate = 0, rate
		res, err := Run(t.Context(), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, b := range res.Buckets {
			if b.From >= 10*time.Millisecond {
				n += b.Count
			}
		}
		if res.RoundTrips != 600 {
			t.Fatalf("rate %g: %d round trips, want 600", rate, res.RoundTrips)
		}
		return n
	}
	if n := slow(0); n < 1 || n > 10 {
		t.Errorf("closed loop: %d round trips of 10 ms or more, want the one that was held (and a few at most of the machine's own)", n)
	}
	if n := slow(1000); n < 250 || n > 400 {
		t.Errorf("1000/s: %d round trips of 10 ms or more, want about 290 (those due during the stall)", n)
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
