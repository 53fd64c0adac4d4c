//go:build !linux

package sockets

import (
	"fmt"

	"github.com/blastnet/blast/engine"
)

// notLinux is the probe result of every syscall-strategy backend off Linux.
func notLinux(name string) error {
	return fmt.Errorf("%s uses Linux system calls: %w on this OS (use readwrite)", name, engine.ErrNotSupported)
}
