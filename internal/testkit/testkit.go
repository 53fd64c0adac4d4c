// Package testkit holds the small helpers tests of several packages share:
// a free loopback port, a buffer that goroutines write to at once, and a
// CSV reader that checks the shape of what a renderer wrote.
package testkit

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// FreePort returns a TCP port that was free on every address a moment
// ago, drawn below the kernel's ephemeral range as FreePorts does: a
// port the kernel handed out (127.0.0.1:0) is one it hands out again, as
// the source port of any connection a test beside this one makes, and
// the listener that comes after finds it taken (make test-stress: a ttcp
// receiver never listened, 1 run of 5).
func FreePort(tb testing.TB) int {
	tb.Helper()
	return FreePorts(tb, 1)
}

// FreePorts returns the first of n consecutive TCP ports that were free
// on every address a moment ago. They are drawn below the kernel's
// ephemeral range (net.ipv4.ip_local_port_range, 32768 and up by
// default), so the connections of tests running beside this one, whose
// ports the kernel picks from that range, cannot take them.
func FreePorts(tb testing.TB, n int) int {
	tb.Helper()
	for try := 0; try < 100; try++ {
		first := 20000 + rand.IntN(12000-n)
		var lns []net.Listener
		ok := true
		for p := first; p < first+n; p++ {
			ln, err := net.Listen("tcp", fmt.Sprintf(":%d", p))
			if err != nil {
				ok = false
				break
			}
			lns = append(lns, ln)
		}
		for _, ln := range lns {
			ln.Close()
		}
		if ok {
			return first
		}
	}
	tb.Fatalf("no %d consecutive free ports in 20000-31999", n)
	return 0
}

// SyncBuffer is a bytes.Buffer several goroutines may write to and read.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Reset empties the buffer.
func (s *SyncBuffer) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Reset()
}

// ReadCSV parses what a CSV renderer wrote and checks its shape: it must
// parse, its first line must be header, and every row must be as long.
// It returns the rows after the header.
func ReadCSV(tb testing.TB, s string, header []string) [][]string {
	tb.Helper()
	cr := csv.NewReader(strings.NewReader(s))
	cr.FieldsPerRecord = -1 // checked here, to say which row
	recs, err := cr.ReadAll()
	if err != nil {
		tb.Fatalf("the output does not parse as CSV: %v", err)
	}
	if len(recs) == 0 {
		tb.Fatal("no header")
	}
	if !slices.Equal(recs[0], header) {
		tb.Fatalf("header %q, want %q", recs[0], header)
	}
	for i, rec := range recs[1:] {
		if len(rec) != len(header) {
			tb.Fatalf("row %d has %d fields, the header %d: %q", i+1, len(rec), len(header), rec)
		}
	}
	return recs[1:]
}

// WaitFor waits until cond holds, checking it every few milliseconds, and
// fails the test (naming what) when it still does not after bound. It is
// how a test waits for an event it cannot be told of (a file written, a
// counter reaching a value, a process gone): the bound is generous, as a
// busy host may take long, and holding never takes longer than the event.
func WaitFor(tb testing.TB, bound time.Duration, what string, cond func() bool) {
	tb.Helper()
	if !Eventually(bound, cond) {
		tb.Fatalf("waited %v for %s", bound, what)
	}
}

// Eventually reports whether cond held within bound (checked every few
// milliseconds), for a test that says itself what went wrong.
func Eventually(bound time.Duration, cond func() bool) bool {
	if cond() {
		return true
	}
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for {
		select {
		case <-tick.C:
			if cond() {
				return true
			}
		case <-deadline.C:
			return cond()
		}
	}
}

// UDPFrom is a UDP socket bound to the loopback address from (127.0.0.0/8:
// a source of its own), connected to port on 127.0.0.1, closed when the
// test ends.
func UDPFrom(tb testing.TB, from string, port int) *net.UDPConn {
	tb.Helper()
	c, err := net.DialUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(from), 0)),
		net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// Serve runs serve (a server's Serve) until the test ends: then its
// context is cancelled, and the test waits for it to return.
func Serve(tb testing.TB, serve func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { serve(ctx); close(done) }()
	tb.Cleanup(func() { cancel(); <-done })
}
