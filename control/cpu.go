package control

import (
	"syscall"
	"time"
)

// CPUUtil is the CPU the process used over a test, in percent of one CPU
// of wall-clock time, as iperf3 computes it from getrusage: total, user
// and system.
type CPUUtil struct {
	Total, User, System float64
	// UserSeconds and SystemSeconds are the same CPU time in seconds
	// (blast peers exchange them; from iperf3 they are 0).
	UserSeconds, SystemSeconds float64
}

// cpuMeter measures CPUUtil from a starting point. The figure covers the
// whole process: a server running several tests at once reports what all
// of them used.
type cpuMeter struct {
	wall      time.Time
	user, sys time.Duration
}

func startCPU() cpuMeter {
	u, s := rusage()
	return cpuMeter{wall: time.Now(), user: u, sys: s}
}

func (m cpuMeter) read() CPUUtil {
	u, s := rusage()
	wall := time.Since(m.wall)
	if wall <= 0 {
		return CPUUtil{}
	}
	du, ds := u-m.user, s-m.sys
	pct := func(d time.Duration) float64 { return 100 * float64(d) / float64(wall) }
	return CPUUtil{Total: pct(du + ds), User: pct(du), System: pct(ds), UserSeconds: du.Seconds(), SystemSeconds: ds.Seconds()}
}

func rusage() (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}
