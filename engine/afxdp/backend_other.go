//go:build !linux

package afxdp

import (
	"context"
	"fmt"
	"net"

	"github.com/blastnet/blast/engine"
)

func init() { engine.Register(Backend{}) }

// Backend is the afxdp backend, which needs Linux.
type Backend struct {
	Iface   string
	DstMAC  net.HardwareAddr
	Queues  int
	Threads int
}

var _ engine.Configurable = Backend{}

// Name implements engine.Backend.
func (Backend) Name() string { return "afxdp" }

// Probe implements engine.Backend: not supported off Linux.
func (Backend) Probe() error {
	return fmt.Errorf("AF_XDP needs Linux (use --backend mmsg or readwrite): %w", engine.ErrNotSupported)
}

// Configure implements engine.Configurable.
func (b Backend) Configure(engine.Options) (engine.Backend, error) { return nil, b.Probe() }

// Send implements engine.Backend.
func (b Backend) Send(context.Context, *engine.Flow) error { return b.Probe() }

// Recv implements engine.Backend.
func (b Backend) Recv(context.Context, *engine.Flow) error { return b.Probe() }
