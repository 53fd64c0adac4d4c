//go:build !linux

package nicinfo

import (
	"fmt"
	"net/netip"
	"runtime"
)

// Open returns a Source reading the live system. Only Linux has one; elsewhere
// it fails with an error wrapping ErrNotSupported (Load still works).
func Open(cfg Config) (*Source, error) {
	return nil, fmt.Errorf("nicinfo: open live interfaces on %s: %w", runtime.GOOS, ErrNotSupported)
}

// InterfaceFor finds the interface that carries traffic to addr. Linux only.
func InterfaceFor(addr netip.Addr) (*Route, error) {
	return nil, fmt.Errorf("nicinfo: route lookup to %s on %s: %w", addr, runtime.GOOS, ErrNotSupported)
}
