package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// network splits "tcp", "tcp4", "udp6"... into the protocol and the
// family it pins (0: either).
func network(nw string) (Protocol, int, error) {
	switch nw {
	case "tcp":
		return TCP, 0, nil
	case "tcp4":
		return TCP, unix.AF_INET, nil
	case "tcp6":
		return TCP, unix.AF_INET6, nil
	case "udp":
		return UDP, 0, nil
	case "udp4":
		return UDP, unix.AF_INET, nil
	case "udp6":
		return UDP, unix.AF_INET6, nil
	}
	return 0, 0, fmt.Errorf("engine: unknown network %q (tcp, tcp4, tcp6, udp, udp4, udp6)", nw)
}

func sockType(p Protocol) int {
	if p == UDP {
		return unix.SOCK_DGRAM
	}
	return unix.SOCK_STREAM
}

// newSocket makes a blocking, close-on-exec socket with opts applied.
func newSocket(family int, p Protocol, opts SockOpts) (int, error) {
	proto := 0
	if p == TCP && opts.MPTCP {
		proto = unix.IPPROTO_MPTCP
	}
	fd, err := unix.Socket(family, sockType(p)|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		if proto == unix.IPPROTO_MPTCP {
			return -1, mptcpError(err)
		}
		return -1, os.NewSyscallError("socket", err)
	}
	if err := opts.apply(fd, family, p); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

func (o SockOpts) apply(fd, family int, p Protocol) error {
	if o.SndBuf > 0 {
		if !o.ForceBuf || unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, o.SndBuf) != nil {
			if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, o.SndBuf); err != nil {
				return fmt.Errorf("set SO_SNDBUF %d: %w", o.SndBuf, err)
			}
		}
	}
	if o.RcvBuf > 0 {
		if !o.ForceBuf || unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, o.RcvBuf) != nil {
			if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, o.RcvBuf); err != nil {
				return fmt.Errorf("set SO_RCVBUF %d: %w", o.RcvBuf, err)
			}
		}
	}
	if o.TOS >= 0 {
		if family == unix.AF_INET6 {
			if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_TCLASS, o.TOS); err != nil {
				return fmt.Errorf("set IPV6_TCLASS %#x: %w", o.TOS, err)
			}
		}
		// A v6 socket may carry v4-mapped traffic: set IP_TOS too.
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TOS, o.TOS); err != nil && !(family == unix.AF_INET6 && errors.Is(err, unix.ENOPROTOOPT)) {
			return fmt.Errorf("set IP_TOS %#x: %w", o.TOS, err)
		}
	}
	if p == TCP {
		if !o.Nagle {
			if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
				return fmt.Errorf("set TCP_NODELAY: %w", err)
			}
		}
		if o.MSS > 0 {
			if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_MAXSEG, o.MSS); err != nil {
				return fmt.Errorf("set TCP_MAXSEG %d: %w", o.MSS, err)
			}
		}
		if o.Congestion != "" {
			if err := unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, o.Congestion); err != nil {
				switch err {
				case unix.ENOENT:
					return fmt.Errorf("congestion control %q is not available here (see /proc/sys/net/ipv4/tcp_available_congestion_control)", o.Congestion)
				case unix.EPERM:
					return fmt.Errorf("congestion control %q is not allowed for unprivileged use (add it to net.ipv4.tcp_allowed_congestion_control, or run as root)", o.Congestion)
				}
				return fmt.Errorf("set TCP_CONGESTION %q: %w", o.Congestion, err)
			}
		}
	}
	if o.MaxPacingRate > 0 {
		if err := unix.SetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, uint64(o.MaxPacingRate)); err != nil {
			return fmt.Errorf("set SO_MAX_PACING_RATE %d bytes/s: %w", o.MaxPacingRate, err)
		}
	}
	if o.DontFragment {
		if family == unix.AF_INET6 {
			if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER, unix.IPV6_PMTUDISC_DO); err != nil {
				return fmt.Errorf("set IPV6_MTU_DISCOVER (don't fragment): %w", err)
			}
		}
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO); err != nil && !(family == unix.AF_INET6 && errors.Is(err, unix.ENOPROTOOPT)) {
			return fmt.Errorf("set IP_MTU_DISCOVER (don't fragment): %w", err)
		}
	}
	if o.Debug {
		err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DEBUG, 1)
		switch {
		case err == nil:
		case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
			return fmt.Errorf("set SO_DEBUG: needs CAP_NET_ADMIN; run as root")
		default:
			return fmt.Errorf("set SO_DEBUG: %w", err)
		}
	}
	if o.Device != "" {
		err := unix.SetsockoptString(fd, unix.SOL_SOCKET, unix.SO_BINDTODEVICE, o.Device)
		switch {
		case err == nil:
		case errors.Is(err, unix.ENODEV):
			return fmt.Errorf("bind to interface %s: no such interface (see 'ip link')", o.Device)
		case errors.Is(err, unix.EPERM):
			return fmt.Errorf("bind to interface %s: needs CAP_NET_RAW; run as root", o.Device)
		default:
			return fmt.Errorf("bind to interface %s: %w", o.Device, err)
		}
	}
	return nil
}

func sockaddr(ap netip.AddrPort, family int) unix.Sockaddr {
	if family == unix.AF_INET {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().Unmap().As4()}
	}
	sa := &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	if z := ap.Addr().Zone(); z != "" {
		if ifi, err := net.InterfaceByName(z); err == nil {
			sa.ZoneId = uint32(ifi.Index)
		} else if n, err := strconv.Atoi(z); err == nil {
			sa.ZoneId = uint32(n)
		}
	}
	return sa
}

func addrPort(sa unix.Sockaddr) netip.AddrPort {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr).Unmap(), uint16(a.Port))
	}
	return netip.AddrPort{}
}

func familyOf(a netip.Addr) int {
	if a.Is4() || a.Is4In6() {
		return unix.AF_INET
	}
	return unix.AF_INET6
}

// wrap makes a Socket of a connected or bound descriptor.
func wrap(fd int, p Protocol) *Socket {
	s := &Socket{fd: fd, proto: p}
	if sa, err := unix.Getsockname(fd); err == nil {
		s.local = addrPort(sa)
	}
	if sa, err := unix.Getpeername(fd); err == nil {
		s.remote = addrPort(sa)
	}
	return s
}

// resolve looks host up, keeping the addresses of the family asked for.
func resolve(ctx context.Context, host string, family int) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	nw := "ip"
	switch family {
	case unix.AF_INET:
		nw = "ip4"
	case unix.AF_INET6:
		nw = "ip6"
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, nw, host)
	if err != nil {
		return nil, err
	}
	return addrs, nil
}

// Dial makes a socket of network ("tcp", "tcp4", "tcp6", "udp", "udp4",
// "udp6") with opts and connects it to address ("host:port"), trying each
// address the host has until one answers. A UDP socket is connected: it
// sends to and receives from that peer only. ctx bounds the connect.
func Dial(ctx context.Context, nw, address string, opts SockOpts) (*Socket, error) {
	p, family, err := network(nw)
	if err != nil {
		return nil, err
	}
	host, portS, err := net.SplitHostPort(address)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: nw, Err: err}
	}
	port, err := net.DefaultResolver.LookupPort(ctx, nw, portS)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: nw, Err: err}
	}
	addrs, err := resolve(ctx, host, family)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: nw, Err: err}
	}
	var first error
	for _, a := range addrs {
		if family != 0 && familyOf(a) != family {
			continue
		}
		s, err := dialOne(ctx, p, netip.AddrPortFrom(a, uint16(port)), opts)
		if err == nil {
			return s, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if first == nil {
		first = &net.AddrError{Err: "no address of the family asked for", Addr: host}
	}
	return nil, &net.OpError{Op: "dial", Net: nw, Err: first}
}

func dialOne(ctx context.Context, p Protocol, to netip.AddrPort, opts SockOpts) (*Socket, error) {
	family := familyOf(to.Addr())
	if family == unix.AF_INET {
		to = netip.AddrPortFrom(to.Addr().Unmap(), to.Port())
	}
	fd, err := newSocket(family, p, opts)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			unix.Close(fd)
		}
	}()
	if opts.Local.IsValid() {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
			return nil, os.NewSyscallError("setsockopt SO_REUSEADDR", err)
		}
		if err := unix.Bind(fd, sockaddr(opts.Local, family)); err != nil {
			return nil, os.NewSyscallError("bind", err)
		}
	}
	start := func() error { return unix.Connect(fd, sockaddr(to, family)) }
	if opts.FlowLabel != 0 {
		if start, err = flowLabelConnect(fd, family, to, opts.FlowLabel); err != nil {
			return nil, err
		}
	}
	if err := connect(ctx, fd, start); err != nil {
		return nil, err
	}
	ok = true
	return wrap(fd, p), nil
}

// connect connects fd without blocking past ctx: non-blocking connect
// (start issues the connect(2)), then ppoll in short slices, then back to
// blocking mode.
func connect(ctx context.Context, fd int, start func() error) error {
	if err := unix.SetNonblock(fd, true); err != nil {
		return os.NewSyscallError("fcntl", err)
	}
	err := start()
	if err == unix.EINPROGRESS {
		for {
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
			ts := unix.NsecToTimespec(int64(20 * time.Millisecond))
			n, perr := unix.Ppoll(pfd, &ts, nil)
			if perr != nil && perr != unix.EINTR {
				return os.NewSyscallError("ppoll", perr)
			}
			if n > 0 {
				break
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
		soerr, gerr := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
		if gerr != nil {
			return os.NewSyscallError("getsockopt", gerr)
		}
		if soerr != 0 {
			err = syscall.Errno(soerr)
		} else {
			err = nil
		}
	}
	if err != nil {
		return os.NewSyscallError("connect", err)
	}
	return os.NewSyscallError("fcntl", unix.SetNonblock(fd, false))
}

// Listener is a listening TCP socket the engine made. Accept blocks its
// caller's thread; Close (or the context of a blocked Accept) wakes it.
type Listener struct{ s *Socket }

// Listen makes a TCP listening socket of network ("tcp": both families
// on a dual-stack socket) on address (":port", "host:port") with opts,
// which accepted sockets inherit.
func Listen(ctx context.Context, nw, address string, opts SockOpts) (*Listener, error) {
	fd, p, err := bindSocket(ctx, nw, address, opts)
	if err != nil {
		return nil, err
	}
	if p != TCP {
		unix.Close(fd)
		return nil, fmt.Errorf("engine: Listen takes a TCP network, not %q (use ListenUDP)", nw)
	}
	if err := unix.Listen(fd, 128); err != nil {
		unix.Close(fd)
		return nil, &net.OpError{Op: "listen", Net: nw, Err: os.NewSyscallError("listen", err)}
	}
	return &Listener{wrap(fd, TCP)}, nil
}

// ListenUDP makes a UDP socket of network bound to address, unconnected:
// it receives from any peer until Connect.
func ListenUDP(ctx context.Context, nw, address string, opts SockOpts) (*Socket, error) {
	fd, p, err := bindSocket(ctx, nw, address, opts)
	if err != nil {
		return nil, err
	}
	if p != UDP {
		unix.Close(fd)
		return nil, fmt.Errorf("engine: ListenUDP takes a UDP network, not %q (use Listen)", nw)
	}
	return wrap(fd, UDP), nil
}

func bindSocket(ctx context.Context, nw, address string, opts SockOpts) (int, Protocol, error) {
	p, family, err := network(nw)
	if err != nil {
		return -1, 0, err
	}
	host, portS, err := net.SplitHostPort(address)
	if err != nil {
		return -1, 0, &net.OpError{Op: "listen", Net: nw, Err: err}
	}
	port, err := net.DefaultResolver.LookupPort(ctx, nw, portS)
	if err != nil {
		return -1, 0, &net.OpError{Op: "listen", Net: nw, Err: err}
	}
	var addr netip.Addr
	switch {
	case host != "":
		addrs, err := resolve(ctx, host, family)
		if err != nil {
			return -1, 0, &net.OpError{Op: "listen", Net: nw, Err: err}
		}
		addr = addrs[0]
		family = familyOf(addr)
	case family == unix.AF_INET:
		addr = netip.IPv4Unspecified()
	default:
		addr = netip.IPv6Unspecified()
	}
	dual := host == "" && family == 0
	if dual {
		family = unix.AF_INET6
	}
	fd, err := newSocket(family, p, opts)
	if err != nil && dual && errors.Is(err, unix.EAFNOSUPPORT) {
		family, addr, dual = unix.AF_INET, netip.IPv4Unspecified(), false
		fd, err = newSocket(family, p, opts)
	}
	if err != nil {
		return -1, 0, &net.OpError{Op: "listen", Net: nw, Err: err}
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		unix.Close(fd)
		return -1, 0, os.NewSyscallError("setsockopt SO_REUSEADDR", err)
	}
	if family == unix.AF_INET6 {
		v6only := 1
		if dual {
			v6only = 0
		}
		unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, v6only)
	}
	if err := unix.Bind(fd, sockaddr(netip.AddrPortFrom(addr, uint16(port)), family)); err != nil {
		unix.Close(fd)
		return -1, 0, &net.OpError{Op: "listen", Net: nw, Err: os.NewSyscallError("bind", err)}
	}
	return fd, p, nil
}

// Addr is the address the listener is bound to.
func (l *Listener) Addr() netip.AddrPort { return l.s.local }

// BufSize is what the kernel granted the listener (and so its accepted
// sockets): SO_SNDBUF when send, SO_RCVBUF otherwise.
func (l *Listener) BufSize(send bool) (int, error) { return l.s.BufSize(send) }

// Accept waits for a connection. A done ctx, or Close from another
// goroutine, wakes it with the context's error or ErrClosed.
func (l *Listener) Accept(ctx context.Context) (*Socket, error) {
	stop := context.AfterFunc(ctx, func() { l.s.Shutdown() })
	defer stop()
	for {
		nfd, _, err := unix.Accept4(l.s.fd, unix.SOCK_CLOEXEC)
		if err == unix.EINTR || err == unix.ECONNABORTED {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if l.s.isClosed() || err == unix.EINVAL {
				return nil, ErrClosed
			}
			return nil, os.NewSyscallError("accept", err)
		}
		return wrap(nfd, TCP), nil
	}
}

// Close stops listening; a blocked Accept returns ErrClosed.
func (l *Listener) Close() error {
	l.s.Shutdown()
	return l.s.Close()
}

// Adopt takes over the socket of c, a connection accepted or dialled with
// package net, and closes c: the engine then owns a blocking duplicate of
// the descriptor that no runtime poller watches. The iperf3 server uses it
// for data connections, which arrive on the control port. Like every
// engine TCP socket it has TCP_NODELAY (package net sets it too).
func Adopt(c net.Conn) (*Socket, error) {
	var p Protocol
	switch c.(type) {
	case *net.TCPConn:
		p = TCP
	case *net.UDPConn:
		p = UDP
	default:
		c.Close()
		return nil, fmt.Errorf("engine: cannot adopt a %T", c)
	}
	sc := c.(syscall.Conn)
	rc, err := sc.SyscallConn()
	if err != nil {
		c.Close()
		return nil, err
	}
	nfd := -1
	var derr error
	if err := rc.Control(func(fd uintptr) { nfd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		derr = err
	}
	// Closing c takes the original out of the runtime's epoll set; the
	// duplicate shares the open socket.
	cerr := c.Close()
	if derr != nil {
		return nil, os.NewSyscallError("dup", derr)
	}
	if cerr != nil {
		unix.Close(nfd)
		return nil, cerr
	}
	if err := unix.SetNonblock(nfd, false); err != nil {
		unix.Close(nfd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	return wrap(nfd, p), nil
}

// Shutdown shuts both directions of the socket down, waking any call
// blocked on it (read, write, accept, an io_uring operation). It is what
// cancels a flow; safe after Close and more than once.
func (s *Socket) Shutdown() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	err := unix.Shutdown(s.fd, unix.SHUT_RDWR)
	if err == unix.ENOTCONN {
		return nil // an unconnected socket is woken all the same
	}
	return os.NewSyscallError("shutdown", err)
}

// CloseWrite shuts the sending direction down (a TCP FIN after the data
// queued).
func (s *Socket) CloseWrite() error {
	return s.Control(func(fd int) error { return os.NewSyscallError("shutdown", unix.Shutdown(fd, unix.SHUT_WR)) })
}

func (s *Socket) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Close closes the descriptor; later calls return ErrClosed (Close itself
// returns nil the second time).
func (s *Socket) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return os.NewSyscallError("close", unix.Close(s.fd))
}

// SetTimeout bounds every later blocking send and receive on the socket
// (SO_SNDTIMEO and SO_RCVTIMEO; 0: no bound). A call that runs past it
// fails with an error wrapping ErrTimeout.
func (s *Socket) SetTimeout(d time.Duration) error {
	tv := unix.NsecToTimeval(int64(d))
	return s.Control(func(fd int) error {
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
			return os.NewSyscallError("setsockopt SO_SNDTIMEO", err)
		}
		return os.NewSyscallError("setsockopt SO_RCVTIMEO", unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv))
	})
}

// sendTimeout sets SO_SNDTIMEO alone (0: no bound).
func (s *Socket) sendTimeout(d time.Duration) error {
	tv := unix.NsecToTimeval(int64(d))
	return s.Control(func(fd int) error {
		return os.NewSyscallError("setsockopt SO_SNDTIMEO", unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv))
	})
}

// reportQueueDrops turns IP_RECVERR (and, on an IPv6 socket, IPV6_RECVERR)
// on or off on a UDP socket. On, a datagram the host's own queue drops (a
// qdisc at its limit) fails its send with ENOBUFS; off (the default), the
// kernel counts it in SndbufErrors and the send succeeds, so the datagram
// is lost without the sender knowing. iperf3's default socket buffer
// is smaller than most qdiscs' limits and never fills one; -w 1M, or
// several streams, do (through a 50 Mbit/s tbf of 369 KiB at -b 100M,
// iperf3 -w 1M lost 69% in the tbf, blast -P 4 84%).
func (s *Socket) reportQueueDrops(on bool) error {
	v := 0
	if on {
		v = 1
	}
	return s.Control(func(fd int) error {
		if err := unix.SetsockoptInt(fd, unix.SOL_IP, unix.IP_RECVERR, v); err != nil {
			return os.NewSyscallError("setsockopt IP_RECVERR", err)
		}
		if d, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN); err == nil && d == unix.AF_INET6 {
			if err := unix.SetsockoptInt(fd, unix.SOL_IPV6, unix.IPV6_RECVERR, v); err != nil {
				return os.NewSyscallError("setsockopt IPV6_RECVERR", err)
			}
		}
		return nil
	})
}

// IOErr turns a failed data call into an error naming op: the timeout of
// a blocking socket (EAGAIN) wraps ErrTimeout and os.ErrDeadlineExceeded.
func IOErr(op string, err error) error {
	if err == unix.EAGAIN {
		return fmt.Errorf("%s: %w (%w)", op, ErrTimeout, os.ErrDeadlineExceeded)
	}
	return os.NewSyscallError(op, err)
}

// Read reads once into p (blocking). 0, nil is the end of a TCP stream
// (or an empty datagram).
func (s *Socket) Read(p []byte) (int, error) {
	for {
		n, err := unix.Read(s.fd, p)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, IOErr("read", err)
		}
		return n, nil
	}
}

// Peek looks at the next datagram without taking it (blocking, as Read):
// it copies what fits into p and returns the datagram's whole length.
func (s *Socket) Peek(p []byte) (int, error) {
	for {
		n, _, err := unix.Recvfrom(s.fd, p, unix.MSG_PEEK|unix.MSG_TRUNC)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, IOErr("recvfrom", err)
		}
		return n, nil
	}
}

// ReadFrom receives one datagram into p and says who sent it.
func (s *Socket) ReadFrom(p []byte) (int, netip.AddrPort, error) {
	for {
		n, from, err := unix.Recvfrom(s.fd, p, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, netip.AddrPort{}, IOErr("recvfrom", err)
		}
		var ap netip.AddrPort
		if from != nil {
			ap = addrPort(from)
		}
		return n, ap, nil
	}
}

// Write writes all of p (a UDP write is one datagram).
func (s *Socket) Write(p []byte) (int, error) {
	done := 0
	for {
		n, err := unix.SendmsgN(s.fd, p[done:], nil, nil, unix.MSG_NOSIGNAL)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return done, IOErr("write", err)
		}
		done += n
		if done == len(p) || s.proto == UDP {
			return done, nil
		}
	}
}

// WriteTo sends p as one datagram to to, from an unconnected UDP socket
// (a reply to a ReadFrom).
func (s *Socket) WriteTo(p []byte, to netip.AddrPort) (int, error) {
	var n int
	err := s.Control(func(fd int) error {
		family := unix.AF_INET6
		if sa, err := unix.Getsockname(fd); err == nil {
			if _, ok := sa.(*unix.SockaddrInet4); ok {
				family = unix.AF_INET
			}
		}
		if family == unix.AF_INET6 && to.Addr().Is4() {
			to = netip.AddrPortFrom(netip.AddrFrom16(to.Addr().As16()), to.Port())
		}
		for {
			err := unix.Sendto(fd, p, unix.MSG_NOSIGNAL, sockaddr(to, family))
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return IOErr("sendto", err)
			}
			n = len(p)
			return nil
		}
	})
	return n, err
}

// Connect connects an unconnected UDP socket to peer (the sender it heard
// from first), so that it hears from nobody else.
func (s *Socket) Connect(peer netip.AddrPort) error {
	return s.Control(func(fd int) error {
		family := unix.AF_INET6
		if sa, err := unix.Getsockname(fd); err == nil {
			if _, ok := sa.(*unix.SockaddrInet4); ok {
				family = unix.AF_INET
			}
		}
		if family == unix.AF_INET6 && peer.Addr().Is4() {
			peer = netip.AddrPortFrom(netip.AddrFrom16(peer.Addr().As16()), peer.Port())
		}
		if err := unix.Connect(fd, sockaddr(peer, family)); err != nil {
			return os.NewSyscallError("connect", err)
		}
		s.remote = netip.AddrPortFrom(peer.Addr().Unmap(), peer.Port())
		// Bound to the wildcard, the socket has its own address only now.
		if sa, err := unix.Getsockname(fd); err == nil {
			s.local = addrPort(sa)
		}
		return nil
	})
}

// BufSize reads back the socket buffer the kernel granted: SO_SNDBUF when
// send is true, SO_RCVBUF otherwise. Linux doubles what was asked to leave
// room for its bookkeeping, and this reports that real figure.
func (s *Socket) BufSize(send bool) (int, error) {
	opt, name := unix.SO_RCVBUF, "SO_RCVBUF"
	if send {
		opt, name = unix.SO_SNDBUF, "SO_SNDBUF"
	}
	v := 0
	err := s.Control(func(fd int) error {
		var gerr error
		v, gerr = unix.GetsockoptInt(fd, unix.SOL_SOCKET, opt)
		if gerr != nil {
			return fmt.Errorf("get %s: %w", name, gerr)
		}
		return nil
	})
	return v, err
}

// Apply sets opts on the socket after the fact (an accepted or adopted
// socket; the Local address is ignored). Buffer sizes set now do not
// reach the window scale the handshake already agreed.
func (s *Socket) Apply(opts SockOpts) error {
	return s.Control(func(fd int) error {
		family := unix.AF_INET6
		if sa, err := unix.Getsockname(fd); err == nil {
			if _, ok := sa.(*unix.SockaddrInet4); ok {
				family = unix.AF_INET
			}
		}
		return opts.apply(fd, family, s.proto)
	})
}

// Control returns a function for net.Dialer.Control and
// net.ListenConfig.Control that applies o to a socket package net makes:
// for modes whose sockets stay on net (latency's, control connections).
func (o SockOpts) Control() func(network, address string, c syscall.RawConn) error {
	return func(nw, address string, c syscall.RawConn) error {
		p, _, err := network(nw)
		if err != nil {
			return err
		}
		var serr error
		err = c.Control(func(fd uintptr) {
			family := unix.AF_INET6
			if sa, err := unix.Getsockname(int(fd)); err == nil {
				if _, ok := sa.(*unix.SockaddrInet4); ok {
					family = unix.AF_INET
				}
			}
			serr = o.apply(int(fd), family, p)
		})
		return errors.Join(err, serr)
	}
}

// ShutdownRead shuts the receiving direction down: a blocked receive
// returns 0, and sends still work (a UDP goodbye after the last reply).
func (s *Socket) ShutdownRead() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	if err := unix.Shutdown(s.fd, unix.SHUT_RD); err != nil && err != unix.ENOTCONN {
		return os.NewSyscallError("shutdown", err)
	}
	return nil
}
