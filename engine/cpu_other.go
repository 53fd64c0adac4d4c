//go:build !linux

package engine

// ThreadCPU is not measured off Linux.
func ThreadCPU() CPUTimes { return CPUTimes{} }

// ProcessCPU is not measured off Linux.
func ProcessCPU() CPUTimes { return CPUTimes{} }
