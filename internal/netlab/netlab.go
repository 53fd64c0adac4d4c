// Package netlab builds the network labs blast's tests, demo and
// benchmarks run in: network namespaces joined by veth pairs, as a direct
// link or as a routed path through a router namespace, optionally with
// several queues per veth and a token-bucket rate limit that emulates a
// 10, 100 or 1000 Mbit/s link.
//
// Addresses come only from the benchmarking ranges 198.18.0.0/15 and
// 2001:2::/48. Names are unique per process and lab, so parallel tests do
// not collide. Close removes everything a lab made, and kills the commands
// it started; a later New also removes labs whose process died without
// closing them. Building a lab needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN).
package netlab

import (
	"fmt"
	"net/netip"
	"os/exec"
	"sync"
)

// Topology is the shape of a lab.
type Topology int

const (
	// Direct joins host A and host B with one veth pair.
	Direct Topology = iota
	// Routed puts a router namespace with forwarding on between A and B:
	// A - R - B, each hop its own veth pair and subnet.
	Routed
)

func (t Topology) String() string {
	if t == Routed {
		return "routed"
	}
	return "direct"
}

// Options shape the links of a lab.
type Options struct {
	// RateMbit limits each veth end's egress with a token bucket filter
	// (0: no limit, the veth runs at memory speed).
	RateMbit int
	// Queues is the number of TX and RX queues per veth (0 or 1: one).
	Queues int
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
	// Direct lab.
	A, B, Router *Host

	hosts []*Host
	mu    sync.Mutex // guards cmds
	cmds  []*exec.Cmd
}

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
	return s
}
