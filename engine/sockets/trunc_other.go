//go:build !linux

package sockets

import (
	"context"

	"github.com/blastnet/blast/engine"
)

func init() { engine.Register(Trunc{}) }

// Trunc is the trunc backend, which needs Linux.
type Trunc struct{}

var _ engine.Configurable = Trunc{}

// Name implements engine.Backend.
func (Trunc) Name() string { return "trunc" }

// Probe implements engine.Backend: not supported off Linux.
func (b Trunc) Probe() error { return notLinux(b.Name()) }

// Configure implements engine.Configurable.
func (b Trunc) Configure(engine.Options) (engine.Backend, error) { return nil, b.Probe() }

// Send implements engine.Backend.
func (b Trunc) Send(context.Context, *engine.Flow) error { return b.Probe() }

// Recv implements engine.Backend.
func (b Trunc) Recv(context.Context, *engine.Flow) error { return b.Probe() }
