//go:build !linux

package enginetest

// blockedInIO cannot look at the threads' system calls here: it says a
// flow is blocked at once.
func blockedInIO() bool { return true }
