package control

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/blastnet/blast/latency"
)

// echoIdle drops a latency client silent this long (without --rcv-timeout).
const echoIdle = time.Minute

// echo serves a blast lat client that came to the test port: blast server
// answers latency runs too, so a host needs one service. Latency clients
// are bounded by --max-clients, apart from the tests.
func (s *Server) echo(ctx context.Context, c net.Conn) {
	s.mu.Lock()
	if s.echoes >= s.cfg.MaxClients {
		s.mu.Unlock()
		s.logf("%s: refused a latency client: %d are running (--max-clients)", c.RemoteAddr(), s.cfg.MaxClients)
		c.Close()
		return
	}
	s.echoes++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.echoes--
		s.mu.Unlock()
		s.touch()
	}()
	idle := echoIdle
	if s.cfg.RcvTimeout > 0 {
		idle = s.cfg.RcvTimeout
	}
	remote := c.RemoteAddr()
	n, err := latency.Echo(ctx, c, idle)
	switch {
	case err != nil && !errors.Is(err, net.ErrClosed) && ctx.Err() == nil:
		s.logf("%s: latency client: %v (after %d bytes echoed)", remote, err, n)
	default:
		s.logf("%s: latency client done, %d bytes echoed", remote, n)
	}
}
