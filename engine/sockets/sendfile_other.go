//go:build !linux

package sockets

import (
	"context"

	"github.com/blastnet/blast/engine"
)

func init() { engine.Register(Sendfile{}) }

// Sendfile is the sendfile backend, which needs Linux.
type Sendfile struct{}

var _ engine.Configurable = Sendfile{}

// Name implements engine.Backend.
func (Sendfile) Name() string { return "sendfile" }

// Probe implements engine.Backend: not supported off Linux.
func (b Sendfile) Probe() error { return notLinux(b.Name()) }

// Configure implements engine.Configurable.
func (b Sendfile) Configure(engine.Options) (engine.Backend, error) { return nil, b.Probe() }

// Send implements engine.Backend.
func (b Sendfile) Send(context.Context, *engine.Flow) error { return b.Probe() }

// Recv implements engine.Backend.
func (b Sendfile) Recv(context.Context, *engine.Flow) error { return b.Probe() }
