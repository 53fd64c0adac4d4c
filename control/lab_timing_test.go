//go:build timing

package control

import (
	"fmt"
	"testing"

	"github.com/blastnet/blast/internal/timingcheck"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

// TestTimingLabUDPLossless: a UDP test between blast client and server
// over a veth pair, paced below what the lab carries, delivers every
// datagram, once and (but for afxdp, which takes them from every RX
// queue) in order (TestLabUDPBlastToBlast checks the counts and
// backends).
func TestTimingLabUDPLossless(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	port, rl := labServer(t, lab, ServerConfig{})
	n := 0
	for _, tc := range labUDPCases(lab) {
		if !tc.lossless {
			continue
		}
		checkTiming(t, tc.name, timingcheck.Property{
			Name:  fmt.Sprintf("lab UDP %s: datagrams lost, or out of order", tc.name),
			Unit:  "% of those sent",
			Bound: "0",
			Holds: func(m float64) bool { return m == 0 },
			Measure: func(t *testing.T, run int) (float64, error) {
				n++
				r, s, _ := runLabUDP(t, lab, port, rl, n, tc)
				var sent, bad int64
				for i, c := range r.Streams {
					sv := s.Streams[i]
					if c.UDP == nil || sv.UDP == nil {
						return 0, fmt.Errorf("stream %d: datagram counts missing", c.ID)
					}
					snd, rcv := c.UDP, sv.UDP
					if !c.Sender {
						snd, rcv = sv.UDP, c.UDP
					}
					// The product's own accounting: a server sending a
					// count sends until TEST_END, and what it sent after
					// the client had the count is no loss.
					s, lost := r.UDPLoss(c)
					sent += s
					bad += lost + rcv.Duplicates
					if tc.backend != "" {
						bad += rcv.OutOfOrder
					}
					t.Logf("run %d: stream %d: sent %d, received up to %d, %d lost, %d duplicates, %d out of order", run+1, c.ID, snd.Packets, rcv.Packets, rcv.Lost, rcv.Duplicates, rcv.OutOfOrder)
				}
				return 100 * float64(bad) / float64(max(sent, 1)), nil
			},
		})
	}
}
