//go:build !linux

package engine

import "fmt"

// ProbeMPTCP reports whether this host can make Multipath TCP sockets:
// blast makes them on Linux only.
func ProbeMPTCP() error {
	return fmt.Errorf("Multipath TCP sockets: %w", errOS)
}
