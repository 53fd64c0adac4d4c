//go:build !linux

package bpf

import (
	"errors"
	"fmt"
)

// Redirect is the loaded XDP program, which needs Linux.
type Redirect struct{}

// Mode says how the program was attached.
type Mode string

// Config says which datagrams the program steers.
type Config struct {
	Port      uint16
	Queues    int
	PassMax   int
	PassFirst bool
}

// LoadConfig returns an error off Linux.
func LoadConfig(c Config) (*Redirect, error) {
	return nil, fmt.Errorf("xdp: needs Linux: %w", errors.ErrUnsupported)
}

// Load returns an error off Linux.
func Load(port uint16, queues int) (*Redirect, error) {
	return nil, fmt.Errorf("xdp: needs Linux: %w", errors.ErrUnsupported)
}

// Attach returns an error off Linux.
func (r *Redirect) Attach(ifindex int, generic bool) (Mode, error) {
	return "", fmt.Errorf("xdp: needs Linux: %w", errors.ErrUnsupported)
}

// Register returns an error off Linux.
func (r *Redirect) Register(queue, fd int) error {
	return fmt.Errorf("xdp: needs Linux: %w", errors.ErrUnsupported)
}

// Close does nothing off Linux.
func (r *Redirect) Close() error { return nil }
