package control

import (
	"testing"
	"time"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
)

// Interop with Debian's iperf3 on loopback, both ways.

type interopCase struct {
	name     string
	cfg      Config   // blast client side
	args     []string // iperf3 client side
	streams  int      // data connections expected
	up, down bool     // directions carrying data
	bytes    int64    // -n, when exact counts are expected
}

var interopCases = []interopCase{
	{name: "tcp", cfg: Config{Duration: time.Second}, args: []string{"-t", "1"}, streams: 1, up: true},
	{name: "P4", cfg: Config{Duration: time.Second, Parallel: 4}, args: []string{"-t", "1", "-P", "4"}, streams: 4, up: true},
	{name: "reverse", cfg: Config{Duration: time.Second, Reverse: true}, args: []string{"-t", "1", "-R"}, streams: 1, down: true},
	{name: "bidir", cfg: Config{Duration: time.Second, Bidir: true}, args: []string{"-t", "1", "--bidir"}, streams: 2, up: true, down: true},
	{name: "bytes", cfg: Config{Bytes: 50 << 20, Parallel: 2}, args: []string{"-n", "50M", "-P", "2"}, streams: 2, up: true, bytes: 50 << 20},
	{name: "bytes-reverse", cfg: Config{Bytes: 20 << 20, Reverse: true}, args: []string{"-n", "20M", "-R"}, streams: 1, down: true, bytes: 20 << 20},
}

// checkSums checks one side's -J document against the case: stream counts,
// and bytes that went each way (sender and receiver must agree to within
// what iperf3 itself drops at the end of a timed test).
//
// written is what blast's senders wrote one way (up: client to server),
// -1 where iperf3 sends: a blast TCP sender of a timed test counts what
// was acknowledged in the test's time, and iperf3's receiver counts until
// the end message came, so what bounds iperf3's count is what blast
// wrote.
func checkSums(t *testing.T, who string, d *iperfJSON, tc interopCase, client bool, written func(up bool) int64) {
	t.Helper()
	if got := len(d.Start.Connected); got != tc.streams {
		t.Errorf("%s: %d connected streams, want %d", who, got, tc.streams)
	}
	if got := len(d.End.Streams); got != tc.streams {
		t.Errorf("%s: %d end streams, want %d", who, got, tc.streams)
	}
	type pair struct {
		name       string
		sent, recv *iperfSum
		up         bool // client -> server
	}
	pairs := []pair{{"sum_sent/sum_received", d.End.SumSent, d.End.SumReceived, tc.up}}
	if tc.up && tc.down {
		pairs = append(pairs, pair{"bidir_reverse sums", d.End.SumSentBidirReverse, d.End.SumReceivedBidirReverse, false})
	}
	for _, p := range pairs {
		if p.sent == nil || p.recv == nil {
			t.Errorf("%s: %s missing", who, p.name)
			continue
		}
		if !client && !p.up {
			// iperf3's server writes its JSON before it learns what the
			// client received.
			continue
		}
		if p.recv.Bytes <= 0 {
			t.Errorf("%s: %s: nothing received", who, p.name)
		}
		if tc.bytes > 0 {
			// iperf3 sends whole blocks, so its count may round up to one
			// block per stream; blast sends exactly -n.
			if p.recv.Bytes < tc.bytes || p.recv.Bytes > tc.bytes+int64(tc.streams)*wire.DefaultTCPBlock {
				t.Errorf("%s: %s: received %d bytes for -n %d", who, p.name, p.recv.Bytes, tc.bytes)
			}
		}
		// The side that sees both totals: sender and receiver agree. A
		// timed test's receiver stops counting at its end, with bytes
		// still on their way: how many is a timing property
		// (TestTimingInteropReceivedShare).
		if client && p.sent.Bytes > 0 {
			if tc.bytes > 0 && p.recv.Bytes != p.sent.Bytes {
				t.Errorf("%s: %s: sent %d, received %d; a byte-count test must deliver all", who, p.name, p.sent.Bytes, p.recv.Bytes)
			}
			bound := p.sent.Bytes
			if w := written(p.up); w >= 0 {
				bound = w
				if p.sent.Bytes > w {
					t.Errorf("%s: %s: blast wrote %d and counts %d sent", who, p.name, w, p.sent.Bytes)
				}
			}
			if p.recv.Bytes > bound {
				t.Errorf("%s: %s: sent %d (written %d), received %d", who, p.name, p.sent.Bytes, bound, p.recv.Bytes)
			}
		}
	}
	if d.End.CPU == nil || d.End.CPU.HostTotal <= 0 {
		t.Errorf("%s: no CPU utilization", who)
	}
}

// writtenBy is, for checkSums, what the blast side of r wrote each way
// (-1 where the peer, iperf3, sends); client says whether r is the
// client's.
func writtenBy(r *result.Result, client bool) func(up bool) int64 {
	return func(up bool) int64 {
		w := int64(-1)
		for _, st := range r.Streams {
			if st.Sender && up == client {
				w = max(w, 0) + st.IO.Bytes
			}
		}
		return w
	}
}

func TestBlastClientAgainstIperf3Server(t *testing.T) {
	needIperf3(t)
	for _, tc := range interopCases {
		t.Run(tc.name, func(t *testing.T) {
			port, wait := iperf3Server(t)
			cfg := tc.cfg
			cfg.Port = port
			r := runClient(t, cfg)
			srv := wait()
			cli := blastJSON(t, r)
			written := writtenBy(r, true)
			checkSums(t, "blast client", cli, tc, true, written)
			checkSums(t, "iperf3 server", srv, tc, false, written)
			if srv.Start.Cookie != r.Cookie {
				t.Errorf("iperf3 saw cookie %q, blast sent %q", srv.Start.Cookie, r.Cookie)
			}
			// Both documents count the same bytes each way.
			for i, pair := range [][2]*iperfSum{{cli.End.SumReceived, srv.End.SumReceived}, {cli.End.SumSent, srv.End.SumSent}} {
				c, s := pair[0], pair[1]
				if c == nil || s == nil {
					continue
				}
				if (i == 0 && tc.up && !tc.down) || (i == 1 && tc.down && !tc.up) {
					// The server's own count in its direction is exact.
					if c.Bytes != s.Bytes {
						t.Errorf("sum %d: blast says %d, iperf3 says %d", i, c.Bytes, s.Bytes)
					}
				}
			}
			if tc.bytes > 0 && tc.up {
				s := sumsOf(r)
				if s.upSent != tc.bytes {
					t.Errorf("blast sent %d bytes for -n %d", s.upSent, tc.bytes)
				}
			}
			if r.RemoteBackend != "" {
				t.Errorf("iperf3 reported a blast backend %q", r.RemoteBackend)
			}
		})
	}
}

func TestIperf3ClientAgainstBlastServer(t *testing.T) {
	needIperf3(t)
	_, port, log := blastServer(t, ServerConfig{Interval: time.Second})
	for i, tc := range interopCases {
		t.Run(tc.name, func(t *testing.T) {
			cli := iperf3Client(t, port, tc.args...)
			res := log.wait(t, i+1)[i]
			if res.Err != nil {
				t.Fatalf("server: %v", res.Err)
			}
			written := writtenBy(res, false)
			checkSums(t, "iperf3 client", cli, tc, true, written)
			if got := len(res.Streams); got != tc.streams {
				t.Errorf("server: %d streams, want %d", got, tc.streams)
			}
			srv := blastJSON(t, res)
			checkSums(t, "blast server", srv, tc, true, written)
			s := sumsOf(res)
			// What the blast server received is what iperf3 says was
			// received (iperf3 takes it from our results).
			if tc.up && !tc.down && cli.End.SumReceived.Bytes != s.upRecv {
				t.Errorf("iperf3 says %d received, the server counted %d", cli.End.SumReceived.Bytes, s.upRecv)
			}
			// All of it, in the test's time or drained after it.
			if tc.up && !tc.down && s.upSent != s.upRecv+s.upDrained {
				t.Errorf("iperf3 sent %d, the server received %d in the test and %d after it", s.upSent, s.upRecv, s.upDrained)
			}
			if tc.bytes > 0 && tc.down && s.downSent != tc.bytes {
				t.Errorf("server sent %d bytes for -n %d", s.downSent, tc.bytes)
			}
			if res.Params.ClientVersion == "" {
				t.Error("iperf3 sent no client_version")
			}
		})
	}
}

func TestIperf3ClientGetServerOutput(t *testing.T) {
	needIperf3(t)
	_, port, _ := blastServer(t, ServerConfig{Interval: time.Second})
	d := iperf3ClientRaw(t, port, "-t", "1", "--get-server-output")
	if d.ServerOutputText == "" {
		t.Fatal("no server_output_text in iperf3's JSON")
	}
	if !containsAll(d.ServerOutputText, "Accepted connection from 127.0.0.1", "receiver", "Backend: local readwrite") {
		t.Errorf("server output:\n%s", d.ServerOutputText)
	}
}

func TestBlastClientIPv6AgainstIperf3(t *testing.T) {
	needIperf3(t)
	port, wait := iperf3ServerBind(t, "::1")
	r := runClient(t, Config{Host: "::1", Port: port, Duration: time.Second, Family: "6"})
	srv := wait()
	if !r.Peer.Addr().Is6() || len(srv.End.Streams) != 1 || srv.End.SumReceived.Bytes <= 0 {
		t.Errorf("peer %v, iperf3 streams %d, bytes %d", r.Peer, len(srv.End.Streams), srv.End.SumReceived.Bytes)
	}
}
