package latency

import (
	"errors"
	"fmt"
	"time"

	"github.com/blastnet/blast/engine"
)

// DefaultPort is where `blast lat -s` listens, TCP and UDP: one above
// iperf3's 5201, so a latency server and an iperf3-protocol server can run
// side by side.
const DefaultPort = 5202

// Limits on the request size.
const (
	// UDPHeader is the size of the header every UDP request starts with:
	// 4 bytes of magic, 1 byte of kind, 3 of padding, an 8-byte sequence
	// number.
	UDPHeader = 16
	// MaxUDPSize is the largest UDP payload over IPv4.
	MaxUDPSize = 65507
	// MaxTCPSize bounds a TCP request (and its reply).
	MaxTCPSize = 64 << 20
)

// MaxSeconds bounds the times of a run (-t, -i, --timeout): 1e6 s, some
// eleven days.
const MaxSeconds = 1e6 * time.Second

// Config is one latency run: a client (Host set) or a server (Server).
type Config struct {
	Server bool   // serve (blast lat -s) instead of measuring
	Once   bool   // server: exit after the first client is done (-1)
	Bind   string // server: listen on this address only (-B); "" for all
	Host   string // client: the server to measure against
	Port   int

	UDP      bool          // client: UDP instead of TCP
	Size     int           // client: request (and reply) payload in bytes
	Duration time.Duration // client: measure for this long (when Count is 0)
	Count    int64         // client: measure this many round trips
	Warmup   int           // client: round trips before measuring, not recorded
	Interval time.Duration // client: report every Interval (0: no interval reports)
	// Timeout is how long the client waits for a reply: a UDP request
	// without a reply by then is lost; a TCP one fails the run.
	Timeout time.Duration

	// Sock are the socket options; TCP_NODELAY is always set.
	Sock engine.SockOpts

	// Rate sends requests on a fixed schedule, Rate a second (0: each
	// request as soon as the last reply came). A request whose slot has
	// passed goes at once, and its time counts from its slot, not from
	// when it left: a slow reply delays the requests behind it, and their
	// wait is part of what they measure (the coordinated-omission
	// correction, as wrk2 and HdrHistogram make it).
	Rate float64
	// Load runs a bulk TCP stream to the same server beside the
	// ping-pong (an echo: both directions loaded), to measure latency
	// under load (bufferbloat).
	Load bool
}

// MaxRate bounds --rate: a request every microsecond.
const MaxRate = 1e6

// Defaults returns a client configuration with blast's defaults.
func Defaults() Config {
	return Config{
		Port:     DefaultPort,
		Size:     64,
		Duration: 10 * time.Second,
		Warmup:   10,
		Timeout:  time.Second,
		Sock:     engine.SockOpts{TOS: engine.NoTOS},
	}
}

// UsageError is a configuration that cannot run; the command line is wrong.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &UsageError{msg: fmt.Sprintf(format, args...)}
}

// IsUsage tells whether err is a usage error (exit status 2).
func IsUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}

// Validate checks the configuration before any socket is opened.
func (c Config) Validate() error {
	if c.Port < 1 || c.Port > 65535 {
		return usagef("-p %d: a port is a number from 1 to 65535", c.Port)
	}
	if c.Server {
		if c.Host != "" {
			return usagef("-s takes no host: the server listens (use -B ADDR to pick the address)")
		}
		return nil
	}
	if c.Host == "" {
		return usagef("say HOST to measure round trips to, or -s to serve: blast lat -s  /  blast lat HOST")
	}
	if c.Once || c.Bind != "" {
		return usagef("-1 and -B are for the server (blast lat -s)")
	}
	switch {
	case c.Size < 1:
		return usagef("-l %d: a request is at least 1 byte", c.Size)
	case c.UDP && c.Size > MaxUDPSize:
		return usagef("-l %d with -u: a UDP datagram carries at most %d bytes; use a smaller -l", c.Size, MaxUDPSize)
	case c.UDP && c.Size < UDPHeader:
		return usagef("-l %d with -u: a UDP request carries a %d-byte header (sequence number); use -l %d or more", c.Size, UDPHeader, UDPHeader)
	case c.Size > MaxTCPSize:
		return usagef("-l %d: a request is at most %d bytes", c.Size, MaxTCPSize)
	case c.Rate < 0 || c.Rate > MaxRate || c.Rate != c.Rate:
		return usagef("--rate %g: give requests per second, more than 0 and at most %g", c.Rate, float64(MaxRate))
	case c.Count < 0:
		return usagef("-n %d: give a positive number of round trips", c.Count)
	case c.Count == 0 && c.Duration <= 0:
		return usagef("-t %s: give a positive number of seconds, at most %d", c.Duration, MaxSeconds/time.Second)
	case c.Duration < 0 || c.Duration > MaxSeconds:
		return usagef("-t %s: give a positive number of seconds, at most %d", c.Duration, MaxSeconds/time.Second)
	case c.Warmup < 0:
		return usagef("--warmup %d: give 0 or more round trips", c.Warmup)
	case c.Interval < 0 || c.Interval > MaxSeconds:
		return usagef("-i %s: give 0 (no interval reports) or 0.01 to %d seconds", c.Interval, MaxSeconds/time.Second)
	case c.Interval > 0 && c.Interval < 10*time.Millisecond:
		return usagef("-i %s: intervals are at least 0.01 s", c.Interval)
	case c.Timeout <= 0 || c.Timeout > MaxSeconds:
		return usagef("--timeout %s: give a positive number of seconds, at most %d", c.Timeout, MaxSeconds/time.Second)
	case c.Sock.TOS < engine.NoTOS || c.Sock.TOS > 255:
		return usagef("-S %d: the TOS byte is 0 to 255", c.Sock.TOS)
	}
	return nil
}
