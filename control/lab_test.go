package control

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/blastnet/blast/internal/netlab"
	"github.com/blastnet/blast/internal/netlab/labtest"
)

// blast client in one namespace, blast server in another, over a veth
// pair: the path is a real interface, not loopback.
func TestLabBlastToBlast(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	var srv *Server
	rl := &resultLog{}
	err := lab.B.Do(func() error {
		var err error
		// Listening on the wildcard inside B: the accepted sockets live in
		// B whichever goroutine accepts them. The NIC watch would run in
		// the server's goroutines, outside B: off here.
		srv, err = Listen(ServerConfig{Port: freePort(t), Interval: 0, NoNIC: true, OnResult: rl.add})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { srv.Serve(ctx); close(served) }()
	t.Cleanup(func() { cancel(); <-served })
	port := srv.Addr().(*net.TCPAddr).Port

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
			var r *Result
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
