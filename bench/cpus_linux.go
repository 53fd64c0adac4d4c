package bench

import "golang.org/x/sys/unix"

// allowedCPUs are the CPUs this process may run on (and the tools it
// starts, unless pinned elsewhere).
func allowedCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var cpus []int
	for c := 0; c < 1<<16 && len(cpus) < set.Count(); c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}
