package doctor_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/blastnet/blast/internal/blasttest"
	"github.com/blastnet/blast/internal/netlab"
	"github.com/blastnet/blast/internal/netlab/labtest"
	"github.com/blastnet/blast/internal/testkit"
	"github.com/blastnet/blast/nicinfo"
)

// cpuQuota puts process pid in a cgroup of its own allowed quota
// microseconds of CPU every 100 ms (cgroup v2's cpu.max, or v1's
// cfs_quota_us), whichever this host mounts; the test's cleanup moves the
// process out and removes the cgroup.
func cpuQuota(t *testing.T, pid, quota int) {
	t.Helper()
	name := fmt.Sprintf("blast-test-cpu-%d-%d", os.Getpid(), pid)
	var dir, procs string
	var files [][2]string
	if b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers"); err == nil && strings.Contains(string(b), "cpu") {
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
// allowed 3% of a CPU (cpu.max "3000 100000"), on a path nothing else
// limits. Its data thread waits to run nearly all of every test (the
// quota itself is out of the server's sight: ip netns exec mounts a
// /sys without the cgroup tree), busy host or not: doctor names the CPU at the far end first (D28, at
// WARN: the receiver of the upload, the sender of the download), and
// claims no network cause: no loss in a device, no buffer overflow, no
// asymmetry, no policer, no window.
func TestLabDoctorStarvedReceiver(t *testing.T) {
	lab := labtest.New(t, netlab.Routed, netlab.Options{})
	port := testkit.FreePort(t)
	p := blasttest.Listening(t, lab.B, "tcp", port, blasttest.Bin, "server", "-p", strconv.Itoa(port))
	cpuQuota(t, p.Cmd.Process.Pid, 3000)
	rep, code := doctorRun(t, lab, strconv.Itoa(port), "-b", "20M")
	for _, f := range rep.Findings {
		t.Logf("%s %s: %s\n  evidence: %s\n  fix: %s", f.Severity, f.Rule, f.Summary, f.Evidence, f.Fix)
	}
	for _, tt := range rep.Tests {
		t.Logf("test %s: %.4g bit/s (rate %.4g), %d retransmits, %d of %d lost; %s", tt.Name, tt.Bps, tt.RateBps, tt.Retransmits, tt.Lost, tt.Sent, tt.Err)
	}
	if code == 0 || rep.Healthy {
		t.Errorf("exit %d, healthy %v: a starved receiver is no healthy path", code, rep.Healthy)
	}
	f := onlyRule(t, rep.Findings, "D28", nicinfo.Warn)
	if !strings.HasPrefix(f.Summary, "CPU-bound at the receiver (remote), not the network") &&
		!strings.HasPrefix(f.Summary, "CPU-bound at the sender (remote), not the network") {
		t.Errorf("D28 names %q: want the far end (remote)", f.Summary)
	}
	if !strings.HasPrefix(rep.Verdict, "WARN D28: CPU-bound at the ") {
		t.Errorf("verdict %q", rep.Verdict)
	}
	for _, g := range rep.Findings {
		if g.Rule == "D28" && strings.Contains(g.Summary, "(local)") && g.Severity >= nicinfo.Warn {
			t.Errorf("the unconstrained near end named: %s", g)
		}
	}
}
