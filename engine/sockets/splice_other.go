//go:build !linux

package sockets

import (
	"context"

	"github.com/blastnet/blast/engine"
)

func init() { engine.Register(Splice{}) }

// Splice is the splice backend, which needs Linux.
type Splice struct{}

var _ engine.Configurable = Splice{}

// Name implements engine.Backend.
func (Splice) Name() string { return "splice" }

// Probe implements engine.Backend: not supported off Linux.
func (b Splice) Probe() error { return notLinux(b.Name()) }

// Configure implements engine.Configurable.
func (b Splice) Configure(engine.Options) (engine.Backend, error) { return nil, b.Probe() }

// Send implements engine.Backend.
func (b Splice) Send(context.Context, *engine.Flow) error { return b.Probe() }

// Recv implements engine.Backend.
func (b Splice) Recv(context.Context, *engine.Flow) error { return b.Probe() }
