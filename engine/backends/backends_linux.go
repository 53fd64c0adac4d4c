package backends

import (
	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/engine/afxdp"
	"github.com/blastnet/blast/engine/iouring"
	"github.com/blastnet/blast/engine/mmsg"
	"github.com/blastnet/blast/engine/sockets"
)

func init() {
	for _, b := range []engine.Backend{
		sockets.ReadWrite{},
		sockets.Sendfile{},
		sockets.Splice{},
		sockets.ZeroCopy{},
		sockets.Trunc{},
		mmsg.Backend{},
		iouring.Backend{},
		afxdp.Backend{},
	} {
		engine.Register(b)
	}
}
