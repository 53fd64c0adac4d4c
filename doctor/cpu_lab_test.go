package doctor_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/blastnet/blast/doctor"
	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/internal/blasttest"
	"github.com/blastnet/blast/internal/testkit"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

// cgroupV2 reports whether this host's cgroup tree at /sys/fs/cgroup is
// v2 with the cpu controller (else v1's cpu hierarchy is used).
func cgroupV2() bool {
	b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers")
	return err == nil && strings.Contains(string(b), "cpu")
}

// quotaServer starts blast server in h as a container would run it: with
// the cgroup tree mounted where it looks (ip netns exec gives it a /sys
// of its own, without one; these mounts live in that mount namespace
// only, and end with it), and puts it in a cgroup of its own allowed
// quota microseconds of CPU every 100 ms. It returns the port.
func quotaServer(t *testing.T, h *netlab.Host, quota int) string {
	t.Helper()
	port := testkit.FreePort(t)
	mount := "mount -t tmpfs cgroup /sys/fs/cgroup && mkdir /sys/fs/cgroup/cpu && mount -t cgroup -o cpu cpu /sys/fs/cgroup/cpu"
	if cgroupV2() {
		mount = "mount -t cgroup2 cgroup2 /sys/fs/cgroup"
	}
	p := blasttest.Listening(t, h, "tcp", port, "sh", "-c", mount+` && exec "$0" server -p "$1"`, blasttest.Bin, strconv.Itoa(port))
	cpuQuota(t, p.Cmd.Process.Pid, quota)
	return strconv.Itoa(port)
}

// cpuQuota puts process pid in a cgroup of its own allowed quota
// microseconds of CPU every 100 ms (cgroup v2's cpu.max, or v1's
// cfs_quota_us), whichever this host mounts; the test's cleanup moves the
// process out and removes the cgroup.
func cpuQuota(t *testing.T, pid, quota int) {
	t.Helper()
	name := fmt.Sprintf("blast-test-cpu-%d-%d", os.Getpid(), pid)
	var dir, procs string
	var files [][2]string
	if cgroupV2() {
		// v2: the root must hand the cpu controller to its children.
		if err := os.WriteFile("/sys/fs/cgroup/cgroup.subtree_control", []byte("+cpu"), 0); err != nil {
			t.Fatalf("cgroup v2: enable the cpu controller: %v", err)
		}
		dir, procs = filepath.Join("/sys/fs/cgroup", name), "/sys/fs/cgroup/cgroup.procs"
		files = [][2]string{{"cpu.max", fmt.Sprintf("%d 100000", quota)}}
	} else if _, err := os.Stat("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"); err == nil {
		dir, procs = filepath.Join("/sys/fs/cgroup/cpu", name), "/sys/fs/cgroup/cpu/cgroup.procs"
		files = [][2]string{{"cpu.cfs_period_us", "100000"}, {"cpu.cfs_quota_us", strconv.Itoa(quota)}}
	} else {
		t.Skip("no cgroup cpu controller here (neither cgroup v2's cpu.max nor v1's cpu.cfs_quota_us): a CPU quota cannot be set")
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("cgroup: %v", err)
	}
	t.Cleanup(func() {
		// The process may be gone already; then the cgroup is empty.
		os.WriteFile(procs, []byte(strconv.Itoa(pid)), 0)
		if err := os.Remove(dir); err != nil {
			t.Errorf("remove the cgroup: %v", err)
		}
	})
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f[0]), []byte(f[1]), 0); err != nil {
			t.Fatalf("cgroup %s: %v", f[0], err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		t.Fatalf("cgroup: move the server in: %v", err)
	}
}

// A receiver starved of CPU: the far end's blast server in a cgroup
// allowed 2% of a CPU (cpu.max "2000 100000"), on a path nothing else
// limits. The quota throttles it in most periods of every test and its
// data thread waits to run most of the test, busy host or not: doctor names the CPU at the far end first (D28, at
// WARN: the receiver of the upload, the sender of the download), and
// claims no network cause: no loss in a device, no buffer overflow, no
// asymmetry, no policer, no window.
func TestLabDoctorStarvedReceiver(t *testing.T) {
	lab := labtest.New(t, netlab.Routed, netlab.Options{})
	rep, code := doctorRun(t, lab, quotaServer(t, lab.B, 2000), "-b", "20M")
	for _, f := range rep.Findings {
		t.Logf("%s %s: %s\n  evidence: %s\n  fix: %s", f.Severity, f.Rule, f.Summary, f.Evidence, f.Fix)
	}
	for _, tt := range rep.Tests {
		t.Logf("test %s: %.4g bit/s (rate %.4g), %d retransmits, %d of %d lost; %s", tt.Name, tt.Bps, tt.RateBps, tt.Retransmits, tt.Lost, tt.Sent, tt.Err)
	}
	if code == 0 || rep.Healthy {
		t.Errorf("exit %d, healthy %v: a starved receiver is no healthy path", code, rep.Healthy)
	}
	f := onlyRule(t, rep.Findings, "D28", finding.Warn)
	if !strings.HasPrefix(f.Summary, "CPU-bound at the receiver (remote), not the network: a cgroup quota holds its blast to 0.02 CPU, and throttled it most of the test") &&
		!strings.HasPrefix(f.Summary, "CPU-bound at the sender (remote), not the network: a cgroup quota holds its blast to 0.02 CPU, and throttled it most of the test") {
		t.Errorf("D28 names %q: want the far end's quota (remote, 0.02 CPU)", f.Summary)
	}
	if !strings.HasPrefix(rep.Verdict, "WARN D28: CPU-bound at the ") {
		t.Errorf("verdict %q", rep.Verdict)
	}
	for _, g := range rep.Findings {
		if g.Rule == "D28" && strings.Contains(g.Summary, "(local)") && g.Severity >= finding.Warn {
			t.Errorf("the unconstrained near end named: %s", g)
		}
	}
}

// Doctor's own UDP test at its automatic rate (90% of the TCP upload's)
// overflows a receiver held to 2% of a CPU: doctor runs it again at a
// quarter of the rate rather than report the overflow it caused, judges
// only its last run, and names the CPU, not the network.
func TestLabDoctorLowersUDPRate(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	rep, _ := doctorRun(t, lab, quotaServer(t, lab.B, 2000))
	var udp []doctor.Test
	for _, tt := range rep.Tests {
		t.Logf("test %s: %.4g bit/s (rate %.4g), %d of %d lost; %s", tt.Name, tt.Bps, tt.RateBps, tt.Lost, tt.Sent, tt.Err)
		if strings.HasPrefix(tt.Name, "udp upload") {
			udp = append(udp, tt)
		}
	}
	for _, f := range rep.Findings {
		t.Logf("%s %s: %s\n  evidence: %s", f.Severity, f.Rule, f.Summary, f.Evidence)
	}
	if len(udp) < 2 || udp[0].Name != "udp upload" || udp[0].Lost == 0 {
		t.Fatalf("udp tests %+v: want a first run that lost datagrams, and another", udp)
	}
	for i, tt := range udp[1:] {
		if tt.Name != "udp upload at a lower rate" || tt.RateBps != udp[i].RateBps/4 {
			t.Errorf("run %d: %q at %g bit/s, want the lower rate at a quarter of %g", i+2, tt.Name, tt.RateBps, udp[i].RateBps)
		}
	}
	if len(udp) > 3 {
		t.Errorf("%d udp runs: want at most 3", len(udp))
	}
	onlyRule(t, rep.Findings, "D28", finding.Warn)
}
