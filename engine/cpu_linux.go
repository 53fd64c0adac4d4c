package engine

import (
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
