//go:build timing && linux

package sockets_test

import (
	"testing"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/engine/enginetest"
	"github.com/blastnet/blast/engine/sockets"
	"github.com/blastnet/blast/internal/timingcheck"
)

// TestTimingCancel: a flow blocked in a system call (the suite's cancel
// checks) returns promptly once its context is cancelled, woken by the
// socket's shutdown or the flow's eventfd, not at a timeout slice. The
// unit tests want it back with context.Canceled within their hang bound;
// how soon is judged here.
func TestTimingCancel(t *testing.T) {
	for _, c := range []struct {
		b    engine.Backend
		caps enginetest.Caps
	}{
		{sockets.ReadWrite{}, enginetest.All},
		{sockets.Splice{}, enginetest.Caps{TCPSend: true, TCPRecv: true}},
		{sockets.ZeroCopy{}, enginetest.Caps{TCPSend: true}},
		{sockets.Sendfile{}, enginetest.Caps{TCPSend: true}},
		{sockets.Trunc{}, enginetest.Caps{TCPRecv: true, UDPRecv: true}},
	} {
		t.Run(c.b.Name()+"/"+c.caps.Options, func(t *testing.T) {
			timingcheck.Check(t, enginetest.CancelProperty(c.b, c.caps, enginetest.Pairs{}))
		})
	}
}
