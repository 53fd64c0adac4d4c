package engine

import (
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// hostQueued is what the kernel holds of this socket's sends in the host
// (SIOCOUTQ: for UDP, the datagrams in the qdisc and the device's queue
// not yet sent).
func hostQueued(fd int) (int, error) { return unix.IoctlGetInt(fd, unix.SIOCOUTQ) }

// egressBacklog is how many bytes the root qdiscs of the interface that
// the connected socket fd sends by hold now, asked in the socket's own
// network namespace (SIOCGSKNS), as "ip route get PEER" then "tc -s
// qdisc show dev IF" would: 0 when the interface has no queue (noqueue,
// a veth's default) or its queue is empty.
//
// It tells the two reasons for a send refused with ENOBUFS apart when
// none of the socket's own datagrams are queued: a queue full of other
// flows' datagrams (a backlog: waiting helps) or a device that drops the
// datagram itself (none: a veth whose peer's MTU is smaller refuses
// every datagram above it, and waiting cannot help).
func egressBacklog(fd int) (int, error) {
	sa, err := unix.Getpeername(fd)
	if err != nil {
		return 0, fmt.Errorf("getpeername: %w", err)
	}
	var peer net.IP
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		peer = net.IP(a.Addr[:])
	case *unix.SockaddrInet6:
		peer = net.IP(a.Addr[:])
	default:
		return 0, fmt.Errorf("getpeername: a %T, not an IP address", sa)
	}
	ns, err := unix.IoctlRetInt(fd, unix.SIOCGSKNS)
	if err != nil {
		return 0, fmt.Errorf("the socket's network namespace (SIOCGSKNS): %w", err)
	}
	defer unix.Close(ns)
	h, err := netlink.NewHandleAt(netns.NsHandle(ns), unix.NETLINK_ROUTE)
	if err != nil {
		return 0, fmt.Errorf("netlink in the socket's network namespace: %w", err)
	}
	defer h.Close()
	routes, err := h.RouteGet(peer)
	if err != nil {
		return 0, fmt.Errorf("route to %v: %w", peer, err)
	}
	if len(routes) == 0 {
		return 0, fmt.Errorf("route to %v: none", peer)
	}
	link, err := h.LinkByIndex(routes[0].LinkIndex)
	if err != nil {
		return 0, fmt.Errorf("route to %v: interface %d: %w", peer, routes[0].LinkIndex, err)
	}
	qs, err := h.QdiscList(link)
	if err != nil {
		return 0, fmt.Errorf("qdiscs of %s: %w", link.Attrs().Name, err)
	}
	backlog := 0
	for _, q := range qs {
		a := q.Attrs()
		if a.Parent == netlink.HANDLE_ROOT && a.Statistics != nil && a.Statistics.Queue != nil {
			backlog += int(a.Statistics.Queue.Backlog)
		}
	}
	return backlog, nil
}
