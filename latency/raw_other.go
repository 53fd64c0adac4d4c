//go:build !linux

package latency

import (
	"fmt"
	"net"
	"time"

	"github.com/blastnet/blast/engine"
)

// rawSock is Linux's blocking socket off the runtime poller; elsewhere
// flows stay on the poller.
type rawSock struct{}

var errNoRaw = fmt.Errorf("latency: blocking sockets off the runtime poller: %w on this OS", engine.ErrNotSupported)

func detach(c net.Conn) (*rawSock, error) { c.Close(); return nil, errNoRaw }

func (*rawSock) interrupt(int) {}
func (*rawSock) close() error  { return nil }

const (
	shutRD   = 0
	shutRDWR = 0
)

func newRawFlow(c net.Conn, _ string, _ Config) (roundTripper, error) {
	c.Close()
	return nil, errNoRaw
}

func echoRaw(*rawSock, time.Duration, func([]byte)) (int64, error) { return 0, errNoRaw }

func (s *Server) udpLoopRaw(*rawSock) error { return errNoRaw }
