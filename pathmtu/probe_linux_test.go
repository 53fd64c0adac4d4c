package pathmtu

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/blastnet/blast/internal/testkit"
)

// serve accepts on ln as blast server does: a greeting starts a session.
func serve(ctx context.Context, ln net.Listener) error {
	go func() { <-ctx.Done(); ln.Close() }()
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			var g [GreetingSize]byte
			if _, err := io.ReadFull(c, g[:]); err != nil {
				c.Close()
				return
			}
			port, ok := ParseGreeting(g)
			if !ok {
				c.Close()
				return
			}
			Serve(ctx, c, port)
		}()
	}
}

// On loopback (MTU 65536) every size up to the largest IP packet passes,
// both ways, IPv4 and IPv6: the search ends exact at 65535.
func TestProbeLoopback(t *testing.T) {
	for _, tc := range []struct{ family, addr string }{{"4", "127.0.0.1"}, {"6", "::1"}} {
		t.Run("ipv"+tc.family, func(t *testing.T) {
			ln, err := net.Listen("tcp", net.JoinHostPort(tc.addr, "0"))
			if err != nil {
				t.Fatal(err)
			}
			testkit.Serve(t, func(ctx context.Context) error { return serve(ctx, ln) })
			res, err := Probe(context.Background(), Config{Host: tc.addr, Port: ln.Addr().(*net.TCPAddr).Port, Family: tc.family})
			if err != nil {
				t.Fatal(err)
			}
			for name, d := range map[string]Direction{"upload": res.Up, "download": res.Down} {
				if !d.Measured || d.PMTU != 65535 || !d.Exact || d.SenderMTU != 65535 || d.Lost != 0 || d.SenderIface != "lo" {
					t.Errorf("%s: %+v; want 65535 exact, the sender's MTU 65535 (lo's 65536, as large as a packet gets)", name, d)
				}
			}
		})
	}
}

// A port that takes the greeting for an iperf3 cookie (answers a state
// byte and waits for parameters) measures nothing: ErrNoServer.
func TestProbeNotBlast(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	testkit.Serve(t, func(ctx context.Context) error {
		go func() { <-ctx.Done(); ln.Close() }()
		for {
			c, err := ln.Accept()
			if err != nil {
				return err
			}
			go func() {
				defer c.Close()
				var cookie [37]byte
				io.ReadFull(c, cookie[:])
				c.Write([]byte{9}) // PARAM_EXCHANGE
				io.Copy(io.Discard, c)
			}()
		}
	})
	_, err = Probe(context.Background(), Config{Host: "127.0.0.1", Port: ln.Addr().(*net.TCPAddr).Port})
	if !errors.Is(err, ErrNoServer) {
		t.Errorf("Probe against an iperf3-like port: %v, want ErrNoServer", err)
	}
}
