//go:build !linux

package netlab

// NewBridged fails: labs need Linux network namespaces.
func NewBridged(int, BridgeOptions) (*Bridged, error) { return nil, errNoLab }

// Shape fails.
func (b *Bridged) Shape(int, int) error { return errNoLab }

// WriteHosts fails.
func (b *Bridged) WriteHosts(string) error { return errNoLab }

// Close does nothing.
func (b *Bridged) Close() error { return nil }
