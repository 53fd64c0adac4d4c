package latency

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

// rawSock is a socket taken off the runtime poller: its own descriptor,
// in blocking mode, read and written with one syscall per direction on
// the calling thread.
//
// A ping-pong flow waits for every reply. Parked in the runtime poller,
// each wait costs a round of epoll_wait, a goroutine hand-off and often a
// futex wake of another thread, which adds microseconds to every round
// trip; blocked in recvfrom, the thread is woken by the socket itself, as
// sockperf's and qperf's are. The price is a thread per waiting flow,
// which a latency run (one flow, a server with a few clients) can pay.
//
// The poller no longer sees the descriptor, so rawSock keeps its own
// promises: the wait for a reply is bounded by SO_RCVTIMEO (the client
// sets it; the server waits without a bound) and interrupt, from any
// goroutine, shuts the socket down so that a blocked recvfrom returns 0
// at once. The descriptor is closed only by close, after the loop that
// uses it has returned, so it is never reused under a blocked call.
type rawSock struct {
	sock *engine.Socket
	fd   int
	shut atomic.Bool // interrupt has run: a 0-byte read means stop
}

// detach moves c's socket to a rawSock: the engine adopts it (a blocking
// duplicate no runtime poller sees) and closes c, on every path.
func detach(c net.Conn) (*rawSock, error) {
	sock, err := engine.Adopt(c)
	if err != nil {
		return nil, err
	}
	return &rawSock{sock: sock, fd: sock.FD()}, nil
}

// setRecvTimeout bounds each blocking receive (SO_RCVTIMEO; 0: no bound).
func (s *rawSock) setRecvTimeout(d time.Duration) error {
	if d > 0 && d < time.Microsecond {
		d = time.Microsecond // a zero timeval would mean no bound
	}
	return s.timeout(unix.SO_RCVTIMEO, d)
}

// setSendTimeout bounds each blocking send (SO_SNDTIMEO).
func (s *rawSock) setSendTimeout(d time.Duration) error {
	return s.timeout(unix.SO_SNDTIMEO, max(d, time.Microsecond))
}

func (s *rawSock) timeout(opt int, d time.Duration) error {
	tv := unix.NsecToTimeval(d.Nanoseconds())
	return s.sock.Control(func(fd int) error {
		return os.NewSyscallError("setsockopt", unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, opt, &tv))
	})
}

// interrupt wakes a receive blocked on s, from any goroutine: the
// receive returns 0 and every later one too. how is unix.SHUT_RD (sends
// still work: a UDP client's goodbye) or unix.SHUT_RDWR (a blocked TCP
// send wakes too).
func (s *rawSock) interrupt(how int) {
	s.shut.Store(true)
	if how == unix.SHUT_RD {
		s.sock.ShutdownRead()
		return
	}
	s.sock.Shutdown()
}

// close releases the descriptor; call it once the loop using s is done.
func (s *rawSock) close() error { return s.sock.Close() }

// recv is recvfrom(2) without the source address; flags 0 blocks.
func (s *rawSock) recv(p []byte, flags int) (int, syscall.Errno) {
	r, _, e := syscall.Syscall6(unix.SYS_RECVFROM, uintptr(s.fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)), uintptr(flags), 0, 0)
	return int(r), e
}

// recvFrom is recvfrom(2) with the source address, into sa.
func (s *rawSock) recvFrom(p []byte, sa *unix.RawSockaddrAny, salen *uint32) (int, syscall.Errno) {
	*salen = unix.SizeofSockaddrAny
	r, _, e := syscall.Syscall6(unix.SYS_RECVFROM, uintptr(s.fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)), 0,
		uintptr(unsafe.Pointer(sa)), uintptr(unsafe.Pointer(salen)))
	return int(r), e
}

// send is sendto(2) on a connected socket, without SIGPIPE.
func (s *rawSock) send(p []byte) (int, syscall.Errno) {
	r, _, e := syscall.Syscall6(unix.SYS_SENDTO, uintptr(s.fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)), unix.MSG_NOSIGNAL, 0, 0)
	return int(r), e
}

// sendTo is sendto(2) to the address a recvFrom filled in.
func (s *rawSock) sendTo(p []byte, sa *unix.RawSockaddrAny, salen uint32) (int, syscall.Errno) {
	r, _, e := syscall.Syscall6(unix.SYS_SENDTO, uintptr(s.fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)), unix.MSG_NOSIGNAL,
		uintptr(unsafe.Pointer(sa)), uintptr(salen))
	return int(r), e
}

// sendAll writes p on a stream socket: one sendto unless the socket
// buffer is full.
func (s *rawSock) sendAll(p []byte) error {
	for len(p) > 0 {
		n, e := s.send(p)
		switch {
		case e == unix.EINTR:
			continue
		case e != 0:
			return e
		}
		p = p[n:]
	}
	return nil
}

// sendWithin writes p on a stream socket whose SO_SNDTIMEO holds write,
// all of it within write: after a send that moved only part (a client
// that takes its replies a trickle at a time), the timeout is cut to
// what is left of write, and put back after. EAGAIN: it did not.
func (s *rawSock) sendWithin(p []byte, write time.Duration) error {
	start := time.Now()
	shortened := false
	defer func() {
		if shortened {
			s.setSendTimeout(write)
		}
	}()
	for {
		n, e := s.send(p)
		switch {
		case e == unix.EINTR:
		case e != 0:
			return os.NewSyscallError("sendto", e)
		default:
			p = p[n:]
		}
		if len(p) == 0 {
			return nil
		}
		left := write - time.Since(start)
		if left <= 0 {
			return os.NewSyscallError("sendto", unix.EAGAIN)
		}
		if err := s.setSendTimeout(left); err != nil {
			return err
		}
		shortened = true
	}
}

// addrPort reads a socket address as recvFrom filled it in.
func addrPort(sa *unix.RawSockaddrAny) netip.AddrPort {
	switch sa.Addr.Family {
	case unix.AF_INET:
		a := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), port16(a.Port))
	case unix.AF_INET6:
		a := (*unix.RawSockaddrInet6)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr), port16(a.Port))
	}
	return netip.AddrPort{}
}

// port16 turns a sockaddr's port (network byte order) into a number.
func port16(p uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(&p))
	return uint16(b[0])<<8 | uint16(b[1])
}

// rawTCPFlow is the client's TCP flow on a rawSock.
type rawTCPFlow struct {
	s          *rawSock
	addr       string
	req, reply []byte
	timeout    time.Duration
	shortened  bool // SO_RCVTIMEO holds less than timeout
}

func newRawTCPFlow(s *rawSock, addr string, cfg Config) (*rawTCPFlow, error) {
	if err := s.setRecvTimeout(cfg.Timeout); err != nil {
		return nil, err
	}
	if err := s.setSendTimeout(cfg.Timeout); err != nil {
		return nil, err
	}
	return &rawTCPFlow{s: s, addr: addr, req: pattern(cfg.Size), reply: make([]byte, cfg.Size), timeout: cfg.Timeout}, nil
}

func (t *rawTCPFlow) roundTrip(uint64) (time.Time, time.Duration, bool, error) {
	if t.shortened {
		if err := t.s.setRecvTimeout(t.timeout); err != nil {
			return time.Time{}, 0, false, err
		}
		t.shortened = false
	}
	start := time.Now()
	if err := t.s.sendAll(t.req); err != nil {
		if errors.Is(err, unix.EAGAIN) {
			return time.Now(), 0, false, t.noReply()
		}
		return time.Now(), 0, false, t.failed("send to", "sendto", err)
	}
	got := 0
	for {
		n, e := t.s.recv(t.reply[got:], 0)
		if e == 0 && n > 0 {
			got += n
			if got == len(t.reply) {
				end := time.Now()
				return end, end.Sub(start), true, nil
			}
		}
		switch {
		case e == 0 && n == 0:
			if t.s.shut.Load() {
				return time.Now(), 0, false, errInterrupted
			}
			return time.Now(), 0, false, fmt.Errorf("receive from %s: the server closed the connection mid-run: is it blast lat -s?", t.addr)
		case e == unix.EAGAIN:
			return time.Now(), 0, false, t.noReply()
		case e != 0 && e != unix.EINTR:
			return time.Now(), 0, false, t.failed("receive from", "recvfrom", e)
		}
		// A partial reply or a signal: wait out what is left of the
		// timeout.
		now := time.Now()
		left := t.timeout - now.Sub(start)
		if left <= 0 {
			return now, 0, false, t.noReply()
		}
		if err := t.s.setRecvTimeout(left); err != nil {
			return now, 0, false, err
		}
		t.shortened = true
	}
}

func (t *rawTCPFlow) noReply() error {
	return fmt.Errorf("receive from %s: no reply within %s: is the server an echo server (blast lat -s)? raise --timeout for slow paths", t.addr, t.timeout)
}

func (t *rawTCPFlow) failed(op, call string, e error) error {
	if t.s.shut.Load() {
		return errInterrupted
	}
	return explain(op, t.addr, os.NewSyscallError(call, e))
}

func (t *rawTCPFlow) interrupt()   { t.s.interrupt(shutRDWR) }
func (t *rawTCPFlow) close() error { return t.s.close() }

// rawUDPFlow is the client's UDP flow on a rawSock: numbered requests,
// replies matched by their number.
type rawUDPFlow struct {
	s          *rawSock
	addr       string
	req, reply []byte
	timeout    time.Duration
	shortened  bool
	late       int64
	lastLost   uint64
	byeOnce    sync.Once
}

func newRawUDPFlow(s *rawSock, addr string, cfg Config) (*rawUDPFlow, error) {
	if err := s.setRecvTimeout(cfg.Timeout); err != nil {
		return nil, err
	}
	return &rawUDPFlow{s: s, addr: addr, req: pattern(cfg.Size), reply: make([]byte, max(cfg.Size, UDPHeader)+1), timeout: cfg.Timeout}, nil
}

func (u *rawUDPFlow) roundTrip(seq uint64) (time.Time, time.Duration, bool, error) {
	if u.shortened {
		if err := u.s.setRecvTimeout(u.timeout); err != nil {
			return time.Time{}, 0, false, err
		}
		u.shortened = false
	}
	putHeader(u.req, kindRequest, seq)
	start := time.Now()
	for {
		_, e := u.s.send(u.req)
		if e == 0 {
			break
		}
		if e != unix.EINTR {
			return time.Now(), 0, false, u.failed("send to", "sendto", e)
		}
	}
	for {
		n, e := u.s.recv(u.reply, 0)
		if e == 0 {
			kind, got, ok := header(u.reply[:n])
			switch {
			case n == 0 && u.s.shut.Load():
				return time.Now(), 0, false, errInterrupted
			case !ok || kind != kindRequest || n != len(u.req):
				// not a reply to us: ignore it
			case got == seq:
				end := time.Now()
				return end, end.Sub(start), true, nil
			case got <= u.lastLost:
				u.late++
			}
		} else if e == unix.EAGAIN {
			u.lastLost = seq
			return time.Now(), 0, false, nil
		} else if e != unix.EINTR {
			return time.Now(), 0, false, u.failed("receive from", "recvfrom", e)
		}
		// Something else came, or a signal: wait out what is left.
		now := time.Now()
		left := u.timeout - now.Sub(start)
		if left <= 0 {
			u.lastLost = seq
			return now, 0, false, nil
		}
		if err := u.s.setRecvTimeout(left); err != nil {
			return now, 0, false, err
		}
		u.shortened = true
	}
}

func (u *rawUDPFlow) failed(op, call string, e error) error {
	if u.s.shut.Load() {
		return errInterrupted
	}
	return explain(op, u.addr, os.NewSyscallError(call, e))
}

func (u *rawUDPFlow) lateReplies() int64 { return u.late }

// interrupt shuts only the receive side: close still says goodbye.
func (u *rawUDPFlow) interrupt() { u.s.interrupt(shutRD) }

// close tells the server this client is done (three times: a datagram
// may be lost), then closes the socket.
func (u *rawUDPFlow) close() error {
	u.byeOnce.Do(func() {
		bye := make([]byte, UDPHeader)
		putHeader(bye, kindBye, 0)
		for range 3 {
			u.s.send(bye)
		}
	})
	return u.s.close()
}

// newRawFlow puts a dialled flow on a rawSock; c is closed either way.
func newRawFlow(c net.Conn, addr string, cfg Config) (roundTripper, error) {
	s, err := detach(c)
	if err != nil {
		return nil, fmt.Errorf("take the socket off the runtime poller: %w", err)
	}
	var rt roundTripper
	if cfg.UDP {
		rt, err = newRawUDPFlow(s, addr, cfg)
	} else {
		rt, err = newRawTCPFlow(s, addr, cfg)
	}
	if err != nil {
		return nil, errors.Join(err, s.close())
	}
	return rt, nil
}

// echoRaw writes back everything it reads on a TCP connection until the
// client closes it or interrupt is called: one recvfrom and (unless the
// socket buffer is full) one sendto per request. A goroutine blocked in a
// syscall keeps its thread, so no runtime.LockOSThread is needed. A send
// that moves nothing for write (SO_SNDTIMEO) ends the echo with
// ErrNotReading: a client that sends and never reads holds no thread for
// longer.
func echoRaw(s *rawSock, write time.Duration, see func([]byte)) (int64, error) {
	if err := s.setSendTimeout(write); err != nil {
		return 0, err
	}
	cnt := 0
	buf := make([]byte, 256<<10)
	var total int64
	for {
		n, e := s.recv(buf, 0)
		switch {
		case e == unix.EINTR:
			continue
		case e != 0:
			if s.shut.Load() {
				return total, nil
			}
			return total, os.NewSyscallError("recvfrom", e)
		case n == 0:
			return total, nil // the client is done, or interrupt
		}
		if see != nil {
			see(buf[:n])
		}
		if err := s.sendWithin(buf[:n], write); err != nil {
			switch {
			case s.shut.Load():
				return total, nil
			case errors.Is(err, unix.EAGAIN):
				return total, fmt.Errorf("%w for %v", ErrNotReading, write)
			}
			return total, err
		}
		total += int64(n)
		if cnt++; cnt%yieldRequests == 0 {
			runtime.Gosched()
		}
	}
}

// udpLoopRaw sends each datagram from a client with a session back to
// its sender, except a client's goodbye, which ends that client, until
// interrupt.
func (s *Server) udpLoopRaw(rs *rawSock) error {
	cnt := 0
	buf := make([]byte, 64<<10)
	var sa unix.RawSockaddrAny
	var salen uint32
	for {
		n, e := rs.recvFrom(buf, &sa, &salen)
		switch {
		case e != 0 && rs.shut.Load(), e == 0 && n == 0 && rs.shut.Load():
			return nil
		case e == unix.EINTR, e == unix.EAGAIN:
			continue
		case e == unix.ECONNREFUSED, e == unix.EHOSTUNREACH, e == unix.ENETUNREACH, e == unix.EHOSTDOWN:
			// An ICMP error from an earlier reply (the client went away)
			// is reported on the next read: not the server's problem.
			continue
		case e != 0:
			return fmt.Errorf("udp: %w", os.NewSyscallError("recvfrom", e))
		}
		if kind, _, ok := header(buf[:n]); ok && kind == kindBye {
			s.udpBye(addrPort(&sa))
			continue
		}
		if !s.sessions.MayEcho(addrPort(&sa)) {
			continue
		}
		if _, e := rs.sendTo(buf[:n], &sa, salen); e != 0 {
			continue
		}
		s.udpPeers[addrPort(&sa)]++
		if cnt++; cnt%yieldRequests == 0 {
			runtime.Gosched()
		}
	}
}

// How interrupt shuts a socket down.
const (
	shutRD   = unix.SHUT_RD
	shutRDWR = unix.SHUT_RDWR
)
