//go:build !linux

package pathmtu

import (
	"context"
	"errors"
	"fmt"
	"net"
)

// Probe needs IP_PMTUDISC_PROBE, which only Linux has.
func Probe(ctx context.Context, cfg Config) (*Result, error) {
	return nil, fmt.Errorf("pathmtu: don't-fragment probes without the kernel's estimate: %w", errors.ErrUnsupported)
}

// Serve closes c: without IP_PMTUDISC_PROBE there is nothing to serve.
func Serve(ctx context.Context, c net.Conn, port uint16) error {
	c.Close()
	return fmt.Errorf("pathmtu: don't-fragment probes without the kernel's estimate: %w", errors.ErrUnsupported)
}
