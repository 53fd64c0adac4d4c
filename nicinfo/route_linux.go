//go:build linux

package nicinfo

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
)

// InterfaceFor asks the kernel (rtnetlink RTM_GETROUTE, as "ip route get")
// which interface carries traffic to addr, following gateways. It runs in the
// network namespace of the calling thread.
func InterfaceFor(addr netip.Addr) (*Route, error) {
	if !addr.IsValid() {
		return nil, fmt.Errorf("nicinfo: route lookup: invalid address")
	}
	routes, err := netlink.RouteGet(net.IP(addr.Unmap().AsSlice()))
	if err != nil {
		return nil, fmt.Errorf("nicinfo: route lookup to %s: %w", addr, err)
	}
	if len(routes) == 0 || routes[0].LinkIndex == 0 {
		return nil, fmt.Errorf("nicinfo: route lookup to %s: no route", addr)
	}
	r := routes[0]
	out := &Route{Dst: addr, Index: r.LinkIndex}
	if gw, ok := netip.AddrFromSlice(r.Gw); ok && r.Gw != nil {
		out.Gateway = gw.Unmap()
	}
	if src, ok := netip.AddrFromSlice(r.Src); ok && r.Src != nil {
		out.Src = src.Unmap()
	}
	link, err := netlink.LinkByIndex(r.LinkIndex)
	if err != nil {
		return nil, fmt.Errorf("nicinfo: route lookup to %s: interface %d: %w", addr, r.LinkIndex, err)
	}
	out.Iface = link.Attrs().Name
	return out, nil
}
