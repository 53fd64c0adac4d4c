//go:build !linux

package engine

// NetNS is a network namespace; other systems have one, and Do runs fn.
type NetNS struct{}

// CurrentNetNS returns the one namespace.
func CurrentNetNS() (*NetNS, error) { return &NetNS{}, nil }

// Do runs fn.
func (n *NetNS) Do(fn func() error) error { return fn() }

// Close does nothing.
func (n *NetNS) Close() error { return nil }
