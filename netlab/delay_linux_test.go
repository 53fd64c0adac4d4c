package netlab_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/blastnet/blast/internal/blasttest"
	"github.com/blastnet/blast/internal/testkit"
	"github.com/blastnet/blast/latency"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

func TestMain(m *testing.M) { blasttest.Main(m, true) }

// lat runs `blast lat -J args... B` from A against `blast lat -s -1` in B
// and returns its JSON document.
func lat(t *testing.T, lab *netlab.Lab, dst string, args ...string) latency.JSON {
	t.Helper()
	srv := blasttest.Listening(t, lab.B, "tcp", latency.DefaultPort, blasttest.Bin, "lat", "-s", "-1")
	cli := blasttest.Start(t, lab.A, nil, blasttest.Bin, append([]string{"lat", dst, "-J"}, args...)...)
	if err := cli.WaitErr(time.Minute); err != nil {
		srv.WaitErr(5 * time.Second)
		t.Fatalf("%v: %v\nstdout: %s\nstderr: %s\nserver: %s%s", cli.Cmd.Args, err, cli.Stdout.String(), cli.Stderr.String(), srv.Stdout.String(), srv.Stderr.String())
	}
	srv.Wait(t)
	var doc latency.JSON
	if err := json.Unmarshal(cli.Stdout.Bytes(), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, cli.Stdout.String())
	}
	return doc
}

// TestDelayedRoundTrip measures the round trip across the delay line
// with blast lat, whose figures are whole round trips: Options.Delay is
// the round-trip time the line adds, so no round trip may be shorter (a
// frame never leaves the line early), and none is lost. (That the p50 is
// within 10% of it is the host's to decide: TestTimingDelayedRoundTrip.)
func TestDelayedRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		delay time.Duration
		v6    bool
		udp   bool
		n     int
	}{
		{20 * time.Millisecond, false, false, 50},
		{20 * time.Millisecond, true, false, 50},
		{20 * time.Millisecond, false, true, 50},
		{50 * time.Millisecond, false, false, 30},
	} {
		proto := "tcp"
		if tc.udp {
			proto = "udp"
		}
		t.Run(fmt.Sprintf("%v/%s/v6=%v", tc.delay, proto, tc.v6), func(t *testing.T) {
			t.Parallel()
			lab := labtest.New(t, netlab.Delayed, netlab.Options{Delay: tc.delay})
			dst := lab.B.Addr4.String()
			if tc.v6 {
				dst = lab.B.Addr6.String()
			}
			args := []string{"-n", strconv.Itoa(tc.n), "--warmup", "3"}
			if tc.udp {
				args = append(args, "-u")
			}
			doc := lat(t, lab, dst, args...)
			r := doc.RTT
			t.Logf("%s: round trip min %.2f ms, p50 %.2f ms, max %.2f ms", lab, ms(r.Min), ms(r.P50), ms(r.Max))
			if doc.RoundTrips != int64(tc.n) || doc.Lost != 0 {
				t.Errorf("%d round trips of %d requests, %d lost: want %d, none lost", doc.RoundTrips, doc.Requests, doc.Lost, tc.n)
			}
			if time.Duration(r.Min) < tc.delay {
				t.Errorf("shortest round trip %.2f ms, shorter than the %v the line adds", ms(r.Min), tc.delay)
			}
		})
	}
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// TestDelayedRate runs a blast TCP test through a 50 Mbit/s bottleneck
// with 20 ms of round trip: TCP's goodput is at most 1448/1514 of the
// frames' 50 Mbit/s (47.8), never more than the line lets through. (That
// a sender that fills the path gets close is the host's to decide:
// TestTimingDelayedRate.)
func TestDelayedRate(t *testing.T) {
	lab := labtest.New(t, netlab.Delayed, netlab.Options{Delay: 20 * time.Millisecond, RateMbit: 50})
	got, retrans := delayedRate(t, lab, "1")
	t.Logf("%s: %.1f Mbit/s received, %d retransmits", lab, got, retrans)
	if got > 52 {
		t.Errorf("TCP through a 50 Mbit/s bottleneck: %.1f Mbit/s received, more than the line lets through", got)
	}
}

// delayedRate runs a TCP test of secs across lab and returns the goodput
// in Mbit/s and the retransmits.
func delayedRate(t *testing.T, lab *netlab.Lab, secs string) (float64, int64) {
	t.Helper()
	srv := blasttest.Listening(t, lab.B, "tcp", 5201, blasttest.Bin, "server", "-1")
	cli := blasttest.Start(t, lab.A, nil, blasttest.Bin, "client", lab.B.Addr4.String(), "-t", secs, "-J")
	if err := cli.WaitErr(time.Minute); err != nil {
		srv.WaitErr(5 * time.Second)
		t.Fatalf("blast client: %v\nstdout: %s\nstderr: %s\nserver: %s%s", err, cli.Stdout.String(), cli.Stderr.String(), srv.Stdout.String(), srv.Stderr.String())
	}
	srv.Wait(t)
	var doc struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
			SumSent struct {
				Retransmits int64 `json:"retransmits"`
			} `json:"sum_sent"`
		} `json:"end"`
	}
	if err := json.Unmarshal(cli.Stdout.Bytes(), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, cli.Stdout.String())
	}
	return doc.End.SumReceived.BitsPerSecond / 1e6, doc.End.SumSent.Retransmits
}

// TestDelayedLoss counts lost UDP round trips with 1% loss each way: a
// round trip is lost when either of its two frames is, 1.99% of the time,
// so 5000 of them lose 99.5 on average (standard deviation 9.9). The
// bounds are four deviations out.
func TestDelayedLoss(t *testing.T) {
	lab := labtest.New(t, netlab.Delayed, netlab.Options{LossPct: 1})
	dst := lab.B.Addr4.String()
	// A few TCP round trips first resolve A's and B's addresses (ARP
	// crosses the lossy line too; TCP retries what it loses), so the UDP
	// run does not start with a second of unanswered requests.
	lat(t, lab, dst, "-n", "20")
	const n = 5000
	doc := lat(t, lab, dst, "-u", "-n", strconv.Itoa(n), "--timeout", "0.02")
	lost := doc.Lost - doc.Late // a late reply was delayed (a stalled thread), not lost
	t.Logf("%s: %d of %d round trips lost (%d of them late replies)", lab, doc.Lost, doc.Requests, doc.Late)
	if doc.Requests != n || doc.RoundTrips+doc.Lost != n {
		t.Errorf("%d requests, %d round trips, %d lost: want %d requests, each a round trip or lost", doc.Requests, doc.RoundTrips, doc.Lost, n)
	}
	if lost < 60 || lost > 140 {
		t.Errorf("%d of %d round trips lost, want about 100 (1.99%%)", lost, n)
	}
}

// TestDelayedCloseReleases checks that Close stops the line without
// leaving its sockets, eventfd or goroutines behind.
func TestDelayedCloseReleases(t *testing.T) {
	labtest.RequireRoot(t)
	fds, gs := openFDs(t), runtime.NumGoroutine()
	lab, err := netlab.New(netlab.Delayed, netlab.Options{Delay: 10 * time.Millisecond, RateMbit: 100, LossPct: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := transfer(t, lab, lab.B.Addr6.String(), 1<<20); got != 1<<20 {
		t.Errorf("B received %d bytes, want %d", got, 1<<20)
	}
	if err := lab.Close(); err != nil {
		t.Fatal(err)
	}
	// Every frame the line read carried the kernel's arrival time, and
	// none overflowed its socket (1 MiB of frames in an 8 MiB buffer).
	ab, ba := lab.LineCounts()
	t.Logf("A to B: %v; B to A: %v", ab, ba)
	for _, c := range []netlab.LineCounts{ab, ba} {
		if c.Passed == 0 || c.Unstamped != 0 || c.RingFull != 0 {
			t.Errorf("the line: %v; want frames passed, all with an arrival time, none unread", c)
		}
	}
	if got := openFDs(t); got != fds {
		t.Errorf("%d descriptors open after Close, %d before New", got, fds)
	}
	if !testkit.Eventually(30*time.Second, func() bool { return runtime.NumGoroutine() <= gs }) {
		t.Errorf("%d goroutines after Close, %d before New", runtime.NumGoroutine(), gs)
	}
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// BenchmarkDelayedTransfer measures what one TCP connection moves from A
// to B through the delay line with no delay, rate or loss: the relay's
// own throughput (compare BenchmarkDirectTransfer, the bare veth pair).
func BenchmarkDelayedTransfer(b *testing.B) { benchTransfer(b, netlab.Delayed) }

// BenchmarkDirectTransfer is BenchmarkDelayedTransfer without the line.
func BenchmarkDirectTransfer(b *testing.B) { benchTransfer(b, netlab.Direct) }

func benchTransfer(b *testing.B, topo netlab.Topology) {
	lab := labtest.New(b, topo, netlab.Options{})
	var ln net.Listener
	if err := lab.B.Do(func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(lab.B.Addr4.String(), "0"))
		return err
	}); err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- -1
			return
		}
		defer c.Close()
		n, _ := io.Copy(io.Discard, c)
		got <- n
	}()
	var c net.Conn
	if err := lab.A.Do(func() (err error) {
		c, err = net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)))
	var sent int64
	for b.Loop() {
		n, err := c.Write(buf)
		sent += int64(n)
		if err != nil {
			b.Fatal(err)
		}
	}
	c.Close()
	if n := <-got; n != sent {
		b.Errorf("B received %d bytes of %d", n, sent)
	}
}
