package netlab_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

// transfer sends n bytes from lab.A to lab.B over TCP to addr and
// returns what B received.
func transfer(t *testing.T, lab *netlab.Lab, addr string, n int64) int64 {
	t.Helper()
	var ln net.Listener
	if err := lab.B.Do(func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(addr, "0"))
		return err
	}); err != nil {
		t.Fatal(err)
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
		m, _ := io.Copy(io.Discard, c)
		got <- m
	}()
	var c net.Conn
	if err := lab.A.Do(func() (err error) {
		c, err = net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		return err
	}); err != nil {
		t.Fatalf("dial %s from %s: %v", ln.Addr(), lab.A.Name, err)
	}
	if _, err := io.CopyN(c, zeros{}, n); err != nil {
		t.Fatal(err)
	}
	c.Close()
	return <-got
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestTopologies(t *testing.T) {
	for _, tc := range []struct {
		topo netlab.Topology
		opt  netlab.Options
	}{
		{netlab.Direct, netlab.Options{}},
		{netlab.Direct, netlab.Options{Queues: 4}},
		{netlab.Routed, netlab.Options{}},
	} {
		t.Run(fmt.Sprintf("%v/%+v", tc.topo, tc.opt), func(t *testing.T) {
			t.Parallel()
			lab := labtest.New(t, tc.topo, tc.opt)
			for _, addr := range []string{lab.B.Addr4.String(), lab.B.Addr6.String()} {
				if got := transfer(t, lab, addr, 4<<20); got != 4<<20 {
					t.Errorf("to %s: B received %d bytes, want %d", addr, got, 4<<20)
				}
			}
			if !strings.HasPrefix(lab.A.Addr4.String(), "198.18.") || !strings.HasPrefix(lab.B.Addr6.String(), "2001:2:") {
				t.Errorf("lab addresses %s, %s are outside the benchmarking ranges", lab.A.Addr4, lab.B.Addr6)
			}
		})
	}
}

func TestRoutedPathHasThreeHops(t *testing.T) {
	lab := labtest.New(t, netlab.Routed, netlab.Options{})
	// The router forwards; A's traffic to B leaves with TTL 64 and arrives
	// with 63 — visible as B's peer being off-link: A and B share no subnet.
	if lab.A.Addr4.As4()[2] == lab.B.Addr4.As4()[2] {
		t.Fatalf("A %s and B %s are on one subnet: no router in the path", lab.A.Addr4, lab.B.Addr4)
	}
	out, err := lab.A.Command("ip", "route", "get", lab.B.Addr4.String()).Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "via " + lab.Router.Addr4.String(); !strings.Contains(string(out), want) {
		t.Errorf("route from A to B: %q, want it %s", out, want)
	}
}

func TestRateLimit(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{RateMbit: 10})
	out, err := lab.A.Command("tc", "qdisc", "show", "dev", lab.A.Iface).Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "tbf") || !strings.Contains(string(out), "rate 10Mbit") {
		t.Errorf("qdisc on %s: %q, want a tbf at rate 10Mbit", lab.A.Iface, out)
	}
}

func TestCloseRemovesEverything(t *testing.T) {
	labtest.RequireRoot(t)
	lab, err := netlab.New(netlab.Routed, netlab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{lab.A.Name, lab.B.Name, lab.Router.Name}
	sleeper := lab.B.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	if err := lab.Close(); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if _, err := os.Stat("/run/netns/" + n); err == nil {
			t.Errorf("namespace %s still exists after Close", n)
		}
	}
	done := make(chan error, 1)
	go func() { done <- sleeper.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Errorf("a command the lab started still runs after Close")
	}
}

func TestWaitPort(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	srv := lab.B.Command("socat", "-u", "TCP-LISTEN:5099,reuseaddr", "OPEN:/dev/null")
	if err := srv.Start(); err != nil {
		t.Skipf("socat: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := netlab.WaitPort(ctx, srv.Process.Pid, "tcp", 5099); err != nil {
		t.Fatal(err)
	}
	// B's listener is invisible from A's loopback but reachable over the lab.
	var c net.Conn
	if err := lab.A.Do(func() (err error) {
		c, err = net.Dial("tcp", net.JoinHostPort(lab.B.Addr4.String(), "5099"))
		return err
	}); err != nil {
		t.Fatalf("dial the listener WaitPort saw: %v", err)
	}
	c.Close()
}
