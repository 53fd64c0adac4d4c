package bench

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Machine describes where a run happened.
type Machine struct {
	Hostname    string            `json:"hostname"`
	Kernel      string            `json:"kernel"`
	CPUModel    string            `json:"cpu_model"`
	Cores       int               `json:"cores"`
	GoVersion   string            `json:"go_version"`
	BlastCommit string            `json:"blast_commit"`
	Peers       map[string]string `json:"peers"` // tool -> version line
}

// DescribeMachine reads the kernel release, the CPU model, the core count
// and the commit of the tree in dir (with "+dirty" when it has changes).
func DescribeMachine(ctx context.Context, dir string) Machine {
	m := Machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), Peers: map[string]string{}}
	m.Hostname, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if gv, err := exec.CommandContext(ctx, "go", "env", "GOVERSION").Output(); err == nil {
		m.GoVersion = strings.TrimSpace(string(gv)) // the toolchain that built blast
	}
	git := func(args ...string) string {
		out, err := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...).Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	m.BlastCommit = git("rev-parse", "--short=12", "HEAD")
	if m.BlastCommit != "" && git("status", "--porcelain", "--untracked-files=no") != "" {
		m.BlastCommit += "+dirty"
	}
	return m
}

// toolVersion is the first line a tool prints about its version.
func toolVersion(ctx context.Context, tool string) string {
	args := map[string][]string{
		"iperf3": {"--version"}, "sockperf": {"--version"}, "qperf": {"--version"}, "trafgen": {"--version"},
	}[tool]
	out, _ := exec.CommandContext(ctx, tool, args...).CombinedOutput()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}
