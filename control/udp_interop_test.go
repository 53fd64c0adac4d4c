package control

import (
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/blastnet/blast/control/render"
	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
)

// UDP (and paced TCP) against Debian's iperf3 on loopback, both ways. The
// tests check what any host gives exactly: the tests complete, both sides
// count the same datagrams and bytes, a count moves exactly, the peer
// gets the rate and block size asked for. How much is lost, and what rate
// the receiver sees, are timing properties (udp_timing_test.go).

type udpCase struct {
	name    string
	cfg     Config   // blast client side
	args    []string // iperf3 client side
	streams int      // data streams
	blk     int      // datagram size (0: TCP)
	up      bool     // the client sends
	down    bool     // the server sends
	// paced: slow enough that loopback should lose nothing (judged by
	// TestTimingUDPLossAgainstIperf3).
	paced bool
	// rate: the bitrate each direction should hold (all its streams; 0:
	// none), judged by TestTimingUDPRate.
	rate float64
	// bytes: what each sending direction moves (-n, -k); blast moves it
	// exactly.
	bytes int64
}

// The paced cases give the receivers -w 1M: iperf3 3.12 reads its streams
// on one thread, and on a shared machine that thread is sometimes not run
// for longer than the default 208 KiB buffer covers at these rates.
var udpCases = []udpCase{
	{name: "b100M", cfg: Config{UDP: true, Rate: 100e6, RateSet: true, BlockLen: 1400, Duration: time.Second, Window: 1 << 20},
		args: []string{"-u", "-b", "100M", "-l", "1400", "-t", "1", "-w", "1M"}, streams: 1, blk: 1400, up: true, paced: true, rate: 100e6},
	{name: "b0-l64", cfg: Config{UDP: true, RateSet: true, BlockLen: 64, Duration: time.Second},
		args: []string{"-u", "-b", "0", "-l", "64", "-t", "1"}, streams: 1, blk: 64, up: true},
	{name: "reverse", cfg: Config{UDP: true, Rate: 100e6, RateSet: true, BlockLen: 1400, Duration: time.Second, Reverse: true, Window: 1 << 20},
		args: []string{"-u", "-b", "100M", "-l", "1400", "-t", "1", "-R", "-w", "1M"}, streams: 1, blk: 1400, down: true, paced: true, rate: 100e6},
	{name: "P3", cfg: Config{UDP: true, Rate: 20e6, RateSet: true, BlockLen: 1200, Duration: time.Second, Parallel: 3, Window: 1 << 20},
		args: []string{"-u", "-b", "20M", "-l", "1200", "-t", "1", "-P", "3", "-w", "1M"}, streams: 3, blk: 1200, up: true, paced: true, rate: 60e6},
	{name: "bidir", cfg: Config{UDP: true, Rate: 50e6, RateSet: true, BlockLen: 1400, Duration: time.Second, Bidir: true, Window: 1 << 20},
		args: []string{"-u", "-b", "50M", "-l", "1400", "-t", "1", "--bidir", "-w", "1M"}, streams: 2, blk: 1400, up: true, down: true, paced: true, rate: 50e6},
	{name: "n5M-b1G", cfg: Config{UDP: true, Rate: 1e9, RateSet: true, BlockLen: 1400, Bytes: 5 << 20},
		args: []string{"-u", "-b", "1G", "-l", "1400", "-n", "5M"}, streams: 1, blk: 1400, up: true, bytes: 5 << 20},
	// An iperf3 client receiving a block count waits for the last block:
	// a datagram its socket dropped would hang it. 900 datagrams fit in
	// the loopback's input backlog (1000) and, with -w 2M, in the
	// client's socket buffer, however late iperf3 reads them.
	{name: "k900-b1G-reverse", cfg: Config{UDP: true, Rate: 1e9, RateSet: true, BlockLen: 1400, Blocks: 900, Reverse: true, Window: 2 << 20},
		args: []string{"-u", "-b", "1G", "-l", "1400", "-k", "900", "-R", "-w", "2M"}, streams: 1, blk: 1400, down: true, bytes: 900 * 1400},
	// 100 datagrams back to back take about 230 KB of a receive buffer
	// (truesize): -w gives the receiver room for a burst.
	{name: "burst", cfg: Config{UDP: true, Rate: 200e6, RateSet: true, Burst: 100, BlockLen: 1400, Duration: time.Second, Window: 1 << 20},
		args: []string{"-u", "-b", "200M/100", "-l", "1400", "-t", "1", "-w", "1M"}, streams: 1, blk: 1400, up: true, rate: 200e6},
	{name: "counters64", cfg: Config{UDP: true, Rate: 50e6, RateSet: true, BlockLen: 1400, Duration: time.Second, UDP64: true},
		args: []string{"-u", "-b", "50M", "-l", "1400", "-t", "1", "--udp-counters-64bit"}, streams: 1, blk: 1400, up: true, paced: true, rate: 50e6},
	{name: "tcp-reverse-b5M", cfg: Config{Rate: 5e6, RateSet: true, BlockLen: 32 << 10, Duration: time.Second, Reverse: true},
		args: []string{"-b", "5M", "-l", "32K", "-t", "1", "-R"}, streams: 1, down: true, rate: 5e6},
	{name: "tcp-bidir-b5M", cfg: Config{Rate: 5e6, RateSet: true, BlockLen: 32 << 10, Duration: time.Second, Bidir: true},
		args: []string{"-b", "5M", "-l", "32K", "-t", "1", "--bidir"}, streams: 2, up: true, down: true, rate: 5e6},
}

// withDuration is tc timed for secs seconds on both clients.
func (tc udpCase) withDuration(secs int) udpCase {
	if tc.cfg.Duration == 0 {
		return tc
	}
	tc.cfg.Duration = time.Duration(secs) * time.Second
	tc.args = slices.Clone(tc.args)
	if i := slices.Index(tc.args, "-t"); i >= 0 {
		tc.args[i+1] = strconv.Itoa(secs)
	}
	return tc
}

// testStart is what the UDP tests read of a -J document's test_start
// beyond iperfJSON: the rate asked for, per stream.
type testStart struct {
	Start struct {
		TestStart struct {
			TargetBitrate int64 `json:"target_bitrate"`
		} `json:"test_start"`
	} `json:"start"`
}

func targetBitrate(t *testing.T, doc []byte) int64 {
	t.Helper()
	var d testStart
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatalf("parse -J output: %v\n%s", err, doc)
	}
	return d.Start.TestStart.TargetBitrate
}

// checkBlastUDP checks a blast Result of a UDP test against the case: the
// datagram counts of each stream, as this side counted them and as the
// peer reported its own, agree with each other and with the bytes; a
// count is sent exactly.
func checkBlastUDP(t *testing.T, who string, r *result.Result, tc udpCase) {
	t.Helper()
	if len(r.Streams) != tc.streams {
		t.Fatalf("%s: %d streams, want %d", who, len(r.Streams), tc.streams)
	}
	// The JSON document says the rate asked for (per stream).
	var b []byte
	b, err := render.JSONBytes(r)
	if err != nil {
		t.Fatal(err)
	}
	if got := targetBitrate(t, b); got != int64(tc.cfg.Rate) {
		t.Errorf("%s: test_start.target_bitrate %d, want %d", who, got, int64(tc.cfg.Rate))
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
		if rcv.Lost < 0 || rcv.Lost > rcv.Packets {
			t.Errorf("%s: stream %d: %d lost of %d", who, st.ID, rcv.Lost, rcv.Packets)
		}
		if rcv.Duplicates != 0 {
			t.Errorf("%s: stream %d: %d duplicates on loopback", who, st.ID, rcv.Duplicates)
		}
	}
	if tc.bytes > 0 {
		// A blast client sends the count exactly; a blast server sends
		// until the client has received it (the client ends the test,
		// as with iperf3's server).
		s := sumsOf(r)
		if tc.up && r.Role == "client" && s.upSent != tc.bytes {
			t.Errorf("%s: sent %d bytes for a count of %d", who, s.upSent, tc.bytes)
		}
		if tc.down && r.Role == "server" && s.downSent < tc.bytes {
			t.Errorf("%s: sent %d bytes for a count of %d", who, s.downSent, tc.bytes)
		}
	}
}

func TestUDPBlastClientAgainstIperf3Server(t *testing.T) {
	needIperf3(t)
	for _, tc := range udpCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each against an iperf3 -s of its own
			port, wait := iperf3ServerArgs(t, "127.0.0.1")
			cfg := tc.cfg
			cfg.Port = port
			r := runClient(t, cfg)
			raw := wait()
			srv := parseIperfJSON(t, raw)
			checkBlastUDP(t, "blast client", r, tc)
			if want := "TCP"; tc.blk > 0 {
				want = "UDP"
				if srv.Start.TestStart.Protocol != want || srv.Start.TestStart.BlkSize != tc.blk {
					t.Errorf("iperf3 ran %s with %d-byte blocks", srv.Start.TestStart.Protocol, srv.Start.TestStart.BlkSize)
				}
			}
			if got := targetBitrate(t, raw); got != int64(tc.cfg.Rate) {
				t.Errorf("iperf3 got target_bitrate %d, want %d", got, int64(tc.cfg.Rate))
			}
			if got := srv.Start.TestStart.NumStreams; got != max(tc.cfg.Parallel, 1) {
				t.Errorf("iperf3 ran %d streams, want %d", got, max(tc.cfg.Parallel, 1))
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
			// Every direction the case has carried data.
			if (tc.up && s.upRecv <= 0) || (tc.down && s.downRecv <= 0) || (!tc.up && s.upSent != 0) || (!tc.down && s.downSent != 0) {
				t.Errorf("bytes each way: %+v, want data up %v, down %v", s, tc.up, tc.down)
			}
		})
	}
}

func TestUDPIperf3ClientAgainstBlastServer(t *testing.T) {
	needIperf3(t)
	_, port, log := blastServer(t, ServerConfig{Interval: time.Second})
	seen := 0 // results of the server read so far
	for _, tc := range udpCases {
		t.Run(tc.name, func(t *testing.T) {
			cli := iperf3Client(t, port, tc.args...)
			res := log.wait(t, seen+1)[seen]
			seen++
			if res.Err != nil {
				t.Fatalf("server: %v", res.Err)
			}
			checkBlastUDP(t, "blast server", res, tc)
			if tc.blk > 0 && (!res.Params.UDP || res.Params.Len != wire.Int(tc.blk)) {
				t.Errorf("server ran %d-byte datagrams (udp %v), want %d", res.Params.Len, res.Params.UDP, tc.blk)
			}
			if res.Params.Bandwidth != wire.Int(tc.cfg.Rate) || res.Params.Burst != wire.Int(tc.cfg.Burst) {
				t.Errorf("the server got -b %d/%d, want %d/%d", res.Params.Bandwidth, res.Params.Burst, int64(tc.cfg.Rate), tc.cfg.Burst)
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
				if tc.bytes > 0 && cli.End.SumReceived.Bytes != tc.bytes {
					t.Errorf("iperf3 received %d bytes of a count of %d", cli.End.SumReceived.Bytes, tc.bytes)
				}
			}
			if tc.up && tc.down && cli.End.SumReceivedBidirReverse == nil {
				t.Error("no sum_received_bidir_reverse")
			}
			s := sumsOf(res)
			if (tc.up && s.upRecv <= 0) || (tc.down && s.downRecv <= 0) || (!tc.up && s.upSent != 0) || (!tc.down && s.downSent != 0) {
				t.Errorf("bytes each way: %+v, want data up %v, down %v", s, tc.up, tc.down)
			}
		})
	}
}
