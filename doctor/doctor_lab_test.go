package doctor_test

import (
	"encoding/json"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/doctor"
	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/internal/blasttest"
	"github.com/blastnet/blast/internal/testkit"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

func TestMain(m *testing.M) { blasttest.Main(m, true) }

// server starts blast server in the lab's host B and returns its port.
func server(t *testing.T, lab *netlab.Lab) string {
	t.Helper()
	port := testkit.FreePort(t)
	blasttest.Listening(t, lab.B, "tcp", port, blasttest.Bin, "server", "-p", strconv.Itoa(port))
	return strconv.Itoa(port)
}

// run runs blast with args in host A and returns its stdout and exit status.
func run(t *testing.T, lab *netlab.Lab, args ...string) (string, int) {
	t.Helper()
	p := blasttest.Start(t, lab.A, nil, blasttest.Bin, args...)
	err := p.WaitErr(3 * time.Minute)
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%v: %v\nstderr: %s", args, err, p.Stderr.String())
	}
	return p.Stdout.String(), code
}

// doctorRun runs blast doctor against the server in B, as JSON, with 1 s
// throughput tests and more args.
func doctorRun(t *testing.T, lab *netlab.Lab, port string, args ...string) (*doctor.Report, int) {
	t.Helper()
	out, code := run(t, lab, append([]string{"doctor", lab.B.Addr4.String(), "-p", port, "-t", "1", "-J"}, args...)...)
	var rep doctor.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor -J: %v\n%s", err, out)
	}
	return &rep, code
}

// onlyRule fails unless fs start with rule at sev and no finding of any
// other rule is at WARN or above.
func onlyRule(t *testing.T, fs []finding.Finding, rule finding.ID, sev finding.Severity) finding.Finding {
	t.Helper()
	if len(fs) == 0 || fs[0].Rule != rule || fs[0].Severity != sev {
		t.Fatalf("first finding: want %s %s, got %v", sev, rule, fs)
	}
	for _, f := range fs[1:] {
		if f.Rule != rule && f.Severity >= finding.Warn {
			t.Errorf("another finding at %s: %s", f.Severity, f)
		}
	}
	return fs[0]
}

func tc(t *testing.T, h *netlab.Host, args ...string) {
	t.Helper()
	if out, err := h.Command("tc", args...).CombinedOutput(); err != nil {
		t.Fatalf("tc %v: %v: %s", args, err, out)
	}
}

func ip(t *testing.T, h *netlab.Host, args ...string) {
	t.Helper()
	if out, err := h.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %v: %v: %s", args, err, out)
	}
}

// A healthy path: every test runs, nothing at WARN or above, exit 0, and
// the verdict says healthy in one line. The UDP test runs at 20 Mbit/s,
// which a busy host carries without a loss as well as an idle one (the
// default, from the TCP upload, is the host's to decide).
func TestLabDoctorHealthy(t *testing.T) {
	for _, topo := range []netlab.Topology{netlab.Direct, netlab.Routed} {
		t.Run(topo.String(), func(t *testing.T) {
			lab := labtest.New(t, topo, netlab.Options{})
			rep, code := doctorRun(t, lab, server(t, lab), "-b", "20M")
			if code != 0 || !rep.Healthy {
				t.Errorf("exit %d, healthy %v, verdict %q: want 0, true", code, rep.Healthy, rep.Verdict)
			}
			if !strings.HasPrefix(rep.Verdict, "healthy: tcp upload ") || !strings.Contains(rep.Verdict, ", path mtu 1500 bytes both ways, tcp download ") || !strings.HasSuffix(rep.Verdict, "; no finding at WARN or above") {
				t.Errorf("verdict %q", rep.Verdict)
			}
			for _, f := range rep.Findings {
				if f.Severity >= finding.Warn {
					t.Errorf("finding on a healthy path: %s %s", f.Severity, f)
				}
			}
			var names []string
			for _, tt := range rep.Tests {
				names = append(names, tt.Name)
				if tt.Err != "" {
					t.Errorf("%s: %s", tt.Name, tt.Err)
				}
			}
			if got := strings.Join(names, ","); got != "tcp upload,path mtu,tcp download,udp upload,latency" {
				t.Errorf("tests %s", got)
			}
			// The path MTU both ways: both ends' 1500, no finding.
			if m := rep.Tests[1].PathMTU; m == nil || m.Up.PMTU != 1500 || m.Down.PMTU != 1500 || !m.Up.Exact || !m.Down.Exact {
				t.Errorf("path mtu %+v: want 1500 both ways", m)
			}
			if u := rep.Tests[3]; u.Lost != 0 || u.Sent == 0 || u.Datagram != 1472 || u.RateBps != 20e6 {
				t.Errorf("udp: %d of %d lost, %d-byte datagrams at %g bit/s: want none of some, 1472 (the MTU's), at 20M", u.Lost, u.Sent, u.Datagram, u.RateBps)
			}
			if l := rep.Tests[4]; l.RTT == nil || l.RTT.Count == 0 {
				t.Errorf("latency through blast server's port: %+v", l)
			}
		})
	}
}

// A 100 Mbit/s token bucket on A's egress: the upload sits at its rate,
// the download runs free. The shaper is named first, with its rate; the
// asymmetry it makes is not a second finding.
func TestLabDoctorShaper(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	tc(t, lab.A, "qdisc", "add", "dev", lab.A.Iface, "root", "tbf", "rate", "100mbit", "burst", "64kb", "latency", "50ms")
	rep, code := doctorRun(t, lab, server(t, lab))
	f := onlyRule(t, rep.Findings, "D14", finding.Warn)
	if f.Iface != lab.A.Iface || !strings.Contains(f.Evidence, "shapes to 100 Mbit/s") || !strings.HasPrefix(f.Evidence, "tbf ") {
		t.Errorf("D14: %s on %s", f, f.Iface)
	}
	if code != 1 || rep.Healthy {
		t.Errorf("exit %d, healthy %v: want 1, false", code, rep.Healthy)
	}
	if want := "WARN D14: the shaper, not the link, is the bottleneck: goodput sits at its rate"; rep.Verdict != want {
		t.Errorf("verdict %q, want %q", rep.Verdict, want)
	}
}

// A's MTU is 9000, B's 1500: TCP hides it (the MSS), UDP datagrams that
// fill A's MTU are all lost: an ERROR naming the datagram size and both MTUs.
func TestLabDoctorMTUMismatch(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	ip(t, lab.A, "link", "set", "dev", lab.A.Iface, "mtu", "9000")
	rep, _ := doctorRun(t, lab, server(t, lab))
	f := onlyRule(t, rep.Findings, "D16", finding.Error)
	if !strings.HasPrefix(f.Evidence, "8972-byte datagrams make 9000-byte packets; MTU sender 9000, receiver 1500") {
		t.Errorf("D16 evidence %q", f.Evidence)
	}
	if !strings.Contains(f.Fix, "-l 1472") {
		t.Errorf("D16 fix %q: want -l 1472", f.Fix)
	}
}

// clientFindings runs blast client in A with args against the server in B
// and returns the path findings of its JSON result.
func clientFindings(t *testing.T, lab *netlab.Lab, port string, args ...string) []finding.Finding {
	t.Helper()
	out, _ := run(t, lab, append([]string{"client", lab.B.Addr4.String(), "-p", port, "-J"}, args...)...)
	return findingsOf(t, out)
}

// findingsOf is the findings in a client's -J document.
func findingsOf(t *testing.T, out string) []finding.Finding {
	t.Helper()
	var doc struct {
		End struct {
			Blast struct {
				Findings []finding.Finding `json:"findings"`
			} `json:"blast"`
		} `json:"end"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("client -J: %v\n%s", err, out)
	}
	return doc.End.Blast.Findings
}

// UDP at 2 Gbit/s into 16 KiB receive buffers: the receiver's socket
// overflows, counted by the receiver's kernel (RcvbufErrors), and said so.
func TestLabUDPReceiveBuffer(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	fs := clientFindings(t, lab, server(t, lab), "-u", "-b", "2G", "-l", "1400", "-w", "8K", "-t", "1")
	f := onlyRule(t, fs, "D18", finding.Warn)
	if f.Iface != lab.B.Iface || !strings.Contains(f.Evidence, "dropped in full receive buffers on the receiver (RcvbufErrors") || !strings.Contains(f.Evidence, "SO_RCVBUF 16384 bytes") {
		t.Errorf("D18: %s on %s", f, f.Iface)
	}
}

// A tbf with a queue of ten packets in front of 100 Mbit/s: TCP's bursts
// overflow it. The sender's queue is named, with its drops and limit.
func TestLabShallowQueue(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	tc(t, lab.A, "qdisc", "add", "dev", lab.A.Iface, "root", "tbf", "rate", "100mbit", "burst", "16kb", "limit", "15000")
	fs := clientFindings(t, lab, server(t, lab), "-t", "1")
	f := onlyRule(t, fs, "D19", finding.Warn)
	if f.Iface != lab.A.Iface || !strings.Contains(f.Evidence, "(queue limit 15000 bytes)") {
		t.Errorf("D19: %s on %s", f, f.Iface)
	}
}

// A 50 ms path and 32 KiB windows: goodput is the window over the round
// trip, and the fix names the window the path needs. (The line is this
// process's: against 50 ms, the few it may stall on a busy host do not
// move goodput off window/RTT.)
func TestLabWindowLimited(t *testing.T) {
	lab := labtest.New(t, netlab.Delayed, netlab.Options{Delay: 50 * time.Millisecond})
	fs := clientFindings(t, lab, server(t, lab), "-t", "3", "-w", "32K")
	f := onlyRule(t, fs, "D15", finding.Warn)
	if !strings.Contains(f.Evidence, "/ RTT 5") || !strings.Contains(f.Fix, "-w ") {
		t.Errorf("D15: %s; fix %s", f, f.Fix)
	}
}

// ttcp: a receiver reading 1448-byte buffers from a sender writing 128 KiB
// is reader-limited; the transmitter prints its retransmits.
func TestLabTTCPReaderLimited(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	r := blasttest.Listening(t, lab.B, "tcp", 5001, blasttest.Bin, "-r", "-s", "-l", "1448")
	tx := blasttest.Start(t, lab.A, nil, blasttest.Bin, "-t", "-s", "-l", "131072", "-n", "2000", lab.B.Addr4.String())
	tx.Wait(t)
	r.Wait(t)
	if !strings.Contains(tx.Stdout.String(), "blast-t: tcp: ") || !strings.Contains(tx.Stdout.String(), " retransmits, rtt ") {
		t.Errorf("transmitter: no tcp line:\n%s", tx.Stdout.String())
	}
	if want := "blast-r: path WARN D21 " + lab.B.Iface + ": reader-limited: "; !strings.Contains(r.Stdout.String(), want) {
		t.Errorf("receiver: no %q:\n%s", want, r.Stdout.String())
	}
}

// ttcp: a receiver with 128 KiB buffers fed 1448-byte writes at 20 Mbit/s
// gets short reads because data arrives slowly: starved, not the limit.
func TestLabTTCPStarved(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	r := blasttest.Listening(t, lab.B, "tcp", 5001, blasttest.Bin, "-r", "-s", "-l", "131072")
	tx := blasttest.Start(t, lab.A, nil, blasttest.Bin, "-t", "-s", "-l", "1448", "-n", "3000", "--rate", "20M", lab.B.Addr4.String())
	tx.Wait(t)
	r.Wait(t)
	out := r.Stdout.String()
	if want := "blast-r: path INFO D21 " + lab.B.Iface + ": starved receiver: "; !strings.Contains(out, want) {
		t.Errorf("receiver: no %q:\n%s", want, out)
	}
	if strings.Contains(out, "path WARN") || strings.Contains(out, "path ERROR") {
		t.Errorf("receiver: a finding at WARN or above on a paced transfer:\n%s", out)
	}
}

// blast server answers blast lat on its own port, TCP and UDP, so a host
// needs one service; a UDP test still runs on that port after it.
func TestLabLatencyOnServerPort(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	port := server(t, lab)
	for _, udp := range []bool{false, true} {
		args := []string{"lat", lab.B.Addr4.String(), "-p", port, "-n", "500", "-J"}
		if udp {
			args = append(args, "-u")
		}
		out, code := run(t, lab, args...)
		var res struct {
			RoundTrips int64 `json:"round_trips"`
			Lost       int64 `json:"lost"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 {
			t.Fatalf("udp %v: exit %d, %v\n%s", udp, code, err, out)
		}
		if res.RoundTrips != 500 || res.Lost != 0 {
			t.Errorf("udp %v: %d round trips, %d lost; want 500, 0", udp, res.RoundTrips, res.Lost)
		}
	}
	out, code := run(t, lab, "client", lab.B.Addr4.String(), "-p", port, "-u", "-b", "10M", "-t", "1")
	if code != 0 || !strings.Contains(out, "receiver") {
		t.Errorf("a UDP test after the latency runs: exit %d\n%s", code, out)
	}
}

// A path that loses 2% of its frames with no queue or socket to blame:
// retransmissions, and the loss is placed between the ends.
func TestLabLossOnThePath(t *testing.T) {
	lab := labtest.New(t, netlab.Delayed, netlab.Options{Delay: 2 * time.Millisecond, LossPct: 2, Seed: 7})
	fs := clientFindings(t, lab, server(t, lab), "-t", "2")
	f := onlyRule(t, fs, "D20", finding.Warn)
	if !strings.Contains(f.Evidence, " retransmissions for about ") {
		t.Errorf("D20 evidence %q", f.Evidence)
	}
}

// A sender held to its own -b is healthy: nothing at WARN or above. The
// rates are far below what a busy host carries.
func TestLabHealthyOwnRate(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	port := server(t, lab)
	for _, args := range [][]string{{"-b", "50M", "-t", "1"}, {"-u", "-b", "50M", "-t", "1"}, {"-R", "-b", "50M", "-t", "1"}} {
		for _, f := range clientFindings(t, lab, port, args...) {
			if f.Severity >= finding.Warn {
				t.Errorf("%v: %s %s", args, f.Severity, f)
			}
		}
	}
}

// UDP at twice a shaper on the sender's own interface: the shaper sets the
// pace (D14), and its queue's drops were sends refused to blast's sender
// and sent again, which D19 says at INFO: no loss there, nor on the path.
func TestLabUDPSenderWaitsForItsShaper(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	tc(t, lab.A, "qdisc", "add", "dev", lab.A.Iface, "root", "tbf", "rate", "50mbit", "burst", "64kb", "latency", "50ms")
	// readwrite: datagrams one at a time (a train of them that a tbf
	// cuts up loses what has no room unseen; the engine sends trains
	// no more once it saw a refusal).
	fs := clientFindings(t, lab, server(t, lab), "-u", "-b", "100M", "-l", "1400", "-t", "2", "-P", "4", "--backend", "readwrite")
	for _, f := range fs {
		t.Logf("%s %s: %s\n  evidence: %s", f.Severity, f.Rule, f.Summary, f.Evidence)
	}
	onlyRule(t, fs, "D14", finding.Warn)
	for _, f := range fs {
		if f.Rule == "D19" && (f.Severity != finding.Info || !strings.Contains(f.Evidence, "sent each again")) {
			t.Errorf("%s %s: %s (%s)", f.Severity, f.Rule, f.Summary, f.Evidence)
		}
	}
}
