//go:build timing

package latency_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/blastnet/blast/internal/blasttest"
	"github.com/blastnet/blast/internal/timingcheck"
	"github.com/blastnet/blast/latency"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

var sockperfP50 = regexp.MustCompile(`percentile 50\.000 =\s+([0-9.]+)`)

// blastP50 runs blast lat against the lab's server and returns its
// round-trip p50 in microseconds.
func blastP50(t *testing.T, lab *netlab.Lab, udp bool, args ...string) (float64, error) {
	args = append([]string{"lat", lab.B.Addr4.String(), "-J"}, args...)
	if udp {
		args = append(args, "-u")
	}
	cli := blasttest.Start(t, lab.A, nil, blasttest.Bin, args...)
	if err := cli.WaitErr(time.Minute); err != nil {
		return 0, fmt.Errorf("blast %v: %v\n%s", args, err, cli.Stderr.String())
	}
	var doc latency.JSON
	if err := json.Unmarshal(cli.Stdout.Bytes(), &doc); err != nil {
		return 0, fmt.Errorf("%v:\n%s", err, cli.Stdout.String())
	}
	return float64(doc.RTT.P50) / 1e3, nil
}

// TestTimingLatencySockperf: blast's round-trip p50 and sockperf's
// (--full-rtt) on the same path agree within a factor of 10 each way,
// which catches a unit slip or an RTT/2 doubled twice, not a few
// microseconds of overhead. The figure is blast's p50 over sockperf's,
// both measured back to back in each run, so that both see the same
// host.
//
// sockperf runs --nonblocked: its threads poll rather than sleep, as
// blast's do (Go's scheduler spins before it parks a thread). A sockperf
// that sleeps in recvfrom pays for this VM's idle CPUs waking up: 75 to
// 90 us on a quiet host against blast's 15.
func TestTimingLatencySockperf(t *testing.T) {
	if _, err := exec.LookPath("sockperf"); err != nil {
		t.Fatal("sockperf is not installed (apt-get install sockperf); the comparison needs it")
	}
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	addr := lab.B.Addr4.String()
	const spPort = 11111
	for _, udp := range []bool{false, true} {
		proto := "tcp"
		if udp {
			proto = "udp"
		}
		t.Run(proto, func(t *testing.T) {
			spArgs := []string{"-i", addr, "-p", strconv.Itoa(spPort), "--nonblocked"}
			if !udp {
				spArgs = append(spArgs, "--tcp")
			}
			blasttest.Listening(t, lab.B, proto, spPort, "sockperf", append([]string{"server"}, spArgs...)...)
			blasttest.Listening(t, lab.B, proto, latency.DefaultPort, blasttest.Bin, "lat", "-s")
			timingcheck.Check(t, timingcheck.Property{
				Name:  proto + " blast lat p50 / sockperf --full-rtt p50 on a veth pair",
				Runs:  5,
				Unit:  "(ratio)",
				Bound: "0.1 to 10",
				Holds: func(m float64) bool { return m >= 0.1 && m <= 10 },
				Measure: func(t *testing.T, run int) (float64, error) {
					sp := blasttest.Start(t, lab.A, nil, "sockperf", append([]string{"ping-pong", "-m", "64", "-t", "1", "--full-rtt"}, spArgs...)...)
					if err := sp.WaitErr(time.Minute); err != nil {
						return 0, fmt.Errorf("sockperf: %v\n%s%s", err, sp.Stdout.String(), sp.Stderr.String())
					}
					m := sockperfP50.FindStringSubmatch(sp.Stdout.String() + sp.Stderr.String())
					if m == nil {
						return 0, fmt.Errorf("no p50 in sockperf's output:\n%s%s", sp.Stdout.String(), sp.Stderr.String())
					}
					spUS, err := strconv.ParseFloat(m[1], 64)
					if err != nil || spUS <= 0 {
						return 0, fmt.Errorf("sockperf's p50 %q: %v", m[1], err)
					}
					blastUS, err := blastP50(t, lab, udp, "-l", "64", "-t", "1", "--warmup", "1000")
					if err != nil {
						return 0, err
					}
					t.Logf("%s run %d: p50 blast %.2f us, sockperf --full-rtt %.2f us", proto, run+1, blastUS, spUS)
					return blastUS / spUS, nil
				},
			})
		})
	}
}

// TestTimingLatencyVethP50: blast lat's round-trip p50 across a veth
// pair is under 100 ms (it is tens of microseconds; more is a unit slip
// or a stalled flow).
func TestTimingLatencyVethP50(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	for _, udp := range []bool{false, true} {
		proto := "tcp"
		if udp {
			proto = "udp"
		}
		t.Run(proto, func(t *testing.T) {
			blasttest.Listening(t, lab.B, proto, latency.DefaultPort, blasttest.Bin, "lat", "-s")
			timingcheck.Check(t, timingcheck.Property{
				Name:  proto + " blast lat p50 on a veth pair",
				Runs:  3,
				Unit:  "us",
				Bound: "under 100000",
				Holds: func(m float64) bool { return m > 0 && m < 100000 },
				Measure: func(t *testing.T, run int) (float64, error) {
					return blastP50(t, lab, udp, "-n", "3000", "-l", "100")
				},
			})
		})
	}
}
