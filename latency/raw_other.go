//go:build !linux

package latency

import (
	"fmt"

	"github.com/blastnet/blast/engine"
)

// rawSock is Linux's blocking socket off the runtime poller; elsewhere
// flows stay on the poller.
type rawSock struct{}

type syscallConn interface{ Close() error }

var errNoRaw = fmt.Errorf("latency: blocking sockets off the runtime poller: %w on this OS", engine.ErrNotSupported)

func detach(syscallConn) (*rawSock, error) { return nil, errNoRaw }

func (*rawSock) interrupt(int) {}
func (*rawSock) close() error  { return nil }

const (
	shutRD   = 0
	shutRDWR = 0
)

func newRawFlow(syscallConn, string, Config) (roundTripper, error) { return nil, errNoRaw }

func echoRaw(*rawSock) (int64, error) { return 0, errNoRaw }

func (s *Server) udpLoopRaw(*rawSock) error { return errNoRaw }
