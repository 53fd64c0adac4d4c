//go:build !linux

package backends

import "github.com/blastnet/blast/engine"

func init() {
	for _, n := range Names {
		engine.Register(engine.Unsupported(n, "blast's data path needs Linux"))
	}
}
