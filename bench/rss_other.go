//go:build !linux

package bench

import "runtime"

// maxRSSKiB converts rusage's ru_maxrss to KiB: bytes on macOS, KiB on
// the BSDs.
func maxRSSKiB(maxrss int64) int64 {
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return maxrss / 1024
	}
	return maxrss
}
