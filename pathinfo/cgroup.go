package pathinfo

import (
	"bufio"
	"bytes"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// CgroupCPU is the CPU quota that holds this process: the nearest cgroup
// up its tree with one (cgroup v2's cpu.max, v1's cpu.cfs_quota_us; a
// container's CPU limit is one), and that cgroup's throttling counters
// (cpu.stat) since it was made.
type CgroupCPU struct {
	// Cgroup is the cgroup's path as /proc/self/cgroup names it.
	Cgroup string `json:"cgroup"`
	// QuotaUs of CPU time every PeriodUs.
	QuotaUs  int64 `json:"quota_us"`
	PeriodUs int64 `json:"period_us"`
	// Periods the cgroup had work in, Throttled those it used its quota
	// up in, ThrottledUs the time its threads waited for the next period.
	Periods     uint64 `json:"nr_periods"`
	Throttled   uint64 `json:"nr_throttled"`
	ThrottledUs uint64 `json:"throttled_us"`
}

// CPUQuota is what a cgroup CPU quota did over a Delta.
type CPUQuota struct {
	Cgroup string `json:"cgroup"`
	// CPUs is the quota in CPUs (0.05: 5% of one).
	CPUs float64 `json:"cpus"`
	// Periods the cgroup had work in between the snapshots, and
	// Throttled those it ran out of quota in; ThrottledSeconds the time
	// its threads waited for more (summed over CPUs).
	Periods          uint64  `json:"nr_periods"`
	Throttled        uint64  `json:"nr_throttled"`
	ThrottledSeconds float64 `json:"throttled_seconds"`
}

// quotaBetween is what the quota did between two readings (nil: no
// quota, or not the same cgroup and quota both times).
func quotaBetween(before, after *CgroupCPU) *CPUQuota {
	if before == nil || after == nil || before.Cgroup != after.Cgroup || after.PeriodUs <= 0 ||
		after.Periods < before.Periods || after.Throttled < before.Throttled || after.ThrottledUs < before.ThrottledUs {
		return nil
	}
	return &CPUQuota{Cgroup: after.Cgroup, CPUs: float64(after.QuotaUs) / float64(after.PeriodUs),
		Periods: after.Periods - before.Periods, Throttled: after.Throttled - before.Throttled,
		ThrottledSeconds: float64(after.ThrottledUs-before.ThrottledUs) / 1e6}
}

// readCgroupCPU finds the CPU quota of the process whose /proc entry
// (/proc/thread-self) is proc, in the cgroup tree sys (/sys/fs/cgroup);
// nil when no cgroup up its tree has one, or none can be read.
func readCgroupCPU(proc, sys fs.FS) *CgroupCPU {
	b, err := fs.ReadFile(proc, "cgroup")
	if err != nil {
		return nil
	}
	var v1, v1Mount, v2 string
	haveV1, haveV2 := false, false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			v2, haveV2 = f[2], true
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == "cpu" {
				v1, v1Mount, haveV1 = f[2], f[1], true
			}
		}
	}
	if haveV1 {
		for _, mnt := range []string{v1Mount, "cpu", "cpu,cpuacct"} {
			if _, err := fs.Stat(sys, path.Join(mnt, "cpu.cfs_quota_us")); err == nil {
				return walkCgroup(sys, mnt, v1, readV1)
			}
		}
		return nil
	}
	if haveV2 {
		return walkCgroup(sys, ".", v2, readV2)
	}
	return nil
}

// walkCgroup reads the cgroup at p under root and each of its ancestors
// up to root's top, and returns the first that has a quota.
func walkCgroup(sys fs.FS, root, p string, read func(fs.FS, string) *CgroupCPU) *CgroupCPU {
	p = path.Clean("/" + p)
	for {
		dir := path.Join(root, strings.TrimPrefix(p, "/"))
		if c := read(sys, dir); c != nil {
			c.Cgroup = p
			return c
		}
		if p == "/" {
			return nil
		}
		p = path.Dir(p)
	}
}

// readV1 reads a cgroup v1 cpu controller's quota (cfs_quota_us, -1
// none) and cpu.stat (throttled_time in ns).
func readV1(sys fs.FS, dir string) *CgroupCPU {
	quota, ok := readInt(sys, path.Join(dir, "cpu.cfs_quota_us"))
	if !ok || quota <= 0 {
		return nil
	}
	period, ok := readInt(sys, path.Join(dir, "cpu.cfs_period_us"))
	if !ok || period <= 0 {
		return nil
	}
	st := readKeyed(sys, path.Join(dir, "cpu.stat"))
	return &CgroupCPU{QuotaUs: quota, PeriodUs: period, Periods: st["nr_periods"], Throttled: st["nr_throttled"],
		ThrottledUs: st["throttled_time"] / 1000}
}

// readV2 reads a cgroup v2 cpu.max ("max 100000": none) and cpu.stat.
func readV2(sys fs.FS, dir string) *CgroupCPU {
	b, err := fs.ReadFile(sys, path.Join(dir, "cpu.max"))
	if err != nil {
		return nil
	}
	f := strings.Fields(string(b))
	if len(f) != 2 || f[0] == "max" {
		return nil
	}
	quota, err1 := strconv.ParseInt(f[0], 10, 64)
	period, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || quota <= 0 || period <= 0 {
		return nil
	}
	st := readKeyed(sys, path.Join(dir, "cpu.stat"))
	return &CgroupCPU{QuotaUs: quota, PeriodUs: period, Periods: st["nr_periods"], Throttled: st["nr_throttled"],
		ThrottledUs: st["throttled_usec"]}
}

func readInt(sys fs.FS, name string) (int64, bool) {
	b, err := fs.ReadFile(sys, name)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
}

// readKeyed reads "key value" lines (cpu.stat); what does not parse is
// left out.
func readKeyed(sys fs.FS, name string) map[string]uint64 {
	out := map[string]uint64{}
	b, err := fs.ReadFile(sys, name)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		if n, err := strconv.ParseUint(f[1], 10, 64); err == nil {
			out[f[0]] = n
		}
	}
	return out
}
