//go:build !linux

package engine

import "time"

// ThreadCPU is not measured off Linux.
func ThreadCPU() CPUTimes { return CPUTimes{} }

// ProcessCPU is not measured off Linux.
func ProcessCPU() CPUTimes { return CPUTimes{} }

// ThreadRunWait is not measured off Linux.
func ThreadRunWait() time.Duration { return 0 }
