package bench

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// The test binary doubles as a child that touches BENCH_TEST_ALLOC_MB
// megabytes and prints the CPUs it may run on, for the rusage tests.
func TestMain(m *testing.M) {
	if mb, err := strconv.Atoi(os.Getenv("BENCH_TEST_ALLOC_MB")); err == nil {
		buf := make([]byte, mb<<20)
		for i := 0; i < len(buf); i += 4096 {
			buf[i] = 1
		}
		runtime.KeepAlive(buf)
		f, err := os.Open("/proc/self/status")
		if err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "Cpus_allowed_list:") {
					os.Stdout.WriteString(strings.TrimSpace(strings.TrimPrefix(sc.Text(), "Cpus_allowed_list:")) + "\n")
				}
			}
			f.Close()
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runChild runs argv (ending with this test binary) with the child's
// allocation and returns what it printed and its rusage.
func runChild(t *testing.T, mb int, argv ...string) (string, float64, int64) {
	t.Helper()
	c := exec.Command(argv[0], argv[1:]...)
	c.Env = append(os.Environ(), "BENCH_TEST_ALLOC_MB="+strconv.Itoa(mb))
	out, err := c.Output()
	if err != nil {
		t.Fatalf("%v: %v", argv, err)
	}
	user, sys, rss, sw := rusage(c.ProcessState)
	if sw <= 0 {
		t.Errorf("%v: %d context switches, want some (a Go process's threads park and wake)", argv, sw)
	}
	return strings.TrimSpace(string(out)), user + sys, rss
}

// Peak RSS comes from wait4's rusage of the exited child: a child that
// touched 48 MB peaked above 48 MB, one that touched 1 MB far below.
func TestRusageMaxRSS(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the child reads /proc/self/status")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	_, _, small := runChild(t, 1, self)
	_, cpu, big := runChild(t, 48, self)
	if big < 48<<10 {
		t.Errorf("a child that touched 48 MB: max RSS %d KiB, want at least %d", big, 48<<10)
	}
	if small >= big-40<<10 {
		t.Errorf("a child that touched 1 MB: max RSS %d KiB, not far below the 48 MB child's %d", small, big)
	}
	if cpu <= 0 {
		t.Errorf("CPU time %v s, want some", cpu)
	}
	if u, s, r, sw := rusage(nil); u != 0 || s != 0 || r != 0 || sw != 0 {
		t.Errorf("rusage(nil) = %v, %v, %v, %v; want zeros", u, s, r, sw)
	}
}

// pin's taskset execs the command in place: the CPU mask is the one
// asked for, and the rusage (peak RSS) is still the command's.
func TestPinTaskset(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("taskset is Linux's")
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		t.Skip("no taskset (util-linux)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cpus := allowedCPUs()
	if len(cpus) == 0 {
		t.Fatal("allowedCPUs: none")
	}
	cpu := cpus[len(cpus)-1]
	out, _, rss := runChild(t, 40, pin(cpu, []string{self})...)
	if out != strconv.Itoa(cpu) {
		t.Errorf("pinned to cpu%d, the child may run on %q", cpu, out)
	}
	if rss < 40<<10 {
		t.Errorf("through taskset: max RSS %d KiB, want at least %d (the command's own)", rss, 40<<10)
	}
	if got := pin(-1, []string{"x"}); len(got) != 1 {
		t.Errorf("pin(-1) = %v, want the command unchanged", got)
	}
}
