// Package netlab builds network labs: network namespaces joined by veth
// pairs, as a direct link, as a routed path through a router namespace, or
// through a userspace delay line that adds round-trip time, a bottleneck
// rate and random loss (the kernel may lack netem); optionally with
// several queues per veth and a token-bucket rate limit that emulates a
// 10, 100 or 1000 Mbit/s link. A Bridged lab puts 2 to 32 hosts on one
// Ethernet segment through a bridge, with a rate limit per host.
//
// It is product code, shipped in the binary: `blast compare` runs its lab
// mode in one, and so do `blast demo` and bench; tests build theirs
// through netlab/labtest, which skips a test that is not root and removes
// the lab when the test ends.
//
// Addresses come only from the benchmarking ranges 198.18.0.0/15 and
// 2001:2::/48. Names are unique per process and lab, so parallel tests do
// not collide. Close removes everything a lab made, and kills the commands
// it started and waits for them; a later New also removes labs whose
// process died without closing them. Namespaces are pinned in /run/netns,
// which New makes a shared mount point of its own as `ip netns add` does,
// so an `ip netns add` run beside a lab cannot bury the lab's pins under a
// new mount. Building a lab needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN).
package netlab

import (
	"fmt"
	"net/netip"
	"sync"
	"time"
)

// Topology is the shape of a lab.
type Topology int

const (
	// Direct joins host A and host B with one veth pair.
	Direct Topology = iota
	// Routed puts a router namespace with forwarding on between A and B:
	// A - R - B, each hop its own veth pair and subnet.
	Routed
	// Delayed puts a delay line between A and B: A - R - B, where R's
	// kernel neither forwards nor owns an address, and this process
	// relays every Ethernet frame between R's two veths after
	// Options.Delay/2, through an Options.RateMbit bottleneck and
	// Options.LossPct random loss. A and B share one subnet and one
	// Ethernet segment (ARP and neighbour discovery cross the line too),
	// with the addresses of a Direct lab. A's and B's veths send every
	// packet as its own frame (no TSO or GSO), so the line delays, queues
	// and drops packets as a real path does.
	Delayed
)

func (t Topology) String() string {
	switch t {
	case Routed:
		return "routed"
	case Delayed:
		return "delayed"
	}
	return "direct"
}

// Options shape the links of a lab.
type Options struct {
	// RateMbit limits each veth end's egress with a token bucket filter
	// (0: no limit, the veth runs at memory speed). In a Delayed lab the
	// delay line applies it instead, in each direction: a bottleneck that
	// sends Ethernet frames (header included) at RateMbit behind a
	// drop-tail queue of 50 ms.
	RateMbit int
	// Queues is the number of TX and RX queues per veth (0 or 1: one).
	Queues int

	// Delay is the round-trip time a Delayed lab's delay line adds: it
	// holds every frame Delay/2 in each direction, so a ping-pong between
	// A and B takes Delay plus the (tens of microseconds) the lab takes
	// without it. 0 to MaxDelay; Delayed labs only.
	Delay time.Duration
	// LossPct is the chance, in percent, that the delay line drops a
	// frame, drawn for each frame in each direction: a round trip of two
	// frames loses about twice as many. Delayed labs only.
	LossPct float64
	// LossMinBytes spares frames shorter than this many bytes (Ethernet
	// header included) from LossPct's draws: a path that loses data but
	// not handshakes, for a peer whose handshake cannot survive a loss
	// (iperf3's UDP client gives up on a stream whose connect reply was
	// lost). 0: any frame may be lost.
	LossMinBytes int
	// Seed seeds the loss draws (0 is a seed like any other).
	Seed uint64
}

// Host is one network namespace of a lab.
type Host struct {
	// Name is the namespace's name (see `ip netns list`).
	Name string
	// Iface is the host's lab interface (for A and B, the one facing the
	// other end; for the router, the one facing A).
	Iface string
	// Addr4 and Addr6 are the host's addresses on Iface.
	Addr4, Addr6 netip.Addr

	lab *Lab
	ns  nsHandle
}

// Lab is a built lab. Its methods are safe for one goroutine at a time,
// except Host.Do and Host.Command, which any goroutine may call.
type Lab struct {
	Topology Topology
	Options  Options
	// A sends, B receives in the classic experiment; Router is nil in a
	// Direct lab; in a Delayed lab it is the delay line's namespace, with
	// no addresses.
	A, B, Router *Host

	seq   int64 // numbers the lab's names within this process
	hosts []*Host
	mu    sync.Mutex // guards cmds
	cmds  []*Cmd
	stop  func() error  // stops the delay line (Delayed)
	line  [2]LineCounts // what the delay line did, A to B and B to A, once stopped
}

// LineCounts are what a Delayed lab's delay line did with frames, A to B
// and B to A, once Close has stopped it (zero before, and in other
// labs): what to look at when a test through the line fails.
func (l *Lab) LineCounts() (aToB, bToA LineCounts) { return l.line[0], l.line[1] }

// String describes the lab in one line.
func (l *Lab) String() string {
	s := fmt.Sprintf("%s lab: %s %s", l.Topology, l.A.Name, l.A.Addr4)
	if l.Router != nil {
		s += fmt.Sprintf(" -> router %s", l.Router.Name)
	}
	s += fmt.Sprintf(" -> %s %s", l.B.Name, l.B.Addr4)
	if l.Options.RateMbit > 0 {
		s += fmt.Sprintf(", limited to %d Mbit/s", l.Options.RateMbit)
	}
	if l.Topology == Delayed {
		s += fmt.Sprintf(", %v round trip added, %g%% loss each way", l.Options.Delay, l.Options.LossPct)
		if l.Options.LossMinBytes > 0 {
			s += fmt.Sprintf(" (of frames of %d bytes or more)", l.Options.LossMinBytes)
		}
	}
	return s
}
