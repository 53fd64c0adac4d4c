package control

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/blastnet/blast/internal/testkit"
	"github.com/blastnet/blast/pathmtu"
)

// blast server answers doctor's path-MTU probe on its test port, both
// ways, and counts it as no test.
func TestServerPathMTU(t *testing.T) {
	_, port, rl := blastServer(t, ServerConfig{})
	res, err := pathmtu.Probe(context.Background(), pathmtu.Config{Host: "127.0.0.1", Port: port})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Up.Measured || !res.Down.Measured || res.Up.PMTU != 65535 || res.Down.PMTU != 65535 {
		t.Errorf("loopback path MTU: upload %+v, download %+v; want 65535 both ways", res.Up, res.Down)
	}
	rl.mu.Lock()
	n := len(rl.res)
	rl.mu.Unlock()
	if n != 0 {
		t.Errorf("%d test results for a probe, want none", n)
	}
}

// A server runs maxMTUSessions probe sessions at once: one more is
// refused (the client reads no answer), and once they end a probe runs.
func TestServerPathMTUSessions(t *testing.T) {
	srv, port, _ := blastServer(t, ServerConfig{})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	var held []net.Conn
	for range maxMTUSessions {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		g := pathmtu.Greeting(40000)
		var back [pathmtu.GreetingSize]byte
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write(g[:]); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, back[:]); err != nil {
			t.Fatalf("session %d: no answer: %v", len(held), err)
		}
	}
	if _, err := pathmtu.Probe(context.Background(), pathmtu.Config{Host: "127.0.0.1", Port: port}); !errors.Is(err, pathmtu.ErrNoServer) {
		t.Errorf("probe beside %d sessions: %v, want ErrNoServer", maxMTUSessions, err)
	}
	for _, c := range held {
		c.Close()
	}
	testkit.WaitFor(t, 10*time.Second, "the sessions end", func() bool { return srv.mtuSessions.Load() == 0 })
	if res, err := pathmtu.Probe(context.Background(), pathmtu.Config{Host: "127.0.0.1", Port: port}); err != nil || !res.Up.Measured {
		t.Errorf("probe after the sessions ended: %+v, %v", res, err)
	}
}
