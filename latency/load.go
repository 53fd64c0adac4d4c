package latency

import (
	"context"
	"errors"
	"fmt"
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

// loadStartTimeout bounds the wait for the load stream's first echo:
// a bound for a server that takes the stream and echoes nothing, not a
// timing (cfg.Timeout when longer).
const loadStartTimeout = 10 * time.Second

// startLoad opens a bulk TCP stream to cfg's server beside the ping-pong:
// it writes 128 KiB buffers as fast as the path takes them and reads the
// echo. It returns once the stream moves (its first bytes have come back),
// so the requests that follow run beside it however slowly the host lets
// it start. stop ends it and returns its rate in bit/s, both directions:
// the bytes written and read back from its start to stop, over that time.
// That span holds the requests and the one round trip of the stream before
// them; the bytes counted include that first echo, so a stream that ran
// never reports 0, even when the requests were over before the host ran
// the stream again.
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
	moving, readDone := make(chan struct{}), make(chan struct{})
	var readErr error // set before readDone closes
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
		defer close(readDone)
		var once sync.Once
		buf := make([]byte, 128<<10)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				moved.Add(int64(n))
				once.Do(func() { close(moving) })
			}
			if err != nil {
				readErr = err
				return
			}
		}
	})
	abort := func(err error) (func() float64, error) {
		c.Close()
		wg.Wait()
		return nil, err
	}
	bound := max(cfg.Timeout, loadStartTimeout)
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case <-moving:
	case <-readDone:
		if readErr == io.EOF {
			readErr = errors.New("the server closed it")
		}
		return abort(fmt.Errorf("the load stream to %s ended before its first echo: %w", addr, readErr))
	case <-ctx.Done():
		return abort(ctx.Err())
	case <-timer.C:
		return abort(fmt.Errorf("the load stream to %s: no echo in %v (is the server an echo server, blast lat -s?)", addr, bound))
	}
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
