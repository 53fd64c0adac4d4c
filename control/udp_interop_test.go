package control

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// UDP (and paced TCP) against Debian's iperf3 on loopback, both ways.

type udpCase struct {
	name    string
	cfg     Config   // blast client side
	args    []string // iperf3 client side
	streams int      // data streams
	blk     int      // datagram size
	up      bool     // the client sends
	down    bool     // the server sends
	// paced: slow enough that loopback loses nothing, so every datagram
	// sent must be counted, and none lost.
	paced bool
	// rate: the bitrate each direction must hold, ±5% (0: not checked).
	rate float64
	// bytes: what each sending direction moves (-n, -k); blast moves it
	// exactly.
	bytes int64
}

// The paced cases give the receivers -w 1M: iperf3 3.12 reads its streams
// on one thread, and on a shared machine that thread is sometimes not run
// for longer than the default 208 KiB buffer covers at these rates. The
// cases check blast's pacing and protocol, not the peer's buffer.
var udpCases = []udpCase{
	{name: "b100M", cfg: Config{UDP: true, Rate: 100e6, RateSet: true, BlockLen: 1400, Duration: 2 * time.Second, Window: 1 << 20},
		args: []string{"-u", "-b", "100M", "-l", "1400", "-t", "2", "-w", "1M"}, streams: 1, blk: 1400, up: true, paced: true, rate: 100e6},
	{name: "b0-l64", cfg: Config{UDP: true, RateSet: true, BlockLen: 64, Duration: time.Second},
		args: []string{"-u", "-b", "0", "-l", "64", "-t", "1"}, streams: 1, blk: 64, up: true},
	{name: "reverse", cfg: Config{UDP: true, Rate: 100e6, RateSet: true, BlockLen: 1400, Duration: 2 * time.Second, Reverse: true, Window: 1 << 20},
		args: []string{"-u", "-b", "100M", "-l", "1400", "-t", "2", "-R", "-w", "1M"}, streams: 1, blk: 1400, down: true, paced: true, rate: 100e6},
	{name: "P3", cfg: Config{UDP: true, Rate: 20e6, RateSet: true, BlockLen: 1200, Duration: 2 * time.Second, Parallel: 3, Window: 1 << 20},
		args: []string{"-u", "-b", "20M", "-l", "1200", "-t", "2", "-P", "3", "-w", "1M"}, streams: 3, blk: 1200, up: true, paced: true, rate: 60e6},
	{name: "bidir", cfg: Config{UDP: true, Rate: 50e6, RateSet: true, BlockLen: 1400, Duration: 2 * time.Second, Bidir: true, Window: 1 << 20},
		args: []string{"-u", "-b", "50M", "-l", "1400", "-t", "2", "--bidir", "-w", "1M"}, streams: 2, blk: 1400, up: true, down: true, paced: true, rate: 50e6},
	{name: "n5M-b1G", cfg: Config{UDP: true, Rate: 1e9, RateSet: true, BlockLen: 1400, Bytes: 5 << 20},
		args: []string{"-u", "-b", "1G", "-l", "1400", "-n", "5M"}, streams: 1, blk: 1400, up: true, bytes: 5 << 20},
	// An iperf3 client receiving a block count waits for the last block:
	// a datagram its socket dropped would hang it, so -w gives it room.
	{name: "k1K-b1G-reverse", cfg: Config{UDP: true, Rate: 1e9, RateSet: true, BlockLen: 1400, Blocks: 1024, Reverse: true, Window: 1 << 20},
		args: []string{"-u", "-b", "1G", "-l", "1400", "-k", "1K", "-R", "-w", "1M"}, streams: 1, blk: 1400, down: true, bytes: 1024 * 1400},
	// 100 datagrams back to back take about 230 KB of a receive buffer
	// (truesize): more than the default 208 KiB, so a receiver that is
	// not scheduled during a burst drops its tail. -w gives it room: the
	// case checks the pacing of bursts, not the peer's buffer.
	{name: "burst", cfg: Config{UDP: true, Rate: 200e6, RateSet: true, Burst: 100, BlockLen: 1400, Duration: 2 * time.Second, Window: 1 << 20},
		args: []string{"-u", "-b", "200M/100", "-l", "1400", "-t", "2", "-w", "1M"}, streams: 1, blk: 1400, up: true, rate: 200e6},
	{name: "counters64", cfg: Config{UDP: true, Rate: 50e6, RateSet: true, BlockLen: 1400, Duration: time.Second, UDP64: true},
		args: []string{"-u", "-b", "50M", "-l", "1400", "-t", "1", "--udp-counters-64bit"}, streams: 1, blk: 1400, up: true, paced: true, rate: 50e6},
	{name: "tcp-reverse-b5M", cfg: Config{Rate: 5e6, RateSet: true, BlockLen: 32 << 10, Duration: 3 * time.Second, Reverse: true},
		args: []string{"-b", "5M", "-l", "32K", "-t", "3", "-R"}, streams: 1, down: true, rate: 5e6},
	{name: "tcp-bidir-b5M", cfg: Config{Rate: 5e6, RateSet: true, BlockLen: 32 << 10, Duration: 3 * time.Second, Bidir: true},
		args: []string{"-b", "5M", "-l", "32K", "-t", "3", "--bidir"}, streams: 2, up: true, down: true, rate: 5e6},
}

// checkBlastUDP checks a blast Result of a UDP test against the case: the
// datagram counts of each stream, as this side counted them and as the
// peer reported its own, agree with each other and with the bytes.
func checkBlastUDP(t checker, who string, r *Result, tc udpCase) {
	t.Helper()
	if len(r.Streams) != tc.streams {
		t.Fatalf("%s: %d streams, want %d", who, len(r.Streams), tc.streams)
	}
	if tc.blk == 0 { // TCP
		return
	}
	for _, st := range r.Streams {
		snd, rcv := st.UDP, st.PeerUDP
		rb, _ := st.ReceivedBytes()
		if !st.Sender {
			snd, rcv = st.PeerUDP, st.UDP
		}
		if snd == nil || rcv == nil {
			t.Errorf("%s: stream %d: datagram counts missing (sender %v, receiver %v)", who, st.ID, snd, rcv)
			continue
		}
		// Every datagram the receiver counted carried a full header: its
		// bytes are what the sequence numbers say arrived.
		if got, want := (rb+int64(tc.blk)-1)/int64(tc.blk), rcv.Packets-rcv.Lost; rcv.OutOfOrder == 0 && got != want {
			t.Errorf("%s: stream %d: %d bytes received are %d datagrams, the receiver's counts say %d (%d packets, %d lost)",
				who, st.ID, rb, got, want, rcv.Packets, rcv.Lost)
		}
		if rcv.Packets > snd.Packets || rcv.Packets <= 0 {
			t.Errorf("%s: stream %d: sent %d datagrams, the receiver saw up to number %d", who, st.ID, snd.Packets, rcv.Packets)
		}
		// iperf3 stops counting when its own clock ends the test, and
		// the datagrams then in its socket go uncounted: 20 ms of them.
		tail := int64(0)
		if st.Sender && r.RemoteBackend == "" && tc.rate > 0 {
			tail = int64(tc.rate/float64(tc.streams)*0.02/8/float64(tc.blk)) + 1
		}
		if tc.paced && (rcv.Lost != 0 || rcv.Packets > snd.Packets || rcv.Packets < snd.Packets-tail) {
			t.Errorf("%s: stream %d: paced on loopback, yet %d sent, %d received, %d lost", who, st.ID, snd.Packets, rcv.Packets, rcv.Lost)
		}
		if rcv.Duplicates != 0 {
			t.Errorf("%s: stream %d: %d duplicates on loopback", who, st.ID, rcv.Duplicates)
		}
	}
	if tc.bytes > 0 {
		// A blast sender moves the count exactly.
		s := sumsOf(r)
		if tc.up && r.Role == "client" && s.upSent != tc.bytes {
			t.Errorf("%s: sent %d bytes for a count of %d", who, s.upSent, tc.bytes)
		}
		if tc.down && r.Role == "server" && s.downSent != tc.bytes {
			t.Errorf("%s: sent %d bytes for a count of %d", who, s.downSent, tc.bytes)
		}
	}
}

// checkRate checks a received rate against the case's target.
func checkRate(t checker, who string, got float64, tc udpCase) {
	t.Helper()
	if tc.rate > 0 && math.Abs(got-tc.rate) > 0.05*tc.rate {
		t.Errorf("%s: received %.3f Mbit/s, want %.3f ± 5%%", who, got/1e6, tc.rate/1e6)
	}
}

func TestUDPBlastClientAgainstIperf3Server(t *testing.T) {
	needIperf3(t)
	for _, tc := range udpCases {
		t.Run(tc.name, func(tt *testing.T) {
			retryUDP(tt, func(t checker) {
				port, wait := iperf3Server(tt)
				cfg := tc.cfg
				cfg.Port = port
				r := runClient(tt, cfg)
				srv := wait()
				checkBlastUDP(t, "blast client", r, tc)
				if tc.blk > 0 && (srv.Start.TestStart.Protocol != "UDP" || srv.Start.TestStart.BlkSize != tc.blk) {
					t.Errorf("iperf3 ran %s with %d-byte blocks", srv.Start.TestStart.Protocol, srv.Start.TestStart.BlkSize)
				}
				s := sumsOf(r)
				if tc.up && !tc.down && tc.blk > 0 {
					// iperf3's own receiver counts are what blast shows.
					var pk, lost int64
					for _, st := range r.Streams {
						pk += st.PeerUDP.Packets
						lost += st.PeerUDP.Lost
					}
					if got := srv.End.SumReceived; got.Packets != pk || got.LostPackets != lost || got.Bytes != s.upRecv {
						t.Errorf("iperf3 says %d packets, %d lost, %d bytes; blast shows %d, %d, %d", got.Packets, got.LostPackets, got.Bytes, pk, lost, s.upRecv)
					}
					if tc.bytes > 0 && s.upSent != tc.bytes {
						t.Errorf("blast sent %d bytes for a count of %d", s.upSent, tc.bytes)
					}
				}
				if tc.down && !tc.up && tc.blk > 0 {
					var pk int64
					for _, st := range r.Streams {
						pk += st.PeerUDP.Packets
					}
					if got := srv.End.SumSent.Packets; got != pk {
						t.Errorf("iperf3 says it sent %d datagrams, blast shows %d", got, pk)
					}
				}
				for _, up := range []bool{true, false} {
					if (up && !tc.up) || (!up && !tc.down) {
						continue
					}
					var bytes int64
					var secs float64
					for _, st := range r.Streams {
						if r.upstream(st.Sender) == up {
							b, sec := st.ReceivedBytes()
							bytes += b
							secs = max(secs, sec)
						}
					}
					checkRate(t, fmt.Sprintf("blast client, up=%v", up), 8*float64(bytes)/secs, tc)
				}
			})
		})
	}
}

func TestUDPIperf3ClientAgainstBlastServer(t *testing.T) {
	needIperf3(t)
	_, port, log := blastServer(t, ServerConfig{Interval: time.Second})
	seen := 0 // results of the server read so far
	for _, tc := range udpCases {
		t.Run(tc.name, func(tt *testing.T) {
			retryUDP(tt, func(t checker) {
				cli := iperf3Client(tt, port, tc.args...)
				res := log.wait(tt, seen+1)[seen]
				seen++
				if res.Err != nil {
					t.Fatalf("server: %v", res.Err)
				}
				checkBlastUDP(t, "blast server", res, tc)
				if tc.blk > 0 && res.Params.Len != Int(tc.blk) {
					t.Errorf("server ran %d-byte datagrams, want %d", res.Params.Len, tc.blk)
				}
				if tc.up && !tc.down && tc.blk > 0 {
					var pk, lost, sent int64
					for _, st := range res.Streams {
						pk += st.UDP.Packets
						lost += st.UDP.Lost
						sent += st.PeerUDP.Packets
					}
					if got := cli.End.SumReceived; got.Packets != pk || got.LostPackets != lost {
						t.Errorf("iperf3 shows %d packets, %d lost as received; blast counted %d, %d", got.Packets, got.LostPackets, pk, lost)
					}
					if got := cli.End.SumSent.Packets; got != sent {
						t.Errorf("iperf3 says it sent %d datagrams, blast got %d in its results", got, sent)
					}
				}
				if tc.down && !tc.up && tc.blk > 0 {
					var pk int64
					for _, st := range res.Streams {
						pk += st.UDP.Packets
					}
					if got := cli.End.SumSent.Packets; got != pk {
						t.Errorf("iperf3 shows %d datagrams sent, the blast server sent %d", got, pk)
					}
				}
				if tc.up && !tc.down {
					checkRate(t, "iperf3 client's receiver sum", cli.End.SumReceived.BitsPerSecond, tc)
				}
				if tc.down && !tc.up {
					// The server paces what it sends to the client's -b.
					checkRate(t, "iperf3 client, -R", cli.End.SumReceived.BitsPerSecond, tc)
				}
				if tc.up && tc.down {
					checkRate(t, "iperf3 client, --bidir up", cli.End.SumReceived.BitsPerSecond, tc)
					if cli.End.SumReceivedBidirReverse == nil {
						t.Fatal("no sum_received_bidir_reverse")
					}
					checkRate(t, "iperf3 client, --bidir down", cli.End.SumReceivedBidirReverse.BitsPerSecond, tc)
				}
			})
		})
	}
}

// checker is what the UDP interop checks need of a test: a *testing.T,
// or an attempt of retryUDP.
type checker interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Fatal(args ...any)
}

// attempt collects the failures of one try; Fatal ends the try.
type attempt struct{ errs []string }

type attemptOver struct{}

func (a *attempt) Helper()                        {}
func (a *attempt) Errorf(format string, v ...any) { a.errs = append(a.errs, fmt.Sprintf(format, v...)) }
func (a *attempt) Fatalf(format string, v ...any) { a.Errorf(format, v...); panic(attemptOver{}) }
func (a *attempt) Fatal(v ...any)                 { a.errs = append(a.errs, fmt.Sprint(v...)); panic(attemptOver{}) }

// retryUDP runs a case up to three times, a second or two apart, and
// fails it only when every try failed. This machine is shared: a stall of iperf3's receiver for
// longer than its socket buffer holds loses datagrams whatever blast does;
// a blast that paces wrong, or counts wrong, fails every try.
func retryUDP(t *testing.T, try func(t checker)) {
	t.Helper()
	var all []string
	for n := 1; n <= 3; n++ {
		// The host's busy spells last a second or two: spread the tries.
		time.Sleep(time.Duration(n-1) * time.Second)
		a := &attempt{}
		func() {
			defer func() {
				if r := recover(); r != nil {
					if _, ok := r.(attemptOver); !ok {
						panic(r)
					}
				}
			}()
			try(a)
		}()
		if len(a.errs) == 0 {
			return
		}
		t.Logf("try %d: %s", n, strings.Join(a.errs, "; "))
		all = append(all, fmt.Sprintf("try %d: %s", n, strings.Join(a.errs, "; ")))
	}
	t.Errorf("three tries failed:\n%s", strings.Join(all, "\n"))
}
