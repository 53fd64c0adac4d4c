package bench

// maxRSSKiB converts rusage's ru_maxrss to KiB: Linux reports KiB.
func maxRSSKiB(maxrss int64) int64 { return maxrss }
