package control

import (
	"context"
	"testing"
	"time"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

// queueCeiling is the most UDP goodput a 50 Mbit/s tbf lets through with
// 1400-byte datagrams: 1400 bytes of payload in each 1442-byte frame it
// counts (UDP, IPv4 and Ethernet headers).
const queueCeiling = 50e6 * 1400 / 1442

// A UDP sender at twice the rate of a shaper on its own interface: the
// tbf's queue fills, and the sender waits for it instead of losing its
// datagrams there, so the receiver sees no loss the path did not make
// (the lab's link loses nothing). Before, the tbf dropped them and the
// send calls succeeded: -w 4M lost 48-50%, -P 4 84-87%. The shaper
// fixes the rate far below what the host moves, so the receiver's rate
// stays within the link on any host.
func TestLabUDPSenderWaitsForItsQueue(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	if out, err := lab.A.Command("tc", "qdisc", "add", "dev", lab.A.Iface, "root", "tbf", "rate", "50mbit", "burst", "64kb", "latency", "50ms").CombinedOutput(); err != nil {
		t.Fatalf("tc on %s: %v: %s", lab.A.Iface, err, out)
	}
	port, rl := labServer(t, lab, ServerConfig{Interval: time.Second})
	n := 0
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		// A socket buffer larger than the tbf's queue (369 KiB).
		{"w4M", Config{Window: 4 << 20}},
		// Four sockets that together hold more than the queue.
		{"P4", Config{Parallel: 4}},
		{"P4 readwrite", Config{Parallel: 4, Backend: "readwrite"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Host, cfg.Port, cfg.NoNIC, cfg.Interval = lab.B.Addr4.String(), port, true, time.Second
			cfg.UDP, cfg.Rate, cfg.RateSet, cfg.BlockLen, cfg.Duration = true, 100e6, true, 1400, 2*time.Second
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var r *result.Result
			if err := lab.A.Do(func() (err error) {
				r, err = Run(ctx, cfg)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			n++
			s := rl.wait(t, n)[n-1]
			if s.Err != nil {
				t.Fatalf("server: %v", s.Err)
			}
			var pk, lost, refused, waited int64
			for _, st := range s.Streams {
				if st.UDP != nil {
					pk += st.UDP.Packets
					lost += st.UDP.Lost
				}
			}
			for _, st := range r.Streams {
				refused += st.Facts.Counts[engine.FactNoBufs]
				waited += st.Facts.Counts[engine.FactNoBufsWait]
			}
			t.Logf("%d of %d datagrams lost; the senders' queue refused %d sends and they waited %v for it",
				lost, pk, refused, time.Duration(waited))
			if pk == 0 || float64(lost) >= 0.05*float64(pk) {
				t.Errorf("the receiver lost %d of %d datagrams through a link that loses none: the sender dropped its own", lost, pk)
			}
			if refused == 0 || waited <= 0 {
				t.Errorf("a sender at twice the shaper's rate never found its queue full (%d refused, %v waited)", refused, time.Duration(waited))
			}
			checkWithinLink(t, "server", s, queueCeiling, false)
		})
	}
}
