package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Which iperf3 a side runs: Debian's, or the modern one bench was given
// (or found).
const (
	PeerIperf3       = "iperf3"        // Debian's /usr/bin/iperf3 (3.12 on bookworm)
	PeerIperf3Modern = "iperf3-modern" // an iperf3 of 3.16 or later, when there is one
)

// DebianIperf3 is where Debian's iperf3 package puts the binary.
const DebianIperf3 = "/usr/bin/iperf3"

// ModernIperf3 is the first iperf3 release bench calls modern: one thread
// per stream (esnet/iperf PR #1591).
var ModernIperf3 = Iperf3Version{Major: 3, Minor: 16}

// Iperf3Version is what `iperf3 --version` says about itself.
type Iperf3Version struct {
	Major int `json:"major"`
	Minor int `json:"minor"`
	Patch int `json:"patch"`
	// Suffix follows the number: "+" for a build after the release
	// (iperf3 from git), "-beta1", "".
	Suffix string `json:"suffix,omitempty"`
	// GSRO: the build says "GSO/GRO support", so --gsro works (3.21 on).
	GSRO bool `json:"gsro"`
}

func (v Iperf3Version) String() string {
	s := fmt.Sprintf("%d.%d", v.Major, v.Minor)
	if v.Patch > 0 || strings.HasPrefix(v.Suffix, ".") { // 3.1.0.5 stays 3.1.0.5
		s += fmt.Sprintf(".%d", v.Patch)
	}
	return s + v.Suffix
}

// Compare orders versions: -1, 0 or +1 as v is older than, the same as or
// newer than w. A "+" build (after the release) is newer than the
// release, a "-beta" or other suffixed one older.
func (v Iperf3Version) Compare(w Iperf3Version) int {
	if c := cmp.Compare(v.Major, w.Major); c != 0 {
		return c
	}
	if c := cmp.Compare(v.Minor, w.Minor); c != 0 {
		return c
	}
	if c := cmp.Compare(v.Patch, w.Patch); c != 0 {
		return c
	}
	return cmp.Compare(suffixRank(v.Suffix), suffixRank(w.Suffix))
}

func suffixRank(s string) int {
	switch {
	case s == "":
		return 0
	case strings.HasPrefix(s, "+"):
		return 1
	}
	return -1 // -beta1, -rc1: before the release
}

// AtLeast says whether v is w or newer.
func (v Iperf3Version) AtLeast(w Iperf3Version) bool { return v.Compare(w) >= 0 }

var iperf3VersionRe = regexp.MustCompile(`(?m)^iperf (\d+)\.(\d+)(?:\.(\d+))?([^\s(]*)`)

// ParseIperf3Version reads the output of `iperf3 --version` (or -v):
//
//	iperf 3.21 (cJSON 1.7.15)
//	Linux vm 6.18.44 #1 SMP PREEMPT_DYNAMIC @0 x86_64
//	Optional features available: CPU affinity setting, ..., GSO/GRO support
func ParseIperf3Version(out string) (Iperf3Version, error) {
	m := iperf3VersionRe.FindStringSubmatch(out)
	if m == nil {
		return Iperf3Version{}, fmt.Errorf("not an iperf3 version: %q", firstLines(out, 1))
	}
	var v Iperf3Version
	var errs []error
	atoi := func(s string) int {
		if s == "" {
			return 0
		}
		n, err := strconv.Atoi(s)
		if err != nil || n > 1<<20 {
			errs = append(errs, fmt.Errorf("iperf3 version number %q: out of range", s))
		}
		return n
	}
	v.Major, v.Minor, v.Patch, v.Suffix = atoi(m[1]), atoi(m[2]), atoi(m[3]), m[4]
	if err := errors.Join(errs...); err != nil {
		return Iperf3Version{}, err
	}
	v.GSRO = v.AtLeast(Iperf3Version{Major: 3, Minor: 21}) && strings.Contains(out, "GSO/GRO support")
	return v, nil
}

// Iperf3 is one iperf3 binary bench runs against.
type Iperf3 struct {
	Key         string        `json:"key"` // PeerIperf3 or PeerIperf3Modern
	Path        string        `json:"path"`
	Release     string        `json:"release"` // Version as text: "3.21", "3.21+"
	Version     Iperf3Version `json:"version"`
	VersionLine string        `json:"version_line"` // its first --version line
}

// Name is how tables name it: "iperf3 3.12".
func (ip *Iperf3) Name() string { return "iperf3 " + ip.Version.String() }

// versionRunner runs `path --version` and returns what it printed.
type versionRunner func(ctx context.Context, path string) (string, error)

func runVersion(ctx context.Context, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").CombinedOutput()
	// iperf3 before 3.x.y may exit 1 after printing its version.
	if len(out) > 0 {
		err = nil
	}
	return string(out), err
}

// probeIperf3 asks the binary at path for its version.
func probeIperf3(ctx context.Context, run versionRunner, key, path string) (*Iperf3, error) {
	out, err := run(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("%s --version: %w", path, err)
	}
	v, err := ParseIperf3Version(out)
	if err != nil {
		return nil, fmt.Errorf("%s --version: %w", path, err)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	return &Iperf3{Key: key, Path: path, Release: v.String(), Version: v, VersionLine: line}, nil
}

// DebianIperf3Path is Debian's iperf3, or when this system has none
// there, the iperf3 on PATH ("" if neither).
func DebianIperf3Path() string {
	if st, err := os.Stat(DebianIperf3); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
		return DebianIperf3
	}
	p, _ := exec.LookPath("iperf3")
	return p
}

// ModernIperf3Path checks the iperf3 the user named (--iperf3 PATH): it
// must run and be 3.16 or newer.
func ModernIperf3Path(ctx context.Context, path string) (*Iperf3, error) {
	return checkModern(ctx, runVersion, path)
}

func checkModern(ctx context.Context, run versionRunner, path string) (*Iperf3, error) {
	if !strings.ContainsRune(path, '/') {
		p, err := exec.LookPath(path)
		if err != nil {
			return nil, fmt.Errorf("bench: --iperf3 %s: %w", path, err)
		}
		path = p
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	ip, err := probeIperf3(ctx, run, PeerIperf3Modern, abs)
	if err != nil {
		return nil, fmt.Errorf("bench: --iperf3: %w", err)
	}
	if !ip.Version.AtLeast(ModernIperf3) {
		return nil, fmt.Errorf("bench: --iperf3 %s is iperf3 %s; the modern peer must be %s or newer (Debian's %s is always measured)",
			abs, ip.Version, ModernIperf3, DebianIperf3)
	}
	return ip, nil
}

// FindModernIperf3 looks through the directories of pathList (a PATH
// value) for the newest iperf3 of 3.16 or later that is not the binary
// at exclude (Debian's, measured anyway): files named iperf3 or
// iperf3-SOMETHING (iperf3-3.21). It returns nil when there is none.
func FindModernIperf3(ctx context.Context, pathList, exclude string) *Iperf3 {
	return findModern(ctx, runVersion, pathList, exclude)
}

func findModern(ctx context.Context, run versionRunner, pathList, exclude string) *Iperf3 {
	excl := realPath(exclude)
	seen := map[string]bool{}
	var best *Iperf3
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // "" and relative entries mean the current directory: not a place to pick tools from
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if name != "iperf3" && !strings.HasPrefix(name, "iperf3-") {
				continue
			}
			p := filepath.Join(dir, name)
			rp := realPath(p)
			if rp == "" || rp == excl || seen[rp] || !executable(rp) {
				continue
			}
			seen[rp] = true
			ip, err := probeIperf3(ctx, run, PeerIperf3Modern, p)
			if err != nil || !ip.Version.AtLeast(ModernIperf3) {
				continue
			}
			if best == nil || ip.Version.Compare(best.Version) > 0 {
				best = ip
			}
		}
	}
	return best
}

func realPath(p string) string {
	if p == "" {
		return ""
	}
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return ""
	}
	return r
}

func executable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 && st.Mode()&fs.ModeType == 0
}
