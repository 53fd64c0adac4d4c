//go:build !linux

package sockets

import (
	"context"

	"github.com/blastnet/blast/engine"
)

func init() { engine.Register(MMsg{}) }

// MMsg is the mmsg backend, which needs Linux.
type MMsg struct{}

var _ engine.Configurable = MMsg{}

// Name implements engine.Backend.
func (MMsg) Name() string { return "mmsg" }

// Probe implements engine.Backend: not supported off Linux.
func (b MMsg) Probe() error { return notLinux(b.Name()) }

// Configure implements engine.Configurable.
func (b MMsg) Configure(engine.Options) (engine.Backend, error) { return nil, b.Probe() }

// Send implements engine.Backend.
func (b MMsg) Send(context.Context, *engine.Flow) error { return b.Probe() }

// Recv implements engine.Backend.
func (b MMsg) Recv(context.Context, *engine.Flow) error { return b.Probe() }
