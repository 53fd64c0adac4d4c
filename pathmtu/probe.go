package pathmtu

import (
	"errors"
	"net"
	"strconv"
	"time"
)

// Config is one measurement against a blast server.
type Config struct {
	// Host and Port are the blast server's (its test port).
	Host string
	Port int
	// Family is "", "4" or "6".
	Family string
	// Timeout bounds the whole measurement (0: DefaultTimeout).
	Timeout time.Duration
}

// ErrNoServer: the port answered the greeting with something else, or
// not within greetingTimeout: not a blast server that measures the path
// MTU (iperf3, an older blast server).
var ErrNoServer = errors.New("the server does not answer the path-MTU probe (iperf3, or a blast server older than this one)")

func (cfg Config) network() string {
	switch cfg.Family {
	case "4":
		return "tcp4"
	case "6":
		return "tcp6"
	}
	return "tcp"
}

func (cfg Config) addr() string { return net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)) }

// ifaceMTU is the MTU and name of the interface that holds ip (0, "":
// none does).
func ifaceMTU(ip net.IP) (int, string) {
	ifs, err := net.Interfaces()
	if err != nil {
		return 0, ""
	}
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return ifc.MTU, ifc.Name
			}
		}
	}
	return 0, ""
}

// frames reads the 4-byte frames a server sends, keeping a frame cut by
// a read deadline for the next call.
type frames struct {
	c   net.Conn
	buf []byte
}

func (f *frames) next(deadline time.Time) ([4]byte, error) {
	var b [512]byte
	for len(f.buf) < 4 {
		f.c.SetReadDeadline(deadline)
		n, err := f.c.Read(b[:])
		f.buf = append(f.buf, b[:n]...)
		if err != nil && len(f.buf) < 4 {
			return [4]byte{}, err
		}
	}
	fr := [4]byte(f.buf[:4])
	f.buf = f.buf[4:]
	return fr, nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
