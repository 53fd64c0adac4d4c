package latency

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/fairpool"
)

// Server echoes requests on one port over TCP and UDP.
type Server struct {
	cfg Config
	tcp net.Listener
	udp *net.UDPConn // nil when udpRaw serves UDP
	// udpRaw is the UDP socket off the runtime poller (Linux).
	udpRaw *rawSock
	log    io.Writer
	port   int

	mu       sync.Mutex
	conns    map[interface{ interrupt() }]struct{} // TCP clients being echoed
	places   *fairpool.Pool                        // theirs, by address
	udpPeers map[netip.AddrPort]int64              // datagrams echoed per peer
	// sessions are the UDP clients the echo answers: each holds a
	// latency session over TCP (UDPGreeting).
	sessions *Sessions
	done     chan struct{} // closed when a client is done (Once)
	doneOnce sync.Once
}

// Listen opens the server's TCP listener and UDP socket on cfg.Port (0:
// a free port, the same number for both) and cfg.Bind. Lines about
// clients go to log.
func Listen(cfg Config, log io.Writer) (*Server, error) {
	if cfg.Port != 0 || cfg.Host != "" {
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
	}
	if log == nil {
		log = io.Discard
	}
	opts := cfg.Sock
	lc := net.ListenConfig{Control: opts.Control()}
	s := &Server{cfg: cfg, log: log, conns: map[interface{ interrupt() }]struct{}{}, places: fairpool.New(MaxClients, MaxClientsPerHost, false), udpPeers: map[netip.AddrPort]int64{}, sessions: NewSessions(time.Now), done: make(chan struct{})}
	// With port 0 the TCP port is chosen first and UDP takes the same
	// number; if that one is taken, try again.
	for try := 0; ; try++ {
		addr := hostPort(cfg.Bind, cfg.Port)
		l, err := lc.Listen(context.Background(), "tcp", addr)
		if err != nil {
			return nil, explain("listen on tcp", addr, err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		addr = hostPort(cfg.Bind, port)
		pc, err := lc.ListenPacket(context.Background(), "udp", addr)
		if err != nil {
			l.Close()
			if cfg.Port == 0 && try < 10 {
				continue
			}
			return nil, explain("listen on udp", addr, err)
		}
		s.tcp, s.udp, s.port = l, pc.(*net.UDPConn), port
		rs, err := detach(s.udp)
		switch {
		case err == nil:
			s.udp, s.udpRaw = nil, rs
		case !errors.Is(err, engine.ErrNotSupported):
			l.Close() // detach closed the UDP socket
			return nil, fmt.Errorf("udp: take the socket off the runtime poller: %w", err)
		}
		return s, nil
	}
}

// Port is the port the server listens on, TCP and UDP.
func (s *Server) Port() int { return s.port }

// Serve echoes until ctx ends or, with cfg.Once, until the first client
// is done (its TCP connection closed, or its UDP goodbye came). It closes
// the server's sockets before it returns.
func (s *Server) Serve(ctx context.Context) error {
	var wg sync.WaitGroup
	errc := make(chan error, 2)
	wg.Add(2)
	go func() { defer wg.Done(); errc <- s.acceptLoop(&wg) }()
	go func() {
		defer wg.Done()
		if s.udpRaw != nil {
			errc <- s.udpLoopRaw(s.udpRaw)
		} else {
			errc <- s.udpLoop()
		}
	}()
	var err error
	select {
	case <-ctx.Done():
	case <-s.done:
	case err = <-errc:
	}
	s.tcp.Close()
	if s.udpRaw != nil {
		s.udpRaw.interrupt(shutRD)
	} else {
		s.udp.Close()
	}
	s.mu.Lock()
	for c := range s.conns {
		c.interrupt()
	}
	s.mu.Unlock()
	wg.Wait()
	if s.udpRaw != nil {
		if cerr := s.udpRaw.close(); err == nil {
			err = cerr
		}
	}
	return err
}

// closer makes a net.Conn something Serve can interrupt.
type closer struct{ net.Conn }

func (c closer) interrupt() { c.Close() }

// rawConn is a TCP client's socket off the runtime poller.
type rawConn struct{ *rawSock }

func (c rawConn) interrupt() { c.rawSock.interrupt(shutRDWR) }

// Serve listens as cfg says and serves until ctx ends (or, with Once,
// the first client is done). ready, if not nil, is called with the port
// once both sockets are open.
func Serve(ctx context.Context, cfg Config, log io.Writer, ready func(port int)) error {
	s, err := Listen(cfg, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.log, "blast lat: echoing TCP and UDP round trips on port %d\n", s.port)
	if ready != nil {
		ready(s.port)
	}
	return s.Serve(ctx)
}

func (s *Server) clientDone() {
	if s.cfg.Once {
		s.doneOnce.Do(func() { close(s.done) })
	}
}

func (s *Server) closing() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// MaxClients bounds the TCP clients blast lat -s echoes at once (each
// holds a thread), MaxClientsPerHost those from one address; a client
// from an address that holds at least two fewer than the fullest takes
// the place of that address's oldest client.
const (
	MaxClients        = 64
	MaxClientsPerHost = 16
)

func (s *Server) acceptLoop(wg *sync.WaitGroup) error {
	var seq uint64
	for {
		c, err := s.tcp.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("accept: %w", err)
		}
		remote := c.RemoteAddr()
		// A UDP client's session greeting opens its session as it is
		// echoed; the session lasts as long as the connection.
		watch := &greetingWatch{sessions: s.sessions, host: peerAddr(remote)}
		var (
			stop    interface{ interrupt() } = closer{c}
			echo                             = func() (int64, error) { return echoTCP(c, DefaultWriteTimeout, watch.see) }
			release                          = c.Close
		)
		if rs, err := detach(c); err == nil {
			stop, echo, release = rawConn{rs}, func() (int64, error) { return echoRaw(rs, DefaultWriteTimeout, watch.see) }, rs.close
		} else if !errors.Is(err, engine.ErrNotSupported) {
			fmt.Fprintf(s.log, "blast lat: tcp %s: take the socket off the runtime poller: %v\n", remote, err)
			continue // detach closed c
		}
		seq++
		s.mu.Lock()
		if s.closing() {
			s.mu.Unlock()
			release()
			continue
		}
		pl, victim := s.places.Add(peerAddr(remote), seq, stop.interrupt)
		if pl == nil {
			s.mu.Unlock()
			release()
			fmt.Fprintf(s.log, "blast lat: tcp %s: refused: %d clients are running, %d from its address\n", remote, MaxClients, MaxClientsPerHost)
			continue
		}
		s.conns[stop] = struct{}{}
		wg.Add(1)
		s.mu.Unlock()
		if victim != nil {
			victim.Kick()
		}
		go func() {
			defer wg.Done()
			n, err := echo()
			watch.close()
			s.mu.Lock()
			delete(s.conns, stop)
			s.places.Release(pl)
			s.mu.Unlock()
			release()
			switch {
			case err != nil && !errors.Is(err, net.ErrClosed):
				fmt.Fprintf(s.log, "blast lat: tcp %s: %v (after %d bytes echoed)\n", remote, err, n)
			case watch.end != nil:
				fmt.Fprintf(s.log, "blast lat: tcp %s: the session of UDP port %d done\n", remote, watch.port)
			default:
				fmt.Fprintf(s.log, "blast lat: tcp %s: done, %d bytes echoed\n", remote, n)
			}
			s.clientDone()
		}()
	}
}

// DefaultWriteTimeout is how long an echo waits for a client to take its
// replies (blast lat -s; blast server's EchoWriteTimeout) before it drops
// the client: one that sends and never reads must not hold a thread and a
// place for ever.
const DefaultWriteTimeout = 10 * time.Second

// ErrNotReading ends the echo of a client that took none of its replies
// within the write timeout.
var ErrNotReading = errors.New("the client took none of its replies")

// peerAddr is the address of a TCP client.
func peerAddr(a net.Addr) netip.Addr {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// echoTCP writes back everything it reads until the client closes; a
// write that cannot finish within write ends it (ErrNotReading). see
// (nil: none) is shown what was read before it is written back.
func echoTCP(c net.Conn, write time.Duration, see func([]byte)) (int64, error) {
	buf := make([]byte, 256<<10)
	var total int64
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if see != nil {
				see(buf[:n])
			}
			c.SetWriteDeadline(time.Now().Add(write))
			if _, werr := c.Write(buf[:n]); werr != nil {
				if errors.Is(werr, os.ErrDeadlineExceeded) {
					return total, fmt.Errorf("%w for %v", ErrNotReading, write)
				}
				return total, werr
			}
			total += int64(n)
		}
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// udpLoop sends each datagram from a client with a session back to its
// sender, except a client's goodbye, which ends that client.
func (s *Server) udpLoop() error {
	buf := make([]byte, 64<<10)
	for {
		n, from, err := s.udp.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			// An ICMP error from an earlier reply (the client went away)
			// is reported on the next read: not the server's problem.
			continue
		}
		if kind, _, ok := header(buf[:n]); ok && kind == kindBye {
			s.udpBye(from)
			continue
		}
		if !s.sessions.MayEcho(from) {
			continue
		}
		if _, err := s.udp.WriteToUDPAddrPort(buf[:n], from); err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			continue
		}
		s.udpPeers[from]++
	}
}

// udpBye ends a UDP client that said goodbye.
func (s *Server) udpBye(from netip.AddrPort) {
	if cnt, seen := s.udpPeers[from]; seen {
		fmt.Fprintf(s.log, "blast lat: udp %s: done, %d datagrams echoed\n", from, cnt)
		delete(s.udpPeers, from)
		s.clientDone()
	}
}
