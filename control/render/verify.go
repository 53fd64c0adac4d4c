package render

import (
	"fmt"
	"io"

	"github.com/blastnet/blast/control/result"
)

// writeVerify writes blast's verify line of each stream: what its
// receiver found, here or at the peer.
func writeVerify(w io.Writer, r *result.Result) {
	if r.Params.Blast == nil || !r.Params.Blast.Verify {
		return
	}
	for _, sender := range r.Groups() {
		for _, st := range r.Streams {
			if st.Sender != sender {
				continue
			}
			c, where := st.Verify, "local"
			if st.Sender {
				c, where = st.PeerVerify, "remote"
			}
			line := "not checked"
			if c != nil {
				line = c.String()
			}
			fmt.Fprintf(w, "Verify: [%3d]%s %s (%s receiver)\n", st.Socket, r.RoleTag(sender), line, where)
		}
	}
}
