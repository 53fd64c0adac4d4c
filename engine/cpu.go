package engine

import "time"

// CPUTimes are user and system CPU time: of one thread (a flow's, as Run
// measures it), or of the whole process. It is the one way blast measures
// CPU, in every mode.
type CPUTimes struct {
	User   time.Duration `json:"user_ns"`
	System time.Duration `json:"system_ns"`
}

// Total is user plus system time.
func (c CPUTimes) Total() time.Duration { return c.User + c.System }

// Sub is the CPU time spent between earlier and c.
func (c CPUTimes) Sub(earlier CPUTimes) CPUTimes {
	return CPUTimes{User: c.User - earlier.User, System: c.System - earlier.System}
}

// Add is the sum of c and d.
func (c CPUTimes) Add(d CPUTimes) CPUTimes {
	return CPUTimes{User: c.User + d.User, System: c.System + d.System}
}
