package pathmtu

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// probeBuffer is the probe sockets' receive buffer: a round's probes
// (roundBytes) twice over.
const probeBuffer = 2 * roundBytes

// setProbe makes fd send with the don't-fragment bit and without the
// kernel's path-MTU estimate (IP_PMTUDISC_PROBE): a probe larger than the
// path is sent anyway and lost on the way, one larger than the interface
// is refused (EMSGSIZE). Its receive buffer holds a round's probes.
func setProbe(fd int, v6 bool) error {
	var err error
	if v6 {
		err = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER, unix.IPV6_PMTUDISC_PROBE)
	} else {
		err = unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_PROBE)
	}
	if err != nil {
		return os.NewSyscallError("setsockopt IP_MTU_DISCOVER", err)
	}
	// SO_RCVBUFFORCE for root, SO_RCVBUF (bounded by rmem_max) otherwise.
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, probeBuffer) != nil {
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, probeBuffer)
	}
	return nil
}

// learned is the path MTU the kernel holds for fd's peer (IP_MTU; 0:
// unknown).
func learned(c syscall.Conn, v6 bool) int {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0
	}
	mtu := 0
	rc.Control(func(fd uintptr) {
		var v int
		var err error
		if v6 {
			v, err = unix.GetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_MTU)
		} else {
			v, err = unix.GetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU)
		}
		if err == nil {
			mtu = v
		}
	})
	return mtu
}

func sockaddr(ip net.IP, port int, zone string) (unix.Sockaddr, bool) {
	if ip4 := ip.To4(); ip4 != nil {
		return &unix.SockaddrInet4{Port: port, Addr: [4]byte(ip4)}, false
	}
	sa := &unix.SockaddrInet6{Port: port, Addr: [16]byte(ip.To16())}
	if zone != "" {
		if ifc, err := net.InterfaceByName(zone); err == nil {
			sa.ZoneId = uint32(ifc.Index)
		}
	}
	return sa, true
}

// udpSocket is the client's probe socket: bound before the greeting (which
// names its port), connected to the server's after it.
type udpSocket struct {
	fd   int
	port uint16
}

func openUDP(la *net.TCPAddr) (*udpSocket, error) {
	sa, v6 := sockaddr(la.IP, 0, la.Zone)
	family := unix.AF_INET
	if v6 {
		family = unix.AF_INET6
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	u := &udpSocket{fd: fd}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("bind", err)
	}
	if err := setProbe(fd, v6); err != nil {
		unix.Close(fd)
		return nil, err
	}
	got, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("getsockname", err)
	}
	switch a := got.(type) {
	case *unix.SockaddrInet4:
		u.port = uint16(a.Port)
	case *unix.SockaddrInet6:
		u.port = uint16(a.Port)
	}
	return u, nil
}

// connect connects the socket to the server's probe port and hands it to
// the runtime poller; the socket is closed on error, and belongs to the
// returned conn otherwise.
func (u *udpSocket) connect(ip net.IP, port int, zone string) (*net.UDPConn, error) {
	sa, _ := sockaddr(ip, port, zone)
	if err := unix.Connect(u.fd, sa); err != nil {
		unix.Close(u.fd)
		return nil, os.NewSyscallError("connect", err)
	}
	f := os.NewFile(uintptr(u.fd), "pathmtu")
	pc, err := net.FilePacketConn(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	return pc.(*net.UDPConn), nil
}

// send sends one datagram; an error the kernel kept for the socket (an
// ICMP error that came back: "fragmentation needed", "port unreachable")
// is reported by the next send, which is tried again once.
func send(c *net.UDPConn, b []byte) error {
	_, err := c.Write(b)
	if errors.Is(err, syscall.EMSGSIZE) || errors.Is(err, syscall.ECONNREFUSED) {
		_, err = c.Write(b)
	}
	return err
}

// pending: an ICMP error the kernel kept for a connected socket, which a
// read reports once; not the end of anything.
func pending(err error) bool {
	return errors.Is(err, syscall.EMSGSIZE) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH)
}

// Probe measures the path MTU both ways against the blast server at
// cfg.Host: the error is for a measurement that could not start (no
// connection, ErrNoServer); a direction that could not be measured says
// why in its NotMeasured.
func Probe(ctx context.Context, cfg Config) (*Result, error) {
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, cfg.network(), cfg.addr())
	if err != nil {
		return nil, fmt.Errorf("pathmtu: connect to %s: %w", cfg.addr(), err)
	}
	defer c.Close()
	la, ra := c.LocalAddr().(*net.TCPAddr), c.RemoteAddr().(*net.TCPAddr)
	v6 := la.IP.To4() == nil
	u, err := openUDP(la)
	if err != nil {
		return nil, fmt.Errorf("pathmtu: probe socket: %w", err)
	}
	start := time.Now()
	g := Greeting(u.port)
	c.SetDeadline(clamp(ctx, start.Add(greetingTimeout)))
	var back [GreetingSize]byte
	_, err = c.Write(g[:])
	// A byte off the prefix ends the wait at once (iperf3 answers a
	// cookie with one byte of state).
	for got := 0; err == nil && got < GreetingSize; {
		var n int
		n, err = c.Read(back[got:])
		got += n
		if err == nil && !prefixOK(back[:got]) {
			err = fmt.Errorf("it answered %q", back[:got])
		}
	}
	sport, smtu, sname, ok := parseAnswer(back)
	if err != nil || !ok {
		unix.Close(u.fd)
		quiet(ctx, c)
		return nil, fmt.Errorf("pathmtu: %s: %w", cfg.addr(), ErrNoServer)
	}
	c.SetDeadline(time.Time{})
	rtt := time.Since(start)
	uc, err := u.connect(ra.IP, int(sport), ra.Zone)
	if err != nil {
		return nil, fmt.Errorf("pathmtu: probe socket: %w", err)
	}
	defer uc.Close()
	p := &prober{ctx: ctx, tcp: c, fr: &frames{c: c}, udp: uc, v6: v6,
		grace: min(max(2*rtt, 5*time.Millisecond), 100*time.Millisecond)}
	res := &Result{}
	lmtu, lname := ifaceMTU(la.IP)
	res.Up.SenderMTU, res.Up.SenderIface = min(lmtu, maxSize), lname
	res.Down.SenderMTU, res.Down.SenderIface = smtu, sname
	top := func(mtu int) int {
		if mtu <= 0 {
			return maxSize
		}
		return mtu
	}
	up := newSearch(minSize(v6), top(res.Up.SenderMTU))
	err = p.run(up, p.upload)
	up.finish(&res.Up)
	if err != nil {
		res.Up.NotMeasured, res.Down.NotMeasured = err.Error(), err.Error()
		res.Up.Measured = false
		return res, nil
	}
	res.Up.Learned = learned(uc, v6)
	down := newSearch(minSize(v6), top(smtu))
	err = p.run(down, p.download)
	down.finish(&res.Down)
	if err != nil {
		res.Down.Measured, res.Down.NotMeasured = false, err.Error()
		return res, nil
	}
	res.Down.Learned = p.serverLearned()
	return res, nil
}

// quiet hangs up on a server that is no blast server and waits, within
// greetingTimeout, until it has closed the connection too: iperf3 took
// the greeting for a test's cookie, and closes and opens its listening
// socket again when that test fails; a test that connects before then is
// refused. The pause after the close covers the reopening.
func quiet(ctx context.Context, c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	c.SetReadDeadline(clamp(ctx, time.Now().Add(greetingTimeout)))
	if _, err := io.Copy(io.Discard, io.LimitReader(c, 1<<16)); err == nil {
		t := time.NewTimer(reopenPause)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// reopenPause is the time a server that closed its listening socket after
// a failed test is given to open it again.
const reopenPause = 100 * time.Millisecond

// prefixOK: b starts as greetingPrefix does.
func prefixOK(b []byte) bool {
	n := min(len(b), len(greetingPrefix))
	return string(b[:n]) == string(greetingPrefix[:n])
}

// clamp is t, or ctx's deadline when that comes first.
func clamp(ctx context.Context, t time.Time) time.Time {
	if d, ok := ctx.Deadline(); ok && d.Before(t) {
		return d
	}
	return t
}

type prober struct {
	ctx   context.Context
	tcp   net.Conn
	fr    *frames
	udp   *net.UDPConn
	v6    bool
	grace time.Duration
	buf   [maxSize]byte
}

// run runs a direction's rounds until its search ends or ctx does; the
// error is for a direction cut short (the server gone, the time up).
func (p *prober) run(s *search, round func(n byte, sizes []int, arrived map[int]bool) error) error {
	arrived := map[int]bool{}
	for !s.done() {
		if p.ctx.Err() != nil {
			if s.lo >= s.min {
				return nil // what it found stands, not exact
			}
			return errors.New("the measurement ran out of time")
		}
		sizes := s.next()
		if err := round(byte(s.rounds+1), sizes, arrived); err != nil {
			return err
		}
		s.update(sizes, arrived)
	}
	return nil
}

// upload sends a round's probes and reads the server's reports until the
// round's marker (and the grace after it) or roundTimeout.
func (p *prober) upload(n byte, sizes []int, arrived map[int]bool) error {
	for _, size := range sizes {
		if err := send(p.udp, probe(p.buf[:], n, size, false, p.v6)); err != nil && !errors.Is(err, syscall.EMSGSIZE) {
			return fmt.Errorf("send a probe: %w", err)
		}
	}
	for range 2 {
		send(p.udp, probe(p.buf[:], n, 0, true, p.v6))
	}
	deadline := clamp(p.ctx, time.Now().Add(roundTimeout))
	marked := false
	for {
		fr, err := p.fr.next(deadline)
		if isTimeout(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("the server ended the measurement: %w", err)
		}
		if fr[0] != opArrived {
			continue
		}
		if size := int(binary.BigEndian.Uint16(fr[2:])); size > 0 {
			arrived[size] = true
		} else if fr[1] == n && !marked {
			marked = true
			deadline = clamp(p.ctx, time.Now().Add(p.grace))
		}
	}
}

// download asks the server for a round's probes and reads them until the
// round's marker (and the grace after it) or roundTimeout.
func (p *prober) download(n byte, sizes []int, arrived map[int]bool) error {
	req := []byte{opSend, n, byte(len(sizes))}
	for _, size := range sizes {
		req = binary.BigEndian.AppendUint16(req, uint16(size))
	}
	p.tcp.SetWriteDeadline(clamp(p.ctx, time.Now().Add(roundTimeout)))
	if _, err := p.tcp.Write(req); err != nil {
		return fmt.Errorf("ask the server for probes: %w", err)
	}
	deadline := clamp(p.ctx, time.Now().Add(roundTimeout))
	marked := false
	for {
		p.udp.SetReadDeadline(deadline)
		m, err := p.udp.Read(p.buf[:])
		if isTimeout(err) {
			return nil
		}
		if pending(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("receive probes: %w", err)
		}
		r, size, ok := parseProbe(p.buf[:m], p.v6)
		switch {
		case !ok:
		case size > 0:
			arrived[size] = true
		case r == n && !marked:
			marked = true
			deadline = clamp(p.ctx, time.Now().Add(p.grace))
		}
	}
}

// serverLearned asks the server for the path MTU its kernel holds for
// this client (0: no answer).
func (p *prober) serverLearned() int {
	deadline := clamp(p.ctx, time.Now().Add(roundTimeout))
	p.tcp.SetWriteDeadline(deadline)
	if _, err := p.tcp.Write([]byte{opMTU, 0, 0}); err != nil {
		return 0
	}
	for {
		fr, err := p.fr.next(deadline)
		if err != nil {
			return 0
		}
		if fr[0] == opMTU {
			return int(binary.BigEndian.Uint16(fr[2:]))
		}
	}
}

// Serve serves one client whose greeting (naming its UDP port) the caller
// has read from c, and closes c: it answers with its probe socket's port
// and its interface's MTU, reports the client's probes that arrive, and
// sends the probes the client asks for, to the client's address only. It
// ends when the client hangs up, on a frame it does not know, after
// MaxSession, or when ctx ends.
func Serve(ctx context.Context, c net.Conn, port uint16) error {
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, MaxSession)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	la, ok1 := c.LocalAddr().(*net.TCPAddr)
	ra, ok2 := c.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return errors.New("pathmtu: not a TCP connection")
	}
	v6 := la.IP.To4() == nil
	u, err := net.DialUDP("udp", &net.UDPAddr{IP: la.IP, Zone: la.Zone}, &net.UDPAddr{IP: ra.IP, Port: int(port), Zone: ra.Zone})
	if err != nil {
		return fmt.Errorf("pathmtu: probe socket: %w", err)
	}
	defer u.Close()
	stopU := context.AfterFunc(ctx, func() { u.SetDeadline(time.Unix(1, 0)) })
	defer stopU()
	rc, err := u.SyscallConn()
	if err != nil {
		return fmt.Errorf("pathmtu: probe socket: %w", err)
	}
	rc.Control(func(fd uintptr) { err = setProbe(int(fd), v6) })
	if err != nil {
		return fmt.Errorf("pathmtu: probe socket: %w", err)
	}
	mtu, name := ifaceMTU(la.IP)
	a := answer(uint16(u.LocalAddr().(*net.UDPAddr).Port), min(mtu, maxSize), name)
	c.SetWriteDeadline(time.Now().Add(greetingTimeout))
	if _, err := c.Write(a[:]); err != nil {
		return err
	}
	c.SetWriteDeadline(time.Time{})

	var wmu sync.Mutex
	write := func(fr [4]byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		_, err := c.Write(fr[:])
		return err
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		buf := make([]byte, maxSize)
		for reports := 0; reports < 2*maxSessionDatagrams; {
			n, err := u.Read(buf)
			if pending(err) {
				continue
			}
			if err != nil {
				return
			}
			if r, size, ok := parseProbe(buf[:n], v6); ok {
				reports++
				if write([4]byte{opArrived, r, byte(size >> 8), byte(size)}) != nil {
					return
				}
			}
		}
	})
	defer wg.Wait()
	defer u.Close() // ends the reader: before Wait

	r := bufio.NewReader(c)
	buf := make([]byte, maxSize)
	sent := 0
	for {
		var h [3]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return nil // the client is done
		}
		switch h[0] {
		case opSend:
			n := int(h[2])
			if n > maxSizes {
				return fmt.Errorf("pathmtu: %d sizes in a round, at most %d", n, maxSizes)
			}
			sizes := make([]byte, 2*n)
			if _, err := io.ReadFull(r, sizes); err != nil {
				return nil
			}
			for i := 0; i < n; i++ {
				size := int(binary.BigEndian.Uint16(sizes[2*i:]))
				if size < overhead(v6)+probeHeader || sent >= maxSessionDatagrams {
					return fmt.Errorf("pathmtu: a probe of %d bytes, or more than %d probes", size, maxSessionDatagrams)
				}
				sent++
				if err := send(u, probe(buf, h[1], size, false, v6)); err != nil && !errors.Is(err, syscall.EMSGSIZE) {
					return err
				}
			}
			for range 2 {
				sent++
				send(u, probe(buf, h[1], 0, true, v6))
			}
		case opMTU:
			m := min(learned(u, v6), maxSize)
			if err := write([4]byte{opMTU, 0, byte(m >> 8), byte(m)}); err != nil {
				return err
			}
		default:
			return fmt.Errorf("pathmtu: unknown frame %q", h[0])
		}
	}
}
