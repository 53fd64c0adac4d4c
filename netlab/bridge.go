package netlab

import "fmt"

// MaxBridgeHosts is the most hosts a Bridged lab has.
const MaxBridgeHosts = 32

// bridgeSubnet is the subnet of a Bridged lab's segment: 198.18.10.0/24
// and 2001:2:0:a::/64, apart from the subnets of the other topologies
// (0, 1 and 2) so that addresses in tests and logs say which lab they
// belong to.
const bridgeSubnet = 10

// BridgeOptions shape a Bridged lab.
type BridgeOptions struct {
	// RateMbit limits every host's link at the start, as Bridged.Shape
	// does (0: no limit).
	RateMbit int
	// Queues is the number of TX and RX queues per veth (0 or 1: one).
	Queues int
}

// Bridged is a lab of several hosts on one Ethernet segment: each host a
// network namespace with one veth into a bridge, which lives in a
// namespace of its own (the switch). The bridge runs no spanning tree and
// forwards at once (forwarding delay 0), without multicast snooping, so
// every host reaches every other as soon as NewBridged returns.
//
// Host i (from 0) has the addresses 198.18.10.<i+1>/24 and
// 2001:2:0:a::<i+1>/64. Names are unique per process and lab, as in the
// other labs. Its methods are safe for one goroutine at a time, except
// Host.Do and Host.Command, which any goroutine may call.
type Bridged struct {
	Options BridgeOptions
	// Hosts are the hosts on the segment, in address order.
	Hosts []*Host
	// Switch is the bridge's namespace; its Iface is the bridge, and it
	// has no addresses (nor IPv6: it sends nothing of its own).
	Switch *Host

	lab   *Lab   // owns the namespaces and the commands started in them
	ports []port // the switch's port toward each host
	rates []int  // the rate limit of each host's link (0: none)
}

// port is one of the bridge's ports.
type port struct {
	name  string
	index int
}

// check rejects a lab of n hosts that NewBridged cannot build.
func (o BridgeOptions) check(n int) error {
	switch {
	case n < 2 || n > MaxBridgeHosts:
		return fmt.Errorf("netlab: a bridged lab of %d hosts: give 2 to %d", n, MaxBridgeHosts)
	case o.RateMbit < 0:
		return fmt.Errorf("netlab: rate %d Mbit/s: give 0 (no limit) or more", o.RateMbit)
	case o.Queues < 0:
		return fmt.Errorf("netlab: %d queues: give 0 or more", o.Queues)
	}
	return nil
}

// String describes the lab in one line.
func (b *Bridged) String() string {
	s := fmt.Sprintf("bridged lab: %d hosts", len(b.Hosts))
	if len(b.Hosts) > 0 {
		s += fmt.Sprintf(", %s to %s", b.Hosts[0].Addr4, b.Hosts[len(b.Hosts)-1].Addr4)
	}
	if b.Switch != nil {
		s += fmt.Sprintf(", switch %s", b.Switch.Name)
	}
	for i, r := range b.rates {
		if r > 0 {
			s += fmt.Sprintf(", host %d limited to %d Mbit/s", i, r)
		}
	}
	return s
}
