package engine

import (
	"bytes"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// ThreadCPU is the CPU time of the calling thread so far (lock the
// goroutine to its thread for this to mean anything).
func ThreadCPU() CPUTimes { return rusage(unix.RUSAGE_THREAD) }

// ProcessCPU is the CPU time of the whole process so far, every thread.
func ProcessCPU() CPUTimes { return rusage(unix.RUSAGE_SELF) }

func rusage(who int) CPUTimes {
	var ru unix.Rusage
	if unix.Getrusage(who, &ru) != nil {
		return CPUTimes{}
	}
	tv := func(t unix.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return CPUTimes{User: tv(ru.Utime), System: tv(ru.Stime)}
}

// ThreadRunWait is the time the calling thread has spent runnable but
// waiting for a CPU so far: the second field of
// /proc/thread-self/schedstat (the scheduler's run_delay), which also
// counts the time a CPU quota (cgroup cpu.max, cfs_quota_us) held the
// thread back. 0 when the kernel does not keep it (no CONFIG_SCHED_INFO).
func ThreadRunWait() time.Duration {
	b, err := os.ReadFile("/proc/thread-self/schedstat")
	if err != nil {
		return 0
	}
	return parseSchedstat(b)
}

// parseSchedstat reads the run_delay field of a schedstat line
// ("on-cpu-ns run-delay-ns timeslices"); 0 when it is not there.
func parseSchedstat(b []byte) time.Duration {
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0
	}
	n, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return time.Duration(n)
}
