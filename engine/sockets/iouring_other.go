//go:build !linux

package sockets

import (
	"context"

	"github.com/blastnet/blast/engine"
)

func init() { engine.Register(IOURing{}) }

// IOURing is the iouring backend, which needs Linux.
type IOURing struct{}

var _ engine.Configurable = IOURing{}

// Name implements engine.Backend.
func (IOURing) Name() string { return "iouring" }

// Probe implements engine.Backend: not supported off Linux.
func (b IOURing) Probe() error { return notLinux(b.Name()) }

// Configure implements engine.Configurable.
func (b IOURing) Configure(engine.Options) (engine.Backend, error) { return nil, b.Probe() }

// Send implements engine.Backend.
func (b IOURing) Send(context.Context, *engine.Flow) error { return b.Probe() }

// Recv implements engine.Backend.
func (b IOURing) Recv(context.Context, *engine.Flow) error { return b.Probe() }
