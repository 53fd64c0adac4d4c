package control

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"time"

	"github.com/blastnet/blast/latency"
)

// echoIdle drops a latency client silent this long (without --rcv-timeout).
const echoIdle = time.Minute

// echo serves a blast lat client that came to the test port: blast server
// answers latency runs too, so a host needs one service. Latency clients
// share --max-clients places of their own, apart from the tests, fairly
// by address (--max-per-host from one; a client from an address that
// holds fewer takes the place of the oldest client of the address holding
// the most); each holds a thread while it runs, so the places bound them.
// A client that takes none of its replies for EchoWriteTimeout is
// dropped, as is one silent for echoIdle (or --rcv-timeout).
func (s *Server) echo(ctx context.Context, c net.Conn, seq uint64) {
	ctx, kick := context.WithCancel(ctx)
	defer kick()
	release := s.echoPlace(c, seq, kick, "client")
	if release == nil {
		c.Close()
		return
	}
	defer release()
	idle := echoIdle
	if s.cfg.RcvTimeout > 0 {
		idle = s.cfg.RcvTimeout
	}
	remote := c.RemoteAddr()
	n, err := latency.Echo(ctx, c, idle, s.cfg.EchoWriteTimeout)
	switch {
	case err != nil && !errors.Is(err, net.ErrClosed) && ctx.Err() == nil:
		s.logf("%s: latency client: %v (after %d bytes echoed)", remote, err, n)
	default:
		s.logf("%s: latency client done, %d bytes echoed", remote, n)
	}
}

// latSession holds the latency session of a blast lat -u client, which
// greeted over TCP with its UDP port and rate: while the connection is
// open, the UDP gate echoes that address and port's requests, at no more
// than the rate. Sessions take the echoes' places.
func (s *Server) latSession(ctx context.Context, c net.Conn, seq uint64, port uint16, rate float64, greeting [len(latency.Hello)]byte) {
	defer c.Close()
	ctx, kick := context.WithCancel(ctx)
	defer kick()
	release := s.echoPlace(c, seq, kick, "session")
	if release == nil {
		return
	}
	defer release()
	peer := netip.AddrPortFrom(peerAddr(c), port)
	s.udpMu.Lock()
	err := s.openUDPLocked()
	var end func()
	if err == nil {
		end = s.udp.sessions.Open(peer, rate)
	}
	s.udpMu.Unlock()
	if err != nil {
		s.logf("%s: latency session: %v", c.RemoteAddr(), err)
		return
	}
	defer end()
	c.SetWriteDeadline(time.Now().Add(s.cfg.EchoWriteTimeout))
	if _, err := c.Write(greeting[:]); err != nil {
		return
	}
	if tc, ok := c.(*net.TCPConn); ok {
		// Silent while the client runs: probes find one whose host died.
		tc.SetKeepAliveConfig(ctrlKeepAlive)
	}
	stop := context.AfterFunc(ctx, func() { c.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	// The session lasts until the client closes the connection.
	var buf [64]byte
	for {
		if _, err := c.Read(buf[:]); err != nil {
			break
		}
	}
	s.logf("%s: latency session for UDP port %d done", c.RemoteAddr(), port)
}

// echoPlace takes one of the latency places for the client on c (what:
// "client" or "session"), which kick ends to make room for another;
// nil when it gets none. The returned func gives the place back.
func (s *Server) echoPlace(c net.Conn, seq uint64, kick func(), what string) (release func()) {
	s.mu.Lock()
	pl, victim := s.echoes.Add(peerAddr(c), seq, kick)
	s.mu.Unlock()
	if pl == nil {
		s.logf("%s: refused a latency %s: %d are running (--max-clients), %d from its address (--max-per-host)", c.RemoteAddr(), what, s.cfg.MaxClients, s.cfg.MaxPerHost)
		return nil
	}
	if victim != nil {
		victim.Kick()
		s.logf("%s: ended the oldest latency client of %v to make room (%d places, %d from one address)", c.RemoteAddr(), victim.Host, s.cfg.MaxClients, s.cfg.MaxPerHost)
	}
	return func() {
		s.mu.Lock()
		s.echoes.Release(pl)
		s.mu.Unlock()
		s.touch()
	}
}
