package engine

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"
)

// SockOpts are the socket options a mode asks for when the engine creates
// a data socket. They are set before the socket connects or listens, so
// that window scaling sees the buffer sizes.
type SockOpts struct {
	// SndBuf and RcvBuf ask for SO_SNDBUF and SO_RCVBUF (0: leave the
	// kernel's default and autotuning alone).
	SndBuf, RcvBuf int
	// TOS is the IP TOS byte / IPv6 traffic class (negative: leave it).
	TOS int
	// Nagle leaves Nagle's algorithm on. Without it every TCP data
	// socket has TCP_NODELAY: a bulk sender writes whole buffers, and
	// Nagle holds back the last segment of each write until the one
	// before is acknowledged (on a veth link that halves one stream's
	// rate with 128 KiB writes). ttcp's -D and iperf3's -N ask for what
	// blast does anyway.
	Nagle bool
	// MSS sets TCP_MAXSEG (0: leave it).
	MSS int
	// Congestion sets TCP_CONGESTION ("": the system's default).
	Congestion string
	// ForceBuf asks for SndBuf and RcvBuf beyond the system's maximum
	// (SO_SNDBUFFORCE, SO_RCVBUFFORCE) where the process may, and for
	// what the maximum allows where it may not.
	ForceBuf bool
	// Device binds the socket to an interface (SO_BINDTODEVICE).
	Device string
	// Local binds a dialled socket to this address and port before it
	// connects (zero: any).
	Local netip.AddrPort
	// FlowLabel is the IPv6 flow label, 1 to 0xfffff, that a dialled
	// socket's packets carry (IPV6_FLOWLABEL_MGR, IPV6_FLOWINFO_SEND;
	// iperf3's -L); 0 sets none. Dial refuses it for an IPv4 peer.
	FlowLabel uint32
	// MPTCP makes a TCP socket Multipath TCP (IPPROTO_MPTCP; iperf3's
	// -m). Where the kernel has no MPTCP, or it is switched off, making
	// the socket fails with an error wrapping ErrNotSupported.
	MPTCP bool
	// MaxPacingRate caps the socket's rate in the kernel, in bytes per
	// second (SO_MAX_PACING_RATE: the fq qdisc, or TCP's internal pacing;
	// iperf3's --fq-rate). 0 leaves it.
	MaxPacingRate int64
	// DontFragment sets the don't-fragment bit and refuses datagrams
	// larger than the path MTU (IP_PMTUDISC_DO; iperf3's
	// --dont-fragment).
	DontFragment bool
	// Debug sets SO_DEBUG (ttcp's -d), which Linux grants only with
	// CAP_NET_ADMIN. A listener's accepted sockets inherit it.
	Debug bool
}

// NoTOS is the TOS value that leaves the socket's TOS alone.
const NoTOS = -1

// MaxFlowLabel is the largest IPv6 flow label (SockOpts.FlowLabel): 20 bits.
const MaxFlowLabel = 0xfffff

// Socket is a data socket the engine made and owns: a blocking file
// descriptor that no runtime poller watches. One goroutine (the flow's
// thread, while Run runs) does I/O on it; Shutdown and Control may be
// called from anywhere; the mode that got it closes it once.
type Socket struct {
	fd     int
	proto  Protocol
	local  netip.AddrPort
	remote netip.AddrPort

	mu     sync.Mutex // guards fd against Close while Shutdown or Control use it
	closed bool
}

// FD is the descriptor, for backends on the flow's thread.
func (s *Socket) FD() int { return s.fd }

// Protocol is TCP or UDP.
func (s *Socket) Protocol() Protocol { return s.proto }

// LocalAddr is the address the socket is bound to (v4-mapped addresses
// unmapped).
func (s *Socket) LocalAddr() netip.AddrPort { return s.local }

// RemoteAddr is the peer of a connected socket (zero when unconnected).
func (s *Socket) RemoteAddr() netip.AddrPort { return s.remote }

// Control runs fn with the descriptor, which stays open meanwhile; after
// Close it returns ErrClosed without calling fn.
func (s *Socket) Control(fn func(fd int) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return fn(s.fd)
}

// ErrClosed is returned by calls on a Socket after Close.
var ErrClosed = errors.New("engine: socket closed")

// ErrTimeout is wrapped by the error of a call that ran past the socket's
// timeout (SetTimeout).
var ErrTimeout = errors.New("timed out")

func (s *Socket) String() string {
	if s.remote.IsValid() {
		return fmt.Sprintf("%s %s->%s", s.proto, s.local, s.remote)
	}
	return fmt.Sprintf("%s %s", s.proto, s.local)
}

// sendSlice bounds how long one blocked write lasts before the Sender
// looks at the time limit again.
const sendSlice = 50 * time.Millisecond
