// Package timingcheck runs blast's timing properties: how close the pacer
// holds a rate, how late a sender ends, how its latency compares with
// sockperf's, how much a UDP test loses next to iperf3. These depend on
// the host, so they are not unit tests (which check behaviour on any
// host); they live in files built with the "timing" tag, run by
// `make check-timing` (and by bench's full mode), one at a time.
//
// Check measures a property several times and judges the median, never a
// single run. Beside the figures it reports the host's state over the
// runs: the load average, the CPU time taken by other processes than the
// test's own, and steal time. A median that misses its bound on a quiet
// host fails; on a busy host the check says "host too busy to judge",
// with the figures, and does not pass: `make check-timing` exits 3.
package timingcheck

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Property is one timing property, measured Runs times.
type Property struct {
	// Name says what holds, in words ("-b 100M within 10% in every
	// 10 ms window").
	Name string
	// Runs is how many measurements the median is taken over (default 5).
	Runs int
	// Unit names the figure Measure returns ("%", "Mbit/s", "µs").
	Unit string
	// Bound says in words what the median must be ("at most 10").
	Bound string
	// Holds judges the median.
	Holds func(median float64) bool
	// Measure makes one measurement. An error means the run could not
	// measure at all (a lab that did not come up): the check fails.
	Measure func(t *testing.T, run int) (float64, error)
}

// Verdicts, as the line each check prints starts after "TIMING ".
const (
	Pass = "PASS"
	Fail = "FAIL"
	Busy = "BUSY" // host too busy to judge
)

// Busy limits: more than this share of the machine's CPU time taken by
// other processes, or this share stolen by the hypervisor, over the runs.
const (
	busyOthers = 0.25
	busySteal  = 0.05
)

// Check measures p and judges its median (see the package comment).
func Check(t *testing.T, p Property) {
	t.Helper()
	runs := p.Runs
	if runs <= 0 {
		runs = 5
	}
	before := readHost()
	figs := make([]float64, 0, runs)
	for i := range runs {
		v, err := p.Measure(t, i)
		if err != nil {
			t.Fatalf("TIMING %s %s: run %d could not measure: %v", Fail, p.Name, i+1, err)
		}
		figs = append(figs, v)
	}
	host := readHost().since(before)
	med := Median(figs)
	verdict := Pass
	switch {
	case p.Holds(med):
	case host.busy():
		verdict = Busy
	default:
		verdict = Fail
	}
	line := fmt.Sprintf("TIMING %s %s: median %.4g %s (want %s; runs %s); host: %s",
		verdict, p.Name, med, p.Unit, p.Bound, fmtRuns(figs), host)
	switch verdict {
	case Pass:
		t.Log(line)
	case Busy:
		t.Skip(line + " (host too busy to judge)")
	default:
		t.Error(line)
	}
}

// Median is the middle figure (the mean of the middle two for an even
// count).
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func fmtRuns(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatFloat(x, 'g', 4, 64)
	}
	return strings.Join(parts, " ")
}

// hostState is what /proc says of the CPUs and of this process.
type hostState struct {
	total, idle, steal uint64 // jiffies of all CPUs
	own                uint64 // this process's and its reaped children's jiffies
	load1              string
}

// hostLoad is the host over the runs.
type hostLoad struct {
	others, steal float64 // shares of the machine's CPU time
	load1         string
	ok            bool
}

// busy reports whether the host was measured busy: a run too short for
// /proc/stat to count (or /proc unreadable) does not make it busy, so a
// miss then fails.
func (h hostLoad) busy() bool { return h.ok && (h.others > busyOthers || h.steal > busySteal) }

func (h hostLoad) String() string {
	if !h.ok {
		return "load unknown (no CPU time counted over the runs: measure inside Measure)"
	}
	return fmt.Sprintf("load average %s on %d CPUs, other processes %.0f%% of the CPU time, steal %.1f%%",
		h.load1, runtime.NumCPU(), 100*h.others, 100*h.steal)
}

func (a hostState) since(b hostState) hostLoad {
	if a.total <= b.total {
		return hostLoad{load1: a.load1}
	}
	total := float64(a.total - b.total)
	busy := total - float64(a.idle-b.idle) - float64(a.steal-b.steal)
	others := busy - float64(a.own-b.own)
	return hostLoad{
		others: max(others, 0) / total,
		steal:  float64(a.steal-b.steal) / total,
		load1:  a.load1,
		ok:     true,
	}
}

// readHost reads /proc/stat's cpu line (user nice system idle iowait irq
// softirq steal), /proc/self/stat's times and /proc/loadavg. Interrupt
// time counts as the test's own: it is mostly the test's packets.
func readHost() hostState {
	var h hostState
	if f, err := os.Open("/proc/stat"); err == nil {
		sc := bufio.NewScanner(f)
		if sc.Scan() {
			fields := strings.Fields(sc.Text())
			for i, fs := range fields[1:] {
				if i >= 8 {
					break
				}
				v, _ := strconv.ParseUint(fs, 10, 64)
				h.total += v
				switch i {
				case 3, 4: // idle, iowait
					h.idle += v
				case 5, 6: // irq, softirq
					h.own += v
				case 7:
					h.steal = v
				}
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/self/stat"); err == nil {
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i > 0 {
			fields := strings.Fields(s[i+1:])
			// utime stime cutime cstime are fields 14-17 of the line,
			// 12-15 after the command's closing parenthesis.
			for _, fs := range fields[11:15] {
				v, _ := strconv.ParseUint(fs, 10, 64)
				h.own += v
			}
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			h.load1 = f[0]
		}
	}
	return h
}
