//go:build timing

package control

import (
	"fmt"
	"testing"

	"github.com/blastnet/blast/internal/timingcheck"
)

// TestTimingInteropReceivedShare: in a timed TCP test against iperf3 on
// loopback, both ways, the receiver counts at least 90% of what the
// sender sent (what is still on its way at the end goes uncounted;
// TestBlastClientAgainstIperf3Server and TestIperf3ClientAgainstBlastServer
// check that it never counts more, and that a byte count arrives whole).
func TestTimingInteropReceivedShare(t *testing.T) {
	needIperf3(t)
	_, port, log := blastServer(t, ServerConfig{})
	seen := 0
	for _, tc := range interopCases {
		if tc.bytes > 0 {
			continue
		}
		for _, side := range []string{"a blast client against iperf3 -s", "iperf3 -c against a blast server"} {
			checkTiming(t, tc.name+"/"+side, timingcheck.Property{
				Name:  fmt.Sprintf("TCP %s, %s: the share of the bytes sent that the receiver counted (the direction lowest)", tc.name, side),
				Unit:  "%",
				Bound: "at least 90",
				Holds: func(m float64) bool { return m >= 90 },
				Measure: func(t *testing.T, run int) (float64, error) {
					var d *iperfJSON
					if side[0] == 'a' {
						iport, wait := iperf3Server(t)
						cfg := tc.cfg
						cfg.Port = iport
						d = blastJSON(t, runClient(t, cfg))
						wait()
					} else {
						d = iperf3Client(t, port, tc.args...)
						if res := log.wait(t, seen+1)[seen]; res.Err != nil {
							return 0, fmt.Errorf("server: %w", res.Err)
						}
						seen++
					}
					low := 100.0
					for _, p := range [][2]*iperfSum{{d.End.SumSent, d.End.SumReceived}, {d.End.SumSentBidirReverse, d.End.SumReceivedBidirReverse}} {
						if p[0] == nil || p[1] == nil || p[0].Bytes == 0 {
							continue
						}
						low = min(low, 100*float64(p[1].Bytes)/float64(p[0].Bytes))
					}
					return low, nil
				},
			})
		}
	}
}

// checkTiming checks p in a subtest of its own: a check the host is too
// busy to judge skips, and the checks after it in the same test still
// run.
func checkTiming(t *testing.T, name string, p timingcheck.Property) {
	t.Helper()
	t.Run(name, func(t *testing.T) { timingcheck.Check(t, p) })
}
