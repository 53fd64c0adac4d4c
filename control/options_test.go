package control

import (
	"strings"
	"testing"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/engine"
	_ "github.com/blastnet/blast/engine/sockets"
)

// A client's backend options reach the server's backends; a file to send
// and an option the backend lacks are refused with a note.
func TestPeerOptions(t *testing.T) {
	rw, err := engine.Lookup("readwrite")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		bp       wire.BlastParams
		wantNote string
	}{
		{"none", wire.BlastParams{}, ""},
		{"file", wire.BlastParams{BackendOptions: "file=/etc/shadow"}, "a client cannot name a file on the server"},
		{"unknown to the backend", wire.BlastParams{RxBackendOptions: "multishot"}, "the server cannot receive with readwrite"},
		{"unparsable", wire.BlastParams{BackendOptions: "bogus"}, "backend readwrite takes no options (given: bogus)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := &result.Result{}
			tx, rx := peerOptions(rw, rw, &tc.bp, res)
			if tx != rw || rx != rw {
				t.Errorf("backends %v, %v: want readwrite unchanged", tx, rx)
			}
			note := strings.Join(res.Notes, "; ")
			if (tc.wantNote == "") != (note == "") || !strings.Contains(note, tc.wantNote) {
				t.Errorf("notes %q, want one with %q", note, tc.wantNote)
			}
		})
	}
}
