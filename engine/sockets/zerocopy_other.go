//go:build !linux

package sockets

import (
	"context"

	"github.com/blastnet/blast/engine"
)

func init() { engine.Register(ZeroCopy{}) }

// ZeroCopy is the zerocopy backend, which needs Linux.
type ZeroCopy struct{}

var _ engine.Configurable = ZeroCopy{}

// Name implements engine.Backend.
func (ZeroCopy) Name() string { return "zerocopy" }

// Probe implements engine.Backend: not supported off Linux.
func (b ZeroCopy) Probe() error { return notLinux(b.Name()) }

// Configure implements engine.Configurable.
func (b ZeroCopy) Configure(engine.Options) (engine.Backend, error) { return nil, b.Probe() }

// Send implements engine.Backend.
func (b ZeroCopy) Send(context.Context, *engine.Flow) error { return b.Probe() }

// Recv implements engine.Backend.
func (b ZeroCopy) Recv(context.Context, *engine.Flow) error { return b.Probe() }
