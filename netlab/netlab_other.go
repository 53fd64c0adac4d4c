//go:build !linux

package netlab

import (
	"context"
	"errors"
	"os/exec"
)

type nsHandle = int

var errNoLab = errors.New("netlab: network namespaces exist only on Linux")

// New fails: labs need Linux network namespaces.
func New(Topology, Options) (*Lab, error) { return nil, errNoLab }

// Close does nothing.
func (l *Lab) Close() error { return nil }

// Do fails: there is no namespace to enter.
func (h *Host) Do(func() error) error { return errNoLab }

// Cmd is a command that would run inside a lab host.
type Cmd struct{ *exec.Cmd }

// Command returns a command that cannot start.
func (h *Host) Command(name string, args ...string) *Cmd { return &Cmd{exec.Command(name, args...)} }

// Start fails.
func (c *Cmd) Start() error { return errNoLab }

// WaitPort fails.
func WaitPort(context.Context, int, string, int) error { return errNoLab }
