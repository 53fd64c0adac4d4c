package latency

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
)

// The UDP request header: magic, kind, three bytes of padding, sequence.
var magic = [4]byte{'b', 'L', 'a', 't'}

const (
	kindRequest = 1
	kindBye     = 2 // the client is done (the server's -1 ends on it)
)

func putHeader(b []byte, kind byte, seq uint64) {
	copy(b, magic[:])
	b[4] = kind
	b[5], b[6], b[7] = 0, 0, 0
	binary.BigEndian.PutUint64(b[8:], seq)
}

// header reads a UDP request header; ok is false for anything else.
func header(b []byte) (kind byte, seq uint64, ok bool) {
	if len(b) < UDPHeader || [4]byte(b[:4]) != magic {
		return 0, 0, false
	}
	return b[4], binary.BigEndian.Uint64(b[8:]), true
}

// IsUDPRequest says whether b is a blast lat UDP request, which an echo
// server sends back (a goodbye is not one).
func IsUDPRequest(b []byte) bool {
	kind, _, ok := header(b)
	return ok && kind == kindRequest
}

// hostPort joins host and port for net.Dial and net.Listen.
func hostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

// explain maps the errnos users meet to a cause and a fix.
func explain(op, addr string, err error) error {
	var se *os.SyscallError
	errors.As(err, &se)
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("%s %s: connection refused: is blast lat -s running there (and on this port; -p)? %w", op, addr, err)
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Errorf("%s %s: address in use: another server has this port; stop it or pick another with -p: %w", op, addr, err)
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return fmt.Errorf("%s %s: no such local address here: give -B an address of this host: %w", op, addr, err)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return fmt.Errorf("%s %s: permission denied: ports below 1024 and some socket options need root: %w", op, addr, err)
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return fmt.Errorf("%s %s: no route to the host: check the address and the routes (ip route get): %w", op, addr, err)
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return fmt.Errorf("%s %s: the server closed the connection mid-run: is it a blast lat -s (an echo server)? %w", op, addr, err)
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return fmt.Errorf("%s %s: cannot resolve the host name: check the spelling or give an address: %w", op, addr, err)
	}
	return fmt.Errorf("%s %s: %w", op, addr, err)
}
