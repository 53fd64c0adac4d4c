//go:build !linux

package bench

// allowedCPUs: bench pins nothing outside Linux (it runs nothing there).
func allowedCPUs() []int { return nil }
