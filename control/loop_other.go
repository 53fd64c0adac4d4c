//go:build !linux

package control

import "github.com/blastnet/blast/engine"

// loopable: off Linux every stream runs its backend on a goroutine of its
// own.
func loopable(engine.Backend) bool { return false }

type ioLoop struct{}

func startLoopFlow(*[]*ioLoop, *stream, bool, int, int64, func(error)) bool { return false }
