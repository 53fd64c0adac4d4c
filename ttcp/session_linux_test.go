package ttcp_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/internal/clock"
	"github.com/blastnet/blast/internal/testkit"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/ttcp"
)

// session runs n transfers of c's end in a Session, each waited for at
// most wait after the first on clk (nil: the real clock), and sends what
// Next returned on the channel (the bytes of each, -1 for ErrNoTransfer,
// then closes it).
func session(t *testing.T, c ttcp.Config, n int, wait time.Duration, clk clock.Clock, errs chan<- error) <-chan int64 {
	t.Helper()
	s, err := ttcp.NewSession(c)
	if err != nil {
		t.Fatal(err)
	}
	s.Clock = clk
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	got := make(chan int64, n+1)
	go func() {
		defer cancel()
		defer close(got)
		defer s.Close()
		for range n {
			res, err := s.Next(ctx, wait)
			if errors.Is(err, ttcp.ErrNoTransfer) {
				got <- -1
				return
			}
			if err != nil {
				errs <- err
				return
			}
			got <- res.Bytes
		}
	}()
	return got
}

// TestSessionRepeat: a receiver Session takes three transfers on one
// listener, each counted exactly, and a transmitter Session makes them,
// connecting once per transfer; each transfer prints ttcp's lines.
func TestSessionRepeat(t *testing.T) {
	port := testkit.FreePort(t)
	var rout, rerr, tout, terr bytes.Buffer
	rc := config(false, port, func(c *ttcp.Config) { c.SinkMode, c.Stdout, c.Stderr = true, &rout, &rerr })
	errs := make(chan error, 2)
	rx := session(t, rc, 3, 0, nil, errs)
	waitPort(t, port)
	tc := config(true, port, func(c *ttcp.Config) {
		c.SinkMode, c.Host, c.NBuf, c.Stdout, c.Stderr = true, "127.0.0.1", 100, &tout, &terr
	})
	tx := session(t, tc, 3, 0, nil, errs)
	var sent, received []int64
	for b := range tx {
		sent = append(sent, b)
	}
	for b := range rx {
		received = append(received, b)
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	want := []int64{100 * 8192, 100 * 8192, 100 * 8192}
	if !slices.Equal(sent, want) || !slices.Equal(received, want) {
		t.Errorf("sent %v, received %v; want %v each", sent, received, want)
	}
	if n := strings.Count(rerr.String(), "blast-r: accept from 127.0.0.1\n"); n != 3 {
		t.Errorf("the receiver accepted %d times, want 3:\n%s", n, rerr.String())
	}
	if n := strings.Count(terr.String(), "blast-t: connect\n"); n != 3 {
		t.Errorf("the transmitter connected %d times, want 3:\n%s", n, terr.String())
	}
	if n := strings.Count(rout.String(), "blast-r: 819200 bytes in "); n != 3 {
		t.Errorf("the receiver reported %d transfers of 819200 bytes, want 3:\n%s", n, rout.String())
	}
}

// TestSessionWait: the end that listens, asked for more transfers than
// come, gives up wait after the last one with ErrNoTransfer, and its
// port is free again. The wait is on a fake clock: it passes when the
// test moves the clock, once the receiver waits for its third transfer.
func TestSessionWait(t *testing.T) {
	port := testkit.FreePort(t)
	rc := config(false, port, func(c *ttcp.Config) { c.SinkMode, c.Stdout, c.Stderr = true, new(bytes.Buffer), new(bytes.Buffer) })
	errs := make(chan error, 2)
	clk := clock.NewFake()
	const wait = 300 * time.Millisecond
	rx := session(t, rc, 10, wait, clk, errs)
	waitPort(t, port)
	tc := config(true, port, func(c *ttcp.Config) {
		c.SinkMode, c.Host, c.NBuf, c.Stdout, c.Stderr = true, "127.0.0.1", 10, new(bytes.Buffer), new(bytes.Buffer)
	})
	for b := range session(t, tc, 2, 0, nil, errs) {
		if b != 10*8192 {
			t.Errorf("sent %d bytes, want %d", b, 10*8192)
		}
	}
	var got []int64
	for range 2 {
		select {
		case b := <-rx:
			got = append(got, b)
		case err := <-errs:
			t.Fatal(err)
		}
	}
	// The receiver waits for a third transfer: its wait is armed, due
	// wait from now.
	select {
	case <-clk.Armed(1):
	case <-time.After(time.Minute):
		t.Fatal("the receiver armed no wait for its third transfer")
	}
	if due, ok := clk.Next(); !ok || due != clk.Now().Add(wait) {
		t.Errorf("the wait is due at %v, want %v", due, clk.Now().Add(wait))
	}
	select {
	case b := <-rx:
		t.Fatalf("the receiver gave %d before its wait passed", b)
	default:
	}
	clk.Advance(wait)
	for b := range rx {
		got = append(got, b)
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	if want := []int64{10 * 8192, 10 * 8192, -1}; !slices.Equal(got, want) {
		t.Errorf("the receiver's transfers: %v, want %v (-1: ErrNoTransfer)", got, want)
	}
	// The listener is closed: the port binds again.
	rc.Stdout, rc.Stderr = new(bytes.Buffer), new(bytes.Buffer)
	s, err := ttcp.NewSession(rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := s.Next(ctx, 0); done <- err }()
	waitPort(t, port)
	cancel()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "interrupted while waiting for the transmitter") {
		t.Errorf("a second session on the port: %v, want it to listen until interrupted", err)
	}
	s.Close()
}

// TestSessionUDPRefused: ttcp's UDP cannot carry several transfers.
func TestSessionUDPRefused(t *testing.T) {
	c := config(false, 5001, func(c *ttcp.Config) { c.UDP, c.SinkMode = true, true })
	_, err := ttcp.NewSession(c)
	if !ttcp.IsUsage(err) || !strings.Contains(err.Error(), "TCP only") {
		t.Errorf("NewSession with -u: %v, want a usage error saying TCP only", err)
	}
}

func waitPort(t *testing.T, port int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := netlab.WaitPort(ctx, os.Getpid(), "tcp", port); err != nil {
		t.Fatal(err)
	}
}
