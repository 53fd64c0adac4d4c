package afxdp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// route finds the interface and next hop the kernel uses to reach dst.
func route(dst netip.Addr) (link netlink.Link, nextHop netip.Addr, err error) {
	rs, err := netlink.RouteGet(dst.AsSlice())
	if err != nil || len(rs) == 0 {
		return nil, netip.Addr{}, fmt.Errorf("afxdp: no route to %v: %w", dst, err)
	}
	r := rs[0]
	nextHop = dst
	if gw, ok := netip.AddrFromSlice(r.Gw); ok && r.Gw != nil && !gw.IsUnspecified() {
		nextHop = gw.Unmap()
	}
	link, err = netlink.LinkByIndex(r.LinkIndex)
	if err != nil {
		return nil, netip.Addr{}, fmt.Errorf("afxdp: interface of the route to %v: %w", dst, err)
	}
	return link, nextHop, nil
}

const usableNeigh = netlink.NUD_REACHABLE | netlink.NUD_STALE | netlink.NUD_DELAY | netlink.NUD_PROBE | netlink.NUD_PERMANENT | netlink.NUD_NOARP

// neighbour returns the MAC address of ip on link from the neighbour
// table, priming resolution (one datagram to the discard port from an
// ordinary socket) when there is no entry yet, and waiting for it up to a
// second or until ctx is done.
func neighbour(ctx context.Context, link netlink.Link, ip netip.Addr) (net.HardwareAddr, error) {
	family := netlink.FAMILY_V4
	if !ip.Is4() {
		family = netlink.FAMILY_V6
	}
	lookup := func() net.HardwareAddr {
		ns, _ := netlink.NeighList(link.Attrs().Index, family)
		for _, n := range ns {
			if a, ok := netip.AddrFromSlice(n.IP); ok && a.Unmap() == ip && n.State&usableNeigh != 0 && len(n.HardwareAddr) == 6 {
				return n.HardwareAddr
			}
		}
		return nil
	}
	if mac := lookup(); mac != nil {
		return mac, nil
	}
	prime(ip)
	for range 100 {
		if err := sleepCtx(ctx, 10*time.Millisecond); err != nil {
			return nil, err
		}
		if mac := lookup(); mac != nil {
			return mac, nil
		}
	}
	return nil, fmt.Errorf("afxdp: %v on %s does not answer neighbour resolution (give its MAC with --dst-mac): %w", ip, link.Attrs().Name, errors.New("no neighbour entry"))
}

// prime makes the kernel resolve ip: it sends one empty datagram to the
// discard port (9), which is not the test's port.
func prime(ip netip.Addr) {
	family := unix.AF_INET
	var sa unix.Sockaddr = &unix.SockaddrInet4{Port: 9, Addr: ip.As4()}
	if !ip.Is4() {
		family = unix.AF_INET6
		sa = &unix.SockaddrInet6{Port: 9, Addr: ip.As16()}
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return
	}
	unix.Sendto(fd, nil, unix.MSG_DONTWAIT, sa)
	unix.Close(fd)
}

// rxIface picks the interface a receiver bound to local listens on: the
// one given, else the socket's SO_BINDTODEVICE, else the one that holds the
// bind address, else the only non-loopback interface that is up.
func rxIface(given string, fd int, local netip.Addr) (netlink.Link, error) {
	if given == "" {
		given, _ = unix.GetsockoptString(fd, unix.SOL_SOCKET, unix.SO_BINDTODEVICE)
	}
	if given != "" {
		l, err := netlink.LinkByName(given)
		if err != nil {
			return nil, fmt.Errorf("afxdp: no such interface %q: %w", given, err)
		}
		return l, nil
	}
	links, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("afxdp: list interfaces: %w", err)
	}
	if local.IsValid() && !local.IsUnspecified() {
		for _, l := range links {
			as, _ := netlink.AddrList(l, netlink.FAMILY_ALL)
			for _, a := range as {
				if ip, ok := netip.AddrFromSlice(a.IP); ok && ip.Unmap() == local {
					return l, nil
				}
			}
		}
	}
	var up []netlink.Link
	for _, l := range links {
		if l.Attrs().Flags&net.FlagLoopback == 0 && l.Attrs().Flags&net.FlagUp != 0 {
			up = append(up, l)
		}
	}
	if len(up) == 1 {
		return up[0], nil
	}
	return nil, fmt.Errorf("afxdp: %d interfaces are up: say which one receives with -I IFACE", len(up))
}
