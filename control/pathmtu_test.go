package control

import (
	"context"
	"testing"

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
