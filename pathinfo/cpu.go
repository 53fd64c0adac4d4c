package pathinfo

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
)

// CPUTime is one CPU's time in clock ticks since boot (/proc/stat): all of
// it, the part spent in softirq, where the kernel moves packets, idle
// (with iowait), and stolen (a hypervisor gave the CPU to another guest).
type CPUTime struct {
	Total   uint64 `json:"total"`
	Softirq uint64 `json:"softirq"`
	Idle    uint64 `json:"idle,omitempty"`
	Steal   uint64 `json:"steal,omitempty"`
}

// ParseStat reads the per-CPU lines of /proc/stat ("cpu0 user nice system
// idle iowait irq softirq steal ..."), in CPU order; the summary line
// "cpu" is skipped.
func ParseStat(r io.Reader) ([]CPUTime, error) {
	var out []CPUTime
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		n, err := strconv.Atoi(f[0][3:])
		if err != nil || n != len(out) {
			return nil, fmt.Errorf("stat: %q out of order", f[0])
		}
		if len(f) < 8 {
			return nil, fmt.Errorf("stat: %s: %d fields, want at least 7 times", f[0], len(f)-1)
		}
		var c CPUTime
		for i, s := range f[1:] {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("stat: %s: %q: %w", f[0], s, err)
			}
			if i < 8 { // guest times are counted in user already
				if c.Total+v < c.Total {
					return nil, fmt.Errorf("stat: %s: the times overflow", f[0])
				}
				c.Total += v
			}
			switch i {
			case 3, 4: // idle, iowait
				c.Idle += v
			case 6:
				c.Softirq = v
			case 7:
				c.Steal = v
			}
		}
		out = append(out, c)
	}
	return out, sc.Err()
}

// readCPUs reads the per-CPU times from a /proc-like tree (nil when the
// file cannot be read: they are for the whole host, a bonus).
func readCPUs(proc fs.FS) []CPUTime {
	f, err := proc.Open("stat")
	if err != nil {
		return nil
	}
	defer f.Close()
	cpus, err := ParseStat(f)
	if err != nil {
		return nil
	}
	return cpus
}

// softirqShares is each CPU's share of softirq time between two samples,
// in percent (nil when they do not match).
func softirqShares(before, after []CPUTime) []float64 {
	if len(before) == 0 || len(before) != len(after) {
		return nil
	}
	out := make([]float64, len(after))
	for i := range after {
		total := after[i].Total - before[i].Total
		if after[i].Total < before[i].Total || after[i].Softirq < before[i].Softirq || total == 0 {
			continue
		}
		out[i] = 100 * float64(after[i].Softirq-before[i].Softirq) / float64(total)
	}
	return out
}

// HostCPU is the whole host's CPU time between two samples, in percent of
// all its CPUs: idle (with iowait) and stolen by a hypervisor.
type HostCPU struct {
	CPUs     int     `json:"cpus"`
	IdlePct  float64 `json:"idle_percent"`
	StealPct float64 `json:"steal_percent"`
}

// hostShares is the host's idle and steal shares between two samples
// (nil when they do not match or no time passed).
func hostShares(before, after []CPUTime) *HostCPU {
	if len(before) == 0 || len(before) != len(after) {
		return nil
	}
	var total, idle, steal uint64
	for i := range after {
		a, b := after[i], before[i]
		if a.Total < b.Total || a.Idle < b.Idle || a.Steal < b.Steal {
			return nil
		}
		total += a.Total - b.Total
		idle += a.Idle - b.Idle
		steal += a.Steal - b.Steal
	}
	if total == 0 {
		return nil
	}
	return &HostCPU{CPUs: len(after), IdlePct: 100 * float64(idle) / float64(total), StealPct: 100 * float64(steal) / float64(total)}
}
