//go:build timing

package control

import (
	"fmt"
	"math"
	"testing"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/internal/timingcheck"
)

// The timing side of the UDP interop tests (udp_interop_test.go) against
// Debian's iperf3 on loopback: how much a paced test loses with blast at
// one end, next to iperf3 at both, and the rate the receiver sees.

// TestTimingUDPLossAgainstIperf3: a paced UDP test on loopback, slow
// enough to lose nothing, loses no more with a blast client (against
// iperf3 -s) or a blast server (against iperf3 -c) than iperf3 loses
// against itself, measured in the same run.
func TestTimingUDPLossAgainstIperf3(t *testing.T) {
	needIperf3(t)
	for _, tc := range udpCases {
		if !tc.paced {
			continue
		}
		tc := tc.withDuration(1)
		t.Run(tc.name, func(t *testing.T) {
			_, port, log := blastServer(t, ServerConfig{})
			seen := 0
			for _, side := range []string{"a blast client against iperf3 -s", "iperf3 -c against a blast server"} {
				checkTiming(t, side, timingcheck.Property{
					Name:  fmt.Sprintf("UDP %s, %s: datagrams lost beyond what iperf3 against itself loses", tc.name, side),
					Unit:  "% of those sent (points)",
					Bound: "at most 0.1",
					Holds: func(m float64) bool { return m <= 0.1 },
					Measure: func(t *testing.T, run int) (float64, error) {
						ref := iperf3LossPct(t, tc, iperf3PairDoc(t, tc))
						var got float64
						if side[0] == 'a' {
							iport, wait := iperf3ServerArgs(t, "127.0.0.1")
							cfg := tc.cfg
							cfg.Port = iport
							r := runClient(t, cfg)
							wait()
							got = blastLossPct(tc, r)
						} else {
							iperf3Client(t, port, tc.args...)
							res := log.wait(t, seen+1)[seen]
							seen++
							if res.Err != nil {
								return 0, fmt.Errorf("server: %w", res.Err)
							}
							got = blastLossPct(tc, res)
						}
						t.Logf("run %d: blast's side lost %.3f%%, iperf3 against itself %.3f%%", run+1, got, ref)
						return got - ref, nil
					},
				})
			}
		})
	}
}

// TestTimingUDPRate: the receiver of a paced test (UDP, and TCP with -b)
// on loopback sees the rate asked for, within 5%, with a blast client
// against iperf3 -s and with iperf3 -c against a blast server (which
// paces what it sends to the client's -b).
func TestTimingUDPRate(t *testing.T) {
	needIperf3(t)
	for _, tc := range udpCases {
		if tc.rate == 0 {
			continue
		}
		secs := 2
		switch {
		case tc.blk == 0:
			secs = 3
		case tc.name == "counters64":
			secs = 1
		}
		tc := tc.withDuration(secs)
		t.Run(tc.name, func(t *testing.T) {
			_, port, log := blastServer(t, ServerConfig{})
			seen := 0
			for _, side := range []string{"a blast client against iperf3 -s", "iperf3 -c against a blast server"} {
				checkTiming(t, side, timingcheck.Property{
					Name:  fmt.Sprintf("%s -t %d, %s: the rate received (the direction furthest off)", tc.name, secs, side),
					Unit:  fmt.Sprintf("%% of %g Mbit/s", tc.rate/1e6),
					Bound: "95 to 105",
					Holds: func(m float64) bool { return m >= 95 && m <= 105 },
					Measure: func(t *testing.T, run int) (float64, error) {
						var rates []float64
						if side[0] == 'a' {
							iport, wait := iperf3ServerArgs(t, "127.0.0.1")
							cfg := tc.cfg
							cfg.Port = iport
							r := runClient(t, cfg)
							wait()
							for _, up := range []bool{true, false} {
								if (up && !tc.up) || (!up && !tc.down) {
									continue
								}
								var bytes int64
								var secs float64
								for _, st := range r.Streams {
									if r.Upstream(st.Sender) == up {
										b, sec := st.ReceivedBytes()
										bytes += b
										secs = max(secs, sec)
									}
								}
								rates = append(rates, 8*float64(bytes)/secs)
							}
						} else {
							cli := iperf3Client(t, port, tc.args...)
							if res := log.wait(t, seen+1)[seen]; res.Err != nil {
								return 0, fmt.Errorf("server: %w", res.Err)
							}
							seen++
							rates = append(rates, cli.End.SumReceived.BitsPerSecond)
							if tc.up && tc.down {
								if cli.End.SumReceivedBidirReverse == nil {
									return 0, fmt.Errorf("no sum_received_bidir_reverse")
								}
								rates = append(rates, cli.End.SumReceivedBidirReverse.BitsPerSecond)
							}
						}
						worst := 100.0
						for _, r := range rates {
							if pct := 100 * r / tc.rate; math.Abs(pct-100) > math.Abs(worst-100) {
								worst = pct
							}
						}
						t.Logf("run %d: received %v bit/s", run+1, rates)
						return worst, nil
					},
				})
			}
		})
	}
}

// iperf3PairDoc runs the case's iperf3 client against iperf3 -s and
// returns the client's document.
func iperf3PairDoc(t *testing.T, tc udpCase) *iperfJSON {
	t.Helper()
	port, wait := iperf3ServerArgs(t, "127.0.0.1")
	d := iperf3Client(t, port, tc.args...)
	wait()
	return d
}

// iperf3Tail is how many datagrams of a stream an iperf3 receiver may
// leave uncounted: it stops counting when its own clock ends the test,
// and the datagrams then in its socket (20 ms of them) go uncounted.
func iperf3Tail(tc udpCase) int64 {
	return int64(tc.cfg.Rate*0.02/8/float64(tc.blk)) + 1
}

// iperf3LossPct is what an iperf3 client's document says was lost, both
// ways, in percent of the datagrams sent.
func iperf3LossPct(t *testing.T, tc udpCase, d *iperfJSON) float64 {
	t.Helper()
	var sent, lost int64
	pairs := [][2]*iperfSum{{d.End.SumSent, d.End.SumReceived}}
	if tc.up && tc.down {
		pairs = append(pairs, [2]*iperfSum{d.End.SumSentBidirReverse, d.End.SumReceivedBidirReverse})
	}
	for _, p := range pairs {
		if p[0] == nil || p[1] == nil {
			t.Fatalf("iperf3's sums missing: %+v", d.End)
		}
		streams := int64(tc.streams)
		if tc.up && tc.down {
			streams = 1
		}
		sent += p[0].Packets
		lost += p[1].LostPackets + max(p[0].Packets-p[1].Packets-streams*iperf3Tail(tc), 0)
	}
	return 100 * float64(lost) / float64(max(sent, 1))
}

// blastLossPct is what a blast Result against iperf3 says was lost, both
// ways, in percent of the datagrams sent: the gaps in the sequence
// numbers, and what the receiver never saw past the last one it did
// (beyond iperf3's tail, where iperf3 received).
func blastLossPct(tc udpCase, r *result.Result) float64 {
	var sent, lost int64
	for _, st := range r.Streams {
		snd, rcv := st.UDP, st.PeerUDP
		tail := iperf3Tail(tc) // the receiver is iperf3
		if !st.Sender {
			snd, rcv, tail = st.PeerUDP, st.UDP, 0
		}
		if snd == nil || rcv == nil {
			continue
		}
		sent += snd.Packets
		lost += rcv.Lost + max(snd.Packets-rcv.Packets-tail, 0)
	}
	return 100 * float64(lost) / float64(max(sent, 1))
}
