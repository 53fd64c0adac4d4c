package control

import (
	"errors"
	"fmt"
	"strings"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/engine"
)

// errPeerFile refuses a client's file= option: a client does not choose
// which of the server's files to send.
var errPeerFile = errors.New("a client cannot name a file on the server")

// peerOptions applies the backend options a blast client asked for to the
// server's send and receive backends. rx nil means the receiving backend
// was not chosen (the session picks it); options for it then configure the
// sending backend's receive side. What cannot be applied is noted in res
// and the backend is used without the options.
func peerOptions(tx, rx engine.Backend, bp *wire.BlastParams, res *result.Result) (engine.Backend, engine.Backend) {
	configure := func(b engine.Backend, opts, what string) engine.Backend {
		if opts == "" {
			return b
		}
		var err error
		if names(opts)["file"] {
			err = errPeerFile // whatever the backend, and before parsing
		}
		var c engine.Backend
		if err == nil {
			c, _, err = engine.Configure(b, opts)
		}
		if err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("the server cannot %s with %s options %q (%v); it used %s without them", what, b.Name(), opts, err, b.Name()))
			return b
		}
		return c
	}
	tx = configure(tx, bp.BackendOptions, "send")
	if rx == nil && bp.RxBackendOptions != "" {
		rx = tx
		if bp.BackendOptions != "" {
			// tx carries the send options; receive with the bare backend.
			if b, err := engine.Lookup(tx.Name()); err == nil {
				rx = b
			}
		}
	}
	if rx != nil {
		rx = configure(rx, bp.RxBackendOptions, "receive")
	}
	return tx, rx
}

// names are the option names written in opts ("batch=4,gso": batch, gso).
func names(opts string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Split(opts, ",") {
		n, _, _ := strings.Cut(strings.TrimSpace(w), "=")
		m[n] = true
	}
	return m
}
