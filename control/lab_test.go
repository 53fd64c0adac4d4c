package control

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/internal/testkit"

	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

// labServer serves blast in the lab's host B until the test ends, on a
// free port, its results in rl. It listens on the wildcard inside B: the
// sockets it accepts and makes live in B whichever goroutine handles
// them. The NIC watch would run in the server's goroutines, outside B:
// off here.
func labServer(t *testing.T, lab *netlab.Lab, cfg ServerConfig) (port int, rl *resultLog) {
	t.Helper()
	var srv *Server
	rl = &resultLog{}
	cfg.Port, cfg.NoNIC, cfg.OnResult = testkit.FreePort(t), true, rl.add
	if err := lab.B.Do(func() (err error) {
		srv, err = Listen(cfg)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { srv.Serve(ctx); close(served) }()
	t.Cleanup(func() { cancel(); <-served })
	return srv.Addr().(*net.TCPAddr).Port, rl
}

// blast client in one namespace, blast server in another, over a veth
// pair: the path is a real interface, not loopback.
func TestLabBlastToBlast(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	port, rl := labServer(t, lab, ServerConfig{})

	n := 0
	for _, tc := range []struct {
		name     string
		addr     netip.Addr
		cfg      Config
		streams  int
		up, down int64
	}{
		{"v4 P2", lab.B.Addr4, Config{Duration: time.Second, Parallel: 2, Family: "4"}, 2, 0, 0},
		{"v6 reverse", lab.B.Addr6, Config{Duration: time.Second, Reverse: true, Family: "6"}, 1, 0, 0},
		{"bidir bytes window reno", lab.B.Addr4, Config{Bytes: 30 << 20, Bidir: true, Window: 1 << 20, Congestion: "reno"}, 2, 30 << 20, 30 << 20},
		{"bytes P4 mss", lab.B.Addr6, Config{Bytes: 40_000_003, Parallel: 4, MSS: 1300, NoDelay: true}, 4, 40_000_003, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Host, cfg.Port, cfg.Interval = tc.addr.String(), port, time.Second
			var r *result.Result
			err := lab.A.Do(func() error {
				var err error
				r, err = Run(context.Background(), cfg)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			n++
			s := rl.wait(t, n)[n-1]
			if r.Peer.Addr() != tc.addr {
				t.Errorf("connected to %v, want %v", r.Peer.Addr(), tc.addr)
			}
			// nicinfo reads /sys, which shows the root namespace's
			// interfaces from inside a lab namespace: no NIC report here,
			// and the Result says why.
			if r.NIC == nil && len(r.Notes) == 0 {
				t.Error("no NIC report and no note saying why")
			}
			checkBlastPair(t, r, s, tc.streams, tc.up, tc.down)
		})
	}
}

// labUDPCase is a UDP test between a blast client in the lab's host A
// and a blast server in B.
type labUDPCase struct {
	name     string
	addr     netip.Addr
	cfg      Config
	streams  int
	up, down int64
	lossless bool   // paced below what the lab carries (TestTimingLabUDPLossless)
	backend  string // on both sides ("": afxdp here, mmsg there)
}

// labUDPCases are the default backend (mmsg with GSO and GRO), readwrite
// and afxdp, both ways, on IPv4 and IPv6.
func labUDPCases(lab *netlab.Lab) []labUDPCase {
	return []labUDPCase{
		{"v4 P2 200M", lab.B.Addr4, Config{Rate: 200e6, Duration: time.Second, Parallel: 2, BlockLen: 1400}, 2, 0, 0, true, "mmsg"},
		{"v4 P2 readwrite", lab.B.Addr4, Config{Rate: 200e6, Duration: time.Second, Parallel: 2, BlockLen: 1400, Backend: "readwrite"}, 2, 0, 0, true, "readwrite"},
		{"v6 reverse mmsg gso gro", lab.B.Addr6, Config{Rate: 500e6, Duration: time.Second, Reverse: true, BlockLen: 1200,
			Backend: "mmsg", BackendOptions: "gso,gro"}, 1, 0, 0, true, "mmsg"},
		{"bidir bytes 64-bit", lab.B.Addr4, Config{Rate: 300e6, Bytes: 20_000_000, Bidir: true, BlockLen: 1000, UDP64: true}, 2, 20_000_000, 20_000_000, true, "mmsg"},
		{"unlimited 64 B mmsg", lab.B.Addr4, Config{RateSet: true, Duration: time.Second, BlockLen: 64, Backend: "mmsg", BackendOptions: "gso,gro"}, 1, 0, 0, false, "mmsg"},
		// afxdp receives iperf3's datagrams; asked to send them, the
		// server says it cannot and sends with mmsg.
		{"reverse afxdp", lab.B.Addr4, Config{Rate: 200e6, Duration: time.Second, Reverse: true, BlockLen: 1400, Backend: "afxdp"}, 1, 0, 0, true, ""},
	}
}

// runLabUDP runs tc from A and returns the client's Result and the
// server's (its n-th).
func runLabUDP(t *testing.T, lab *netlab.Lab, port int, rl *resultLog, n int, tc labUDPCase) (*result.Result, *result.Result, Config) {
	t.Helper()
	cfg := tc.cfg
	cfg.UDP, cfg.RateSet = true, true
	cfg.Host, cfg.Port, cfg.Interval = tc.addr.String(), port, time.Second
	var r *result.Result
	if err := lab.A.Do(func() (err error) {
		r, err = Run(context.Background(), cfg)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	s := rl.wait(t, n)[n-1]
	if s.Err != nil {
		t.Fatalf("server: %v", s.Err)
	}
	return r, s, cfg
}

// UDP between blast client and blast server over a veth pair: the
// backends each side used, the streams' addresses, and the counts: each
// side's are what the other shows as its peer's, and agree with the bytes;
// a count moves exactly. That the paced cases lose nothing is a timing
// property (TestTimingLabUDPLossless): a receiver the host does not run
// for long enough loses datagrams whatever blast does.
func TestLabUDPBlastToBlast(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	port, rl := labServer(t, lab, ServerConfig{})

	n := 0
	for _, tc := range labUDPCases(lab) {
		t.Run(tc.name, func(t *testing.T) {
			n++
			r, s, cfg := runLabUDP(t, lab, port, rl, n, tc)
			switch {
			case tc.backend != "" && (!strings.Contains(r.Backend, tc.backend) || !strings.Contains(r.RemoteBackend, tc.backend)):
				t.Errorf("backends: local %q, remote %q; want %s on both", r.Backend, r.RemoteBackend, tc.backend)
			case tc.backend == "" && (r.Backend != "afxdp" || r.RemoteBackend != "mmsg" ||
				len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "the server cannot send with afxdp (afxdp cannot send iperf3's datagram headers")):
				t.Errorf("backends: local %q, remote %q, server notes %q", r.Backend, r.RemoteBackend, s.Notes)
			}
			checkUDPPair(t, r, s, tc.streams, tc.up, tc.down)
			for i, c := range r.Streams {
				sv := s.Streams[i]
				if sv.Local.Addr() != tc.addr || c.Remote.Addr() != tc.addr || sv.Remote != c.Local {
					t.Errorf("stream %d: client %v -> %v, server %v <- %v", c.ID, c.Local, c.Remote, sv.Local, sv.Remote)
				}
				if c.UDP == nil || sv.UDP == nil || c.PeerUDP == nil || sv.PeerUDP == nil {
					t.Fatalf("stream %d: datagram counts missing", c.ID)
				}
				// Each side's counts are what the other shows as its peer's.
				if *c.PeerUDP != *sv.UDP || *sv.PeerUDP != *c.UDP {
					t.Errorf("stream %d: client %+v (peer %+v), server %+v (peer %+v)", c.ID, *c.UDP, *c.PeerUDP, *sv.UDP, *sv.PeerUDP)
				}
				snd, rcv := c.UDP, sv.UDP
				if !c.Sender {
					snd, rcv = sv.UDP, c.UDP
				}
				rb, _ := c.ReceivedBytes()
				if got := (rb + int64(cfg.BlockLen) - 1) / int64(cfg.BlockLen); rcv.OutOfOrder == 0 && got != rcv.Packets-rcv.Lost {
					t.Errorf("stream %d: %d bytes received are %d datagrams; counts say %d packets, %d lost", c.ID, rb, got, rcv.Packets, rcv.Lost)
				}
				// A veth pair does not make copies; the receiver saw at
				// most what was sent, and something.
				if rcv.Duplicates != 0 || rcv.Packets > snd.Packets || rcv.Packets <= 0 || rcv.Lost < 0 || rcv.Lost > rcv.Packets {
					t.Errorf("stream %d: sent %d, received up to %d, %d lost, %d duplicates", c.ID, snd.Packets, rcv.Packets, rcv.Lost, rcv.Duplicates)
				}
			}
		})
	}
}

// checkUDPPair checks the two Results of a blast-to-blast UDP test as
// checkBlastPair does a TCP test's, but for the bytes the receivers got,
// which the datagrams lost leave out: the streams match, each side's own
// counts are the other's peer counts, and the client sends a count
// exactly; the server sends until the client has received it (as
// iperf3's server does: a lost datagram cannot hang the client).
func checkUDPPair(t *testing.T, cli, srv *result.Result, streams int, up, down int64) {
	t.Helper()
	if srv.Cookie != cli.Cookie {
		t.Fatalf("server result is for cookie %s, client's is %s", srv.Cookie, cli.Cookie)
	}
	if len(cli.Streams) != streams || len(srv.Streams) != streams {
		t.Fatalf("streams: client %d, server %d, want %d", len(cli.Streams), len(srv.Streams), streams)
	}
	for i := range cli.Streams {
		c, s := cli.Streams[i], srv.Streams[i]
		if c.ID != wire.StreamID(i) || s.ID != c.ID || c.Sender == s.Sender {
			t.Errorf("stream %d: client id %d sender %v, server id %d sender %v", i, c.ID, c.Sender, s.ID, s.Sender)
		}
		if c.PeerBytes != s.Bytes || s.PeerBytes != c.Bytes {
			t.Errorf("stream %d: client %d (peer says %d), server %d (peer says %d)", c.ID, c.Bytes, s.PeerBytes, s.Bytes, c.PeerBytes)
		}
		if c.PeerIO == nil || s.PeerIO == nil {
			t.Errorf("stream %d: blast I/O counters not exchanged", c.ID)
		}
	}
	cs, ss := sumsOf(cli), sumsOf(srv)
	if cs != ss {
		t.Errorf("totals differ: client %+v, server %+v", cs, ss)
	}
	if up > 0 && cs.upSent != up {
		t.Errorf("client->server: %d bytes, want exactly %d", cs.upSent, up)
	}
	if down > 0 && (cs.downSent < down || cs.downRecv < down) {
		t.Errorf("server->client: %d bytes sent, %d received, want at least %d", cs.downSent, cs.downRecv, down)
	}
	if cs.upRecv+cs.downRecv <= 0 || cs.upRecv > cs.upSent || cs.downRecv > cs.downSent {
		t.Errorf("received more than sent, or nothing: %+v", cs)
	}
}
