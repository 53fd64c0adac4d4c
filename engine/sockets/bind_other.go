//go:build !linux

package sockets

import (
	"fmt"

	"github.com/blastnet/blast/engine"
)

func bindToDevice(fd int, dev string) error {
	return fmt.Errorf("bind to interface %s: %w on this OS", dev, engine.ErrNotSupported)
}
