package compare

import (
	"testing"
	"time"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

// TestLabAFXDP runs the afxdp rows of the UDP comparison in a lab: the
// backend sets up in the lab host's namespace from compare's goroutines
// and moves datagrams.
func TestLabAFXDP(t *testing.T) {
	labtest.RequireRoot(t)
	if _, err := engine.Usable("afxdp"); err != nil {
		t.Skipf("afxdp: %v", err)
	}
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	cfg := Config{UDP: true, Duration: 500 * time.Millisecond, BufLen: 64}
	n := 0
	for _, c := range DefaultCases(true) {
		if c.Tx != "afxdp" && c.Rx != "afxdp" {
			continue
		}
		n++
		row := runCase(t.Context(), cfg, lab, c)
		if row.Error != "" || row.Skipped != "" {
			t.Fatalf("%s: error %q, skipped %q", row.Case, row.Error, row.Skipped)
		}
		if row.Datagrams <= 0 {
			t.Fatalf("%s: received %d datagrams (sent %d)", row.Case, row.Datagrams, row.SentDgrams)
		}
		t.Logf("%s: %d datagrams received of %d sent, %.0f pkt/s", row.Case, row.Datagrams, row.SentDgrams, row.PacketsSec)
	}
	if n < 2 {
		t.Fatalf("%d afxdp rows in DefaultCases(true), want 2", n)
	}
}
