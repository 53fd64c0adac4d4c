package latency

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

// Hello is what a TCP latency client sends first and reads back: an echo
// server (blast lat -s, or any other) returns it like any bytes, and blast
// server, which serves tests and latency on one port, recognizes it where
// a test's cookie would be and turns the connection into an echo. It is
// as long as an iperf3 cookie and cannot be one (a cookie is 36 characters
// of [a-z2-7] and a NUL).
var Hello = [37]byte{'b', 'L', 'a', 't', ' ', 'e', 'c', 'h', 'o', ' ', 'v', '1', '\n'}

// errGreetingInterrupted: ctx ended while the client waited for the
// greeting's echo.
var errGreetingInterrupted = errors.New("latency: interrupted during the greeting")

// hello sends Hello on c and reads it back; ctx ending interrupts it.
func hello(ctx context.Context, c net.Conn, addr string, timeout time.Duration) error {
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer func() {
		stop()
		c.SetDeadline(time.Time{})
	}()
	if _, err := c.Write(Hello[:]); err != nil {
		return explain("send to", addr, err)
	}
	var back [len(Hello)]byte
	if _, err := io.ReadFull(c, back[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("receive from %s: the server closed the connection at the greeting: is it blast server or blast lat -s (an older blast server does not answer blast lat: use blast lat -s there)?", addr)
		}
		if isTimeout(err) {
			return fmt.Errorf("receive from %s: no answer to the greeting within %s: is the server an echo server (blast server, blast lat -s)?", addr, timeout)
		}
		return explain("receive from", addr, err)
	}
	if back != Hello {
		return fmt.Errorf("receive from %s: the server answered the greeting with other bytes: it is not an echo server (blast server, blast lat -s)", addr)
	}
	return nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Echo serves one latency client on c, which has sent Hello already (the
// caller read it): it answers the Hello and then writes back everything it
// reads until the client closes or ctx ends. It takes c off the runtime
// poller when it can, as blast lat -s does, and closes c. A client silent
// for idle is dropped, and so is one that takes none of its replies for
// write (ErrNotReading; 0: DefaultWriteTimeout).
func Echo(ctx context.Context, c net.Conn, idle, write time.Duration) (int64, error) {
	if write <= 0 {
		write = DefaultWriteTimeout
	}
	c.SetWriteDeadline(time.Now().Add(write))
	if _, err := c.Write(Hello[:]); err != nil {
		c.Close()
		return 0, err
	}
	if sc, ok := c.(syscall.Conn); ok && idle > 0 {
		if raw, err := sc.SyscallConn(); err == nil {
			tv := unix.NsecToTimeval(idle.Nanoseconds())
			raw.Control(func(fd uintptr) { unix.SetsockoptTimeval(int(fd), unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv) })
		}
	}
	rs, err := detach(c)
	if err == nil {
		stop := context.AfterFunc(ctx, func() { rs.interrupt(shutRDWR) })
		defer stop()
		defer rs.close()
		return echoRaw(rs, write, nil)
	}
	if !errors.Is(err, engine.ErrNotSupported) {
		return 0, err // detach closed c
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	defer c.Close()
	return echoTCP(c, write, nil)
}

// A UDP client opens a latency session over TCP before its first
// request: its greeting, as long as Hello, names the client's UDP port
// and the requests a second it will send (0: one at a time, each after
// the last reply). blast server and blast lat -s echo UDP requests only
// to an address and port that holds a session (Sessions), at no more
// than the session's rate, so their port cannot be used to reflect
// datagrams at someone else; lat -s's TCP echo returns the greeting as it
// returns any bytes, having opened the session first.
var udpGreetingPrefix = [12]byte{'b', 'L', 'a', 't', ' ', 'u', 'd', 'p', ' ', 'v', '1', '\n'}

// UDPGreeting is the session greeting of a UDP client on port at rate.
func UDPGreeting(port uint16, rate float64) [len(Hello)]byte {
	var g [len(Hello)]byte
	copy(g[:], udpGreetingPrefix[:])
	binary.BigEndian.PutUint16(g[12:], port)
	binary.BigEndian.PutUint32(g[14:], uint32(math.Ceil(min(max(rate, 0), MaxRate))))
	return g
}

// ParseUDPGreeting reads a session greeting: the client's UDP port and
// its rate (0: one request at a time); ok is false for anything else.
func ParseUDPGreeting(g [len(Hello)]byte) (port uint16, rate float64, ok bool) {
	if [12]byte(g[:12]) != udpGreetingPrefix {
		return 0, 0, false
	}
	port = binary.BigEndian.Uint16(g[12:])
	rate = float64(binary.BigEndian.Uint32(g[14:]))
	for _, b := range g[18:] {
		if b != 0 {
			return 0, 0, false
		}
	}
	return port, rate, port != 0 && rate <= MaxRate
}

// udpSession opens the latency session of a UDP client whose socket is
// udp: a TCP connection to the server's port that sends the greeting and
// reads it back, and stays open while the client runs. It returns nil
// (no session, and no error) when the server takes none: no TCP there
// (a UDP echo server of another kind), or an answer other than the
// greeting (a blast server older than sessions, which echoes UDP to
// anyone), or none within timeout. (An older blast lat -s echoes the
// greeting, and UDP to anyone.)
func udpSession(ctx context.Context, udp net.Conn, addr string, opts engine.SockOpts, rate float64, timeout time.Duration) (net.Conn, error) {
	la, ok := udp.LocalAddr().(*net.UDPAddr)
	if !ok {
		return nil, nil
	}
	d := net.Dialer{Control: opts.Control(), Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, errGreetingInterrupted
		}
		return nil, nil
	}
	g := UDPGreeting(uint16(la.Port), rate)
	c.SetDeadline(time.Now().Add(timeout))
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := c.Write(g[:]); err != nil {
		c.Close()
		return nil, nil
	}
	var back [len(Hello)]byte
	for got := 0; got < len(back); {
		n, err := c.Read(back[got:])
		if n > 0 && !bytes.Equal(back[got:got+n], g[got:got+n]) {
			break // not an echo of the greeting
		}
		got += n
		if err != nil {
			break
		}
		if got == len(back) {
			if !stop() {
				break
			}
			c.SetDeadline(time.Time{})
			return c, nil
		}
	}
	c.Close()
	if ctx.Err() != nil {
		return nil, errGreetingInterrupted
	}
	return nil, nil
}
