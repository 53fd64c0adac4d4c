package control

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/internal/testkit"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

// shapedCeiling is the most TCP goodput a 100 Mbit/s tbf lets through on
// a 1500-byte MTU: 1448 bytes of payload in each 1514-byte frame it
// counts.
const shapedCeiling = 100e6 * 1448 / 1514

// shapeBoth puts a 100 Mbit/s token bucket on the egress of both lab
// hosts: every direction is limited far below what the host can move,
// so what the figures may not exceed holds on a busy host too.
func shapeBoth(t *testing.T, lab *netlab.Lab) {
	t.Helper()
	for _, h := range []*netlab.Host{lab.A, lab.B} {
		if out, err := h.Command("tc", "qdisc", "add", "dev", h.Iface, "root", "tbf", "rate", "100mbit", "burst", "64kb", "latency", "50ms").CombinedOutput(); err != nil {
			t.Fatalf("tc on %s: %v: %s", h.Iface, err, out)
		}
	}
}

// intervalSlack is how far above the link a 1 s interval may go in a
// test: a busy host holds packets that left the shaper in the receiver's
// backlog until it gives the stack CPU time, and the receiving kernel
// (tcpi_bytes_received) then takes in 106% of the shaper's rate in a 1 s
// interval, measured with six busy loops on 2 CPUs; no count at an end
// host can be held to the shaper's rate over so short a window there.
// Within 2% on a quiet host is a timing property
// (TestTimingShapedIntervals). A summary spans the test's time, which the
// end sample cuts at the end: it is held to 2% on any host.
const intervalSlack = 1.2

// checkWithinLink fails when a rate r reports (each stream's and each
// direction's summary, its own figures and, with peerToo, the peer's)
// exceeds the link's goodput ceiling by more than 2%, or an interval by
// more than intervalSlack; or when its intervals do not add up to its
// summary exactly. An iperf3 peer's figures are iperf3's, not blast's:
// its sender counts what it wrote, queued or not.
func checkWithinLink(t *testing.T, who string, r *result.Result, ceiling float64, peerToo bool) {
	t.Helper()
	check := func(limit float64, what string, bytes int64, secs float64) {
		if secs <= 0 || bytes <= 0 {
			return
		}
		if bps := 8 * float64(bytes) / secs; bps > limit {
			t.Errorf("%s: %s: %d bytes in %.3f s = %.2f Mbit/s, over the link's %.2f (+%.0f%%)", who, what, bytes, secs, bps/1e6, ceiling/1e6, 100*(limit/ceiling-1))
		}
	}
	over := func(what string, bytes int64, secs float64) { check(ceiling*1.02, what, bytes, secs) }
	for _, sender := range []bool{true, false} {
		var bytes, peer int64
		var secs, peerSecs float64
		n := 0
		for _, st := range r.Streams {
			if st.Sender != sender {
				continue
			}
			n++
			over(fmt.Sprintf("stream %d's summary (sender %v)", st.ID, st.Sender), st.Bytes, st.Seconds)
			if peerToo {
				over(fmt.Sprintf("stream %d's peer summary", st.ID), st.PeerBytes, st.PeerSeconds)
			}
			bytes += st.Bytes
			secs = max(secs, st.Seconds)
			if st.PeerBytes > 0 {
				peer += st.PeerBytes
				peerSecs = max(peerSecs, st.PeerSeconds)
			}
			var sum int64
			for _, iv := range r.Intervals {
				for _, si := range iv.Streams {
					if si.ID == st.ID && !si.Omitted {
						sum += si.Bytes
					}
				}
			}
			if len(r.Intervals) > 0 && sum != st.Bytes {
				t.Errorf("%s: stream %d's intervals add up to %d bytes, its summary says %d", who, st.ID, sum, st.Bytes)
			}
		}
		if n == 0 {
			continue
		}
		over(fmt.Sprintf("the summary of the streams with sender %v", sender), bytes, secs)
		if peerToo {
			over(fmt.Sprintf("the peer's summary of the streams with sender %v", sender), peer, peerSecs)
		}
		for i, iv := range r.Intervals {
			b, s := intervalSum(iv, sender)
			if s <= 0 {
				t.Errorf("%s: interval %d is %.3f s long", who, i, s)
			}
			check(ceiling*intervalSlack, fmt.Sprintf("interval %d (%.2f-%.2f s) of the streams with sender %v", i, iv.Streams[0].Start, iv.Streams[0].End, sender), b, s)
		}
	}
}

// intervalSum is an interval's bytes on the streams that send (or
// receive, sender false) on this side, and its length.
func intervalSum(iv *result.Interval, sender bool) (bytes int64, secs float64) {
	for _, si := range iv.Streams {
		if si.Sender == sender {
			bytes += si.Bytes
			secs = si.End - si.Start
		}
	}
	return bytes, secs
}

// maxIntervalRate is the highest rate of any interval of r, either
// direction, in bit/s.
func maxIntervalRate(r *result.Result) float64 {
	top := 0.0
	for _, iv := range r.Intervals {
		for _, sender := range []bool{true, false} {
			if b, s := intervalSum(iv, sender); s > 0 {
				top = max(top, 8*float64(b)/s)
			}
		}
	}
	return top
}

// On a link shaped to 100 Mbit/s both ways, TCP and UDP (offered at twice
// the link, the sender's own shaper holding it back), no rate a blast
// client or server reports exceeds what the link carries: a receiver's window is
// the test's time, and what was still queued on the path when the time
// was up is reported apart (drained), never folded into the last
// interval.
func TestLabShapedRates(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	shapeBoth(t, lab)
	port, rl := labServer(t, lab, ServerConfig{Interval: time.Second})
	n := 0
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"forward", Config{}},
		{"reverse", Config{Reverse: true}},
		{"bidir", Config{Bidir: true}},
		{"P4", Config{Parallel: 4}},
		{"reverse P2", Config{Reverse: true, Parallel: 2}},
		{"udp forward", shapedUDP(Config{})},
		{"udp reverse", shapedUDP(Config{Reverse: true})},
		{"udp bidir", shapedUDP(Config{Bidir: true})},
		{"udp P4", shapedUDP(Config{Parallel: 4})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Host, cfg.Port, cfg.Duration, cfg.Interval, cfg.NoNIC = lab.B.Addr4.String(), port, 3*time.Second, time.Second, true
			ceiling := shapedCeiling
			if cfg.UDP {
				ceiling = udpShapedCeiling
			}
			var r *result.Result
			if err := lab.A.Do(func() (err error) {
				r, err = Run(context.Background(), cfg)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			n++
			s := rl.wait(t, n)[n-1]
			checkWithinLink(t, "client", r, ceiling, true)
			checkWithinLink(t, "server", s, ceiling, true)
			if cfg.UDP {
				return
			}
			// TCP loses nothing: what the receiver counted in the
			// test and after it is what the sender wrote.
			for i, c := range r.Streams {
				snd, rcv := c, s.Streams[i]
				if !c.Sender {
					snd, rcv = rcv, snd
				}
				if rcv.Drained == nil {
					t.Errorf("stream %d: nothing drained after the end of a test through a shaper's queue", c.ID)
					continue
				}
				if got := rcv.Bytes + rcv.Drained.Bytes; got != snd.IO.Bytes {
					t.Errorf("stream %d: sender wrote %d, receiver got %d in the test and %d after", c.ID, snd.IO.Bytes, rcv.Bytes, rcv.Drained.Bytes)
				}
				// A TCP sender counts what was acknowledged: the
				// receiver had it in the test's time or soon after.
				if snd.Bytes > snd.IO.Bytes || snd.Bytes > rcv.Bytes+rcv.Drained.Bytes || snd.Bytes < snd.IO.Bytes/2 {
					t.Errorf("stream %d: sender counts %d acknowledged of %d written", c.ID, snd.Bytes, snd.IO.Bytes)
				}
			}
		})
	}
}

// runIperf3 runs iperf3 with args inside h and returns its output; it
// is killed after a minute (a test of seconds that has not ended by then
// hangs).
func runIperf3(t *testing.T, h *netlab.Host, args ...string) string {
	t.Helper()
	c := h.Command(needIperf3(t), args...)
	var out strings.Builder
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("iperf3 %v: %v\n%s", args, err, out.String())
		}
	case <-time.After(time.Minute):
		c.Process.Kill()
		<-done
		t.Fatalf("iperf3 %v did not end in a minute:\n%s", args, out.String())
	}
	return out.String()
}

// The same link against iperf3 at either end (Debian's 3.12, or the one
// $BLAST_IPERF3 names, such as a 3.21 built from source), TCP and UDP: a
// blast server measuring iperf3 clients, and a blast client measuring an
// iperf3 server. blast's own figures stay within the link, every one,
// and its intervals add up to its summaries.
func TestLabShapedRatesIperf3(t *testing.T) {
	needIperf3(t)
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	shapeBoth(t, lab)
	udp := []string{"-u", "-b", "200M", "-l", "1400"}
	modes := []struct {
		name    string
		args    []string
		cfg     Config
		ceiling float64
	}{
		{"forward", nil, Config{}, shapedCeiling},
		{"reverse", []string{"-R"}, Config{Reverse: true}, shapedCeiling},
		{"bidir", []string{"--bidir"}, Config{Bidir: true}, shapedCeiling},
		{"P4", []string{"-P", "4"}, Config{Parallel: 4}, shapedCeiling},
		{"udp forward", udp, shapedUDP(Config{}), udpShapedCeiling},
		{"udp reverse", append([]string{"-R"}, udp...), shapedUDP(Config{Reverse: true}), udpShapedCeiling},
		{"udp bidir", append([]string{"--bidir"}, udp...), shapedUDP(Config{Bidir: true}), udpShapedCeiling},
		{"udp P4", []string{"-u", "-b", "50M", "-l", "1400", "-P", "4"}, shapedUDP(Config{Parallel: 4}), udpShapedCeiling},
	}
	t.Run("blast server", func(t *testing.T) {
		port, rl := labServer(t, lab, ServerConfig{Interval: time.Second})
		for n, m := range modes {
			t.Run(m.name, func(t *testing.T) {
				runIperf3(t, lab.A, append([]string{"-c", lab.B.Addr4.String(), "-p", strconv.Itoa(port), "-t", "3"}, m.args...)...)
				checkWithinLink(t, "server", rl.wait(t, n+1)[n], m.ceiling, false)
			})
		}
	})
	t.Run("blast client", func(t *testing.T) {
		for _, m := range modes {
			t.Run(m.name, func(t *testing.T) {
				port := testkit.FreePort(t)
				srv := lab.B.Command(needIperf3(t), "-s", "-1", "-B", lab.B.Addr4.String(), "-p", strconv.Itoa(port))
				var out strings.Builder
				srv.Stdout, srv.Stderr = &out, &out
				if err := srv.Start(); err != nil {
					t.Fatal(err)
				}
				exited := make(chan error, 1)
				go func() { exited <- srv.Wait() }()
				t.Cleanup(func() {
					select {
					case <-exited:
					default:
						srv.Process.Kill()
						<-exited
					}
				})
				// Listening, seen without a connection (iperf3 -s -1
				// would count one as its test).
				want := fmt.Sprintf(":%d ", port)
				testkit.WaitFor(t, 30*time.Second, "iperf3 -s listening in the lab", func() bool {
					b, _ := lab.B.Command("ss", "-Htln").Output()
					return strings.Contains(string(b), want)
				})
				cfg := m.cfg
				cfg.Host, cfg.Port, cfg.Duration, cfg.Interval, cfg.NoNIC = lab.B.Addr4.String(), port, 3*time.Second, time.Second, true
				var r *result.Result
				if err := lab.A.Do(func() (err error) {
					r, err = Run(context.Background(), cfg)
					return err
				}); err != nil {
					t.Fatalf("%v\niperf3 -s: %s", err, out.String())
				}
				checkWithinLink(t, "client", r, m.ceiling, false)
			})
		}
	})
}

// shapedUDP is c as UDP offered at twice what the shaped link carries,
// 200 Mbit/s over its streams, in 1400-byte datagrams (iperf3's -u -b
// 200M -l 1400, per stream at -P 1).
func shapedUDP(c Config) Config {
	c.UDP, c.Rate, c.RateSet, c.BlockLen = true, 200e6/float64(max(c.Parallel, 1)), true, 1400
	return c
}

// udpShapedCeiling is the most UDP goodput a 100 Mbit/s tbf lets through
// with 1400-byte datagrams: 1400 bytes of payload in each 1442-byte frame
// (IPv4, UDP and Ethernet headers) it counts.
const udpShapedCeiling = 100e6 * 1400 / 1442
