package sockets

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

func bindToDevice(fd int, dev string) error {
	err := unix.SetsockoptString(fd, unix.SOL_SOCKET, unix.SO_BINDTODEVICE, dev)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENODEV):
		return fmt.Errorf("bind to interface %s: no such interface (see 'ip link')", dev)
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("bind to interface %s: needs CAP_NET_RAW; run as root", dev)
	}
	return fmt.Errorf("bind to interface %s: %w", dev, err)
}
