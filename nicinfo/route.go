package nicinfo

import "net/netip"

// Route is the answer of a route lookup: the interface that carries the traffic
// to Dst, and the gateway it goes through (invalid when Dst is on-link).
type Route struct {
	Dst     netip.Addr `json:"dst"`
	Iface   string     `json:"iface"`
	Index   int        `json:"ifindex"`
	Gateway netip.Addr `json:"gateway,omitzero"`
	Src     netip.Addr `json:"src,omitzero"`
}
