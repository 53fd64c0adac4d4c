package latency

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blastnet/blast/internal/clock"
)

// waitUntil returns at t on clk: it sleeps while t is far, then spins the
// last stretch, since a sleep wakes tens of microseconds late. Only the
// real clock moves while one spins: any other sleeps the stretch too.
func waitUntil(clk clock.Clock, t time.Time) {
	for {
		d := clk.Until(t)
		switch {
		case d <= 0:
			return
		case d > 200*time.Microsecond:
			clk.Sleep(d - 100*time.Microsecond)
		case clk != clock.Real:
			clk.Sleep(d)
		}
	}
}

// startLoad opens a bulk TCP stream to cfg's server beside the ping-pong:
// it writes 128 KiB buffers as fast as the path takes them and reads the
// echo. stop ends it and returns its rate in bit/s, both directions.
func startLoad(ctx context.Context, cfg Config) (stop func() float64, err error) {
	addr := hostPort(cfg.Host, cfg.Port)
	d := net.Dialer{Control: cfg.Sock.Control(), Timeout: 10 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, explain("connect the load stream to", addr, err)
	}
	if err := hello(ctx, c, addr, max(cfg.Timeout, 5*time.Second)); err != nil {
		c.Close()
		return nil, err
	}
	var moved atomic.Int64
	var wg sync.WaitGroup
	begin := time.Now()
	wg.Go(func() {
		buf := pattern(128 << 10)
		for {
			n, err := c.Write(buf)
			moved.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	wg.Go(func() {
		n, _ := io.Copy(io.Discard, c)
		moved.Add(n)
	})
	return func() float64 {
		secs := time.Since(begin).Seconds()
		bytes := moved.Load()
		c.Close()
		wg.Wait()
		if secs <= 0 {
			return 0
		}
		return 8 * float64(bytes) / secs
	}, nil
}
