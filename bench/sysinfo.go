package bench

import (
	"bufio"
	"context"
	"debug/buildinfo"
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
// and the commit blast was built from: the revision Go stamped into the
// binary (with "+dirty" when its tree had changes), or when bench built
// blast itself from dir and there is no stamp, dir's commit.
func DescribeMachine(ctx context.Context, dir, blast string, built bool) Machine {
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
	if rev := binaryRevision(blast); rev != "" {
		m.BlastCommit = rev
		return m
	}
	if !built {
		m.BlastCommit = "unknown (a binary given with -blast, without a VCS stamp)"
		return m
	}
	m.BlastCommit = git("rev-parse", "--short=12", "HEAD")
	if m.BlastCommit != "" && git("status", "--porcelain", "--untracked-files=no") != "" {
		m.BlastCommit += "+dirty"
	}
	return m
}

// binaryRevision is the VCS revision the Go toolchain stamped into the
// binary at path ("" when there is none), 12 digits, "+dirty" when the
// tree it was built from had changes.
func binaryRevision(path string) string {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return ""
	}
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return ""
	}
	rev = rev[:min(12, len(rev))]
	if dirty {
		rev += "+dirty"
	}
	return rev
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
