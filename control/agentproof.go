package control

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"time"

	"github.com/blastnet/blast/control/wire"
)

// An agent proves to another that it is one before the other sends it test
// traffic: the client sends, in place of a test's cookie, a proof request
// (agentProofPrefix and a random nonce); a server that belongs to an
// agent answers with its ProofFunc of the nonce (an HMAC under the mesh's
// token) and closes; any other server closes, answers something else, or
// starts an iperf3 test, and the client hangs up.
var agentProofPrefix = [13]byte{'b', 'A', 'g', 't', ' ', 'p', 'r', 'o', 'o', 'f', ' ', '1', '\n'}

// ProofSize is the length of a proof: an HMAC-SHA256.
const ProofSize = 32

// ProofFunc is an agent's answer to a proof request's nonce.
type ProofFunc func(nonce []byte) [ProofSize]byte

// ErrNotAgent is the one error of a target that did not prove it is an
// agent holding the mesh's token: it says nothing of why (the port
// refused, closed, stayed silent or answered wrong), so that an agent
// cannot be used to scan ports.
var ErrNotAgent = errors.New("the target is not an agent of this mesh (or cannot be reached)")

// proofRequest reads a proof request: its nonce, ok false for anything
// else.
func proofRequest(cookie [wire.CookieSize]byte) (nonce []byte, ok bool) {
	if [len(agentProofPrefix)]byte(cookie[:len(agentProofPrefix)]) != agentProofPrefix {
		return nil, false
	}
	return cookie[len(agentProofPrefix):], true
}

// answerProof answers a proof request on c with the server's ProofFunc,
// within timeout; a server that is no agent's only hangs up.
func (s *Server) answerProof(c net.Conn, nonce []byte) {
	defer c.Close()
	if s.cfg.AgentProof == nil {
		return
	}
	p := s.cfg.AgentProof(nonce)
	c.SetWriteDeadline(time.Now().Add(proofTimeout))
	c.Write(p[:])
}

// proofTimeout bounds a proof's exchange, each way.
const proofTimeout = 5 * time.Second

// ProveAgent asks the server at addr (host:port) to prove it is an agent
// whose ProofFunc is proof, with d's options (the source, the namespace);
// ErrNotAgent when it does not, for whatever reason.
func ProveAgent(ctx context.Context, d *net.Dialer, addr string, proof ProofFunc) error {
	var req [wire.CookieSize]byte
	copy(req[:], agentProofPrefix[:])
	nonce := req[len(agentProofPrefix):]
	rand.Read(nonce)
	ctx, cancel := context.WithTimeout(ctx, proofTimeout)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return ErrNotAgent
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := c.Write(req[:]); err != nil {
		return ErrNotAgent
	}
	var got [ProofSize]byte
	if _, err := io.ReadFull(c, got[:]); err != nil {
		return ErrNotAgent
	}
	want := proof(nonce)
	if !hmac.Equal(got[:], want[:]) {
		return ErrNotAgent
	}
	return nil
}
