// Package engine is the data-path contract of blast: the Spec of one test,
// the Flow a backend moves bytes on, the lock-free per-stream Counters an
// interval reporter samples while the test runs, and the registry of
// backends by name.
//
// A Backend moves bytes on an already connected endpoint; it never opens
// connections, prints or decides policy. Modes (ttcp, client/server) set up
// the endpoints and call Send or Recv, one goroutine per stream.
package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// ErrNotSupported is wrapped by every error that means "this feature is not
// available here" (a backend on this kernel, an option on this OS).
var ErrNotSupported = errors.New("not supported")

// Protocol is the transport of a flow.
type Protocol int

// The transports blast moves bytes over.
const (
	TCP Protocol = iota
	UDP
)

func (p Protocol) String() string {
	if p == UDP {
		return "udp"
	}
	return "tcp"
}

// Spec says what one stream does. The zero value of each optional field
// means "not set".
type Spec struct {
	Protocol Protocol
	// BufLen is the number of bytes per write, and the size of the read
	// buffer on the receiving side.
	BufLen int
	// Bytes ends a send after this many bytes (0: no byte limit).
	Bytes int64
	// Duration ends a send after this long (0: no time limit).
	Duration time.Duration
	// Rate paces the sender to this many bits per second (0: as fast as
	// possible).
	Rate float64
	// Touch makes the receiver read every byte it receives (ttcp -T).
	Touch bool
	// Source feeds the sender; nil means a generated pattern (sink/source
	// mode). A sender with a Source stops at its EOF.
	Source io.Reader
	// Sink takes every received byte in order; nil discards them.
	Sink io.Writer
	// BufAlign and BufOffset place the I/O buffer at BufOffset bytes past
	// a multiple of BufAlign (ttcp -A and -O); 0 leaves it where Go puts it.
	BufAlign  int
	BufOffset int
	// SentinelMax ends a UDP receive at the first datagram of at most this
	// many bytes, which is not counted (ttcp's end-of-data sentinel).
	SentinelMax int
}

// Validate reports the first problem with s, in words a user can act on.
func (s *Spec) Validate() error {
	switch {
	case s.BufLen <= 0:
		return fmt.Errorf("buffer length %d: must be at least 1", s.BufLen)
	case s.Protocol == UDP && s.BufLen > 65507:
		return fmt.Errorf("buffer length %d: a UDP datagram carries at most 65507 bytes", s.BufLen)
	case s.Bytes < 0:
		return fmt.Errorf("byte count %d: must not be negative", s.Bytes)
	case s.Duration < 0:
		return fmt.Errorf("duration %v: must not be negative", s.Duration)
	case s.BufAlign < 0 || s.BufOffset < 0:
		return fmt.Errorf("buffer alignment %d/%d: must not be negative", s.BufAlign, s.BufOffset)
	case s.Rate < 0:
		return fmt.Errorf("rate %g: must not be negative", s.Rate)
	}
	return nil
}

// Flow is one stream handed to a backend: a connected socket, the Spec and
// the counters the backend keeps up to date.
type Flow struct {
	// Conn is connected (TCP) or connected UDP; it implements
	// syscall.Conn so backends can reach the fd.
	Conn  net.Conn
	Spec  *Spec
	Stats *Counters
}

// Backend moves the bytes of one flow.
//
// Probe answers three ways: nil when the backend can run here, an error
// wrapping ErrNotSupported when it cannot (saying why and what to do), any
// other error when the probe itself failed.
//
// Send and Recv return when the Spec's end condition is met, the peer
// closes, or ctx is cancelled (then promptly, with ctx.Err()). They update
// f.Stats as they go and never close f.Conn.
type Backend interface {
	Name() string
	Probe() error
	Send(ctx context.Context, f *Flow) error
	Recv(ctx context.Context, f *Flow) error
}
