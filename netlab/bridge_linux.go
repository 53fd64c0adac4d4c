package netlab

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

const (
	// brStateForwarding is BR_STATE_FORWARDING, the state of a bridge
	// port that forwards frames.
	brStateForwarding = 3
	// readyTimeout bounds how long NewBridged waits for the kernel to
	// bring every link of the lab up.
	readyTimeout = 10 * time.Second
)

// NewBridged builds a lab of n hosts (2 to MaxBridgeHosts) on one bridge.
// On error nothing of it is left behind.
func NewBridged(n int, opt BridgeOptions) (b *Bridged, err error) {
	if err := opt.check(n); err != nil {
		return nil, err
	}
	if err := needRoot(); err != nil {
		return nil, err
	}
	lab := &Lab{Options: Options{Queues: opt.Queues}, seq: nextLab()}
	b = &Bridged{Options: opt, lab: lab, rates: make([]int, n)}
	defer func() {
		if err != nil {
			b.Close()
			b = nil
		}
	}()
	if b.Switch, err = lab.newHost("sw"); err != nil {
		return b, err
	}
	sw := b.Switch
	// The switch's kernel stays off the segment: no addresses, and no
	// IPv6 on the links made from here on, so it sends no router
	// solicitations or MLD reports of its own.
	if err := sw.Do(func() error {
		return os.WriteFile("/proc/sys/net/ipv6/conf/default/disable_ipv6", []byte("1\n"), 0o644)
	}); err != nil {
		return b, fmt.Errorf("netlab: turn IPv6 off in %s: %w", sw.Name, err)
	}
	sw.Iface = lab.vname("br")
	if err := sw.Do(func() error { return addBridge(sw.Iface) }); err != nil {
		return b, fmt.Errorf("netlab: add bridge %s in %s: %w", sw.Iface, sw.Name, err)
	}
	if err := sw.linkUp(sw.Iface); err != nil {
		return b, err
	}
	hdl, br, err := sw.handle(sw.Iface)
	if err != nil {
		return b, err
	}
	defer hdl.Close()
	for i := range n {
		h, err := lab.newHost("h" + strconv.Itoa(i))
		if err != nil {
			return b, err
		}
		b.Hosts = append(b.Hosts, h)
		id := strconv.FormatInt(int64(i), 32) // one digit: n <= 32
		iface, pname := lab.vname("h"+id), lab.vname("p"+id)
		if err := lab.veth(h, iface, sw, pname); err != nil {
			return b, err
		}
		p, err := hdl.LinkByName(pname)
		if err == nil {
			err = hdl.LinkSetMaster(p, br)
		}
		if err == nil {
			err = hdl.LinkSetUp(p)
		}
		if err != nil {
			return b, fmt.Errorf("netlab: port %s of %s in %s: %w", pname, sw.Iface, sw.Name, err)
		}
		b.ports = append(b.ports, port{pname, p.Attrs().Index})
		a4, a6 := addr4(bridgeSubnet, byte(i+1)), addr6(bridgeSubnet, byte(i+1))
		if err := h.configure(iface, a4, a6, 0); err != nil {
			return b, err
		}
		h.Iface, h.Addr4, h.Addr6 = iface, a4, a6
	}
	if opt.RateMbit > 0 {
		for i := range n {
			if err := b.Shape(i, opt.RateMbit); err != nil {
				return b, err
			}
		}
	}
	return b, b.waitReady()
}

// addBridge adds a bridge in the calling thread's namespace that forwards
// on a port as soon as the port is up: no spanning tree, no forwarding
// delay. It floods multicast to every port (no snooping), so neighbour
// discovery never depends on MLD reports it may have missed.
func addBridge(name string) error {
	req := nl.NewNetlinkRequest(unix.RTM_NEWLINK, unix.NLM_F_CREATE|unix.NLM_F_EXCL|unix.NLM_F_ACK)
	req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
	req.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(name)))
	info := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
	info.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated("bridge"))
	data := info.AddRtAttr(nl.IFLA_INFO_DATA, nil)
	data.AddRtAttr(nl.IFLA_BR_FORWARD_DELAY, nl.Uint32Attr(0)) // before STP: the kernel refuses 0 with STP on
	data.AddRtAttr(nl.IFLA_BR_STP_STATE, nl.Uint32Attr(0))
	data.AddRtAttr(nl.IFLA_BR_MCAST_SNOOPING, []byte{0})
	req.AddData(info)
	_, err := req.Execute(unix.NETLINK_ROUTE, 0)
	return err
}

// portStates returns the state (BR_STATE_*) of every bridge port in the
// calling thread's namespace, by interface index.
func portStates() (map[int]uint8, error) {
	req := nl.NewNetlinkRequest(unix.RTM_GETLINK, unix.NLM_F_DUMP)
	req.AddData(nl.NewIfInfomsg(unix.AF_BRIDGE))
	msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWLINK)
	if err != nil {
		return nil, err
	}
	states := map[int]uint8{}
	for _, m := range msgs {
		info := nl.DeserializeIfInfomsg(m)
		attrs, err := nl.ParseRouteAttr(m[info.Len():])
		if err != nil {
			return nil, err
		}
		for _, a := range attrs {
			if a.Attr.Type&^unix.NLA_F_NESTED != unix.IFLA_PROTINFO {
				continue
			}
			brport, err := nl.ParseRouteAttr(a.Value)
			if err != nil {
				return nil, err
			}
			for _, p := range brport {
				if p.Attr.Type == nl.IFLA_BRPORT_STATE && len(p.Value) == 1 {
					states[int(info.Index)] = p.Value[0]
				}
			}
		}
	}
	return states, nil
}

// waitReady waits until every port of the bridge forwards and every
// host's link is up with its IPv6 address usable (the kernel finishes
// both a moment after the links come up), so that hosts reach each other
// at once.
func (b *Bridged) waitReady() error {
	hdls := make([]*netlink.Handle, len(b.Hosts))
	defer func() {
		for _, h := range hdls {
			if h != nil {
				h.Close()
			}
		}
	}()
	for i, h := range b.Hosts {
		var err error
		if hdls[i], err = netlink.NewHandleAt(h.ns); err != nil {
			return fmt.Errorf("netlab: netlink in %s: %w", h.Name, err)
		}
	}
	deadline := time.Now().Add(readyTimeout)
	for {
		pending, err := b.notReady(hdls)
		if err != nil || pending == "" {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("netlab: %s after %v", pending, readyTimeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// notReady says what of the lab is not ready yet, or "" once all is.
func (b *Bridged) notReady(hdls []*netlink.Handle) (string, error) {
	var states map[int]uint8
	if err := b.Switch.Do(func() (err error) {
		states, err = portStates()
		return err
	}); err != nil {
		return "", fmt.Errorf("netlab: bridge ports in %s: %w", b.Switch.Name, err)
	}
	for _, p := range b.ports {
		if s := states[p.index]; s != brStateForwarding {
			return fmt.Sprintf("port %s of %s is in state %d, not forwarding", p.name, b.Switch.Iface, s), nil
		}
	}
	for i, h := range b.Hosts {
		link, err := hdls[i].LinkByName(h.Iface)
		if err != nil {
			return "", fmt.Errorf("netlab: find %s in %s: %w", h.Iface, h.Name, err)
		}
		if st := link.Attrs().OperState; st != netlink.OperUp {
			return fmt.Sprintf("%s in %s is %v, not up", h.Iface, h.Name, st), nil
		}
		addrs, err := hdls[i].AddrList(link, netlink.FAMILY_V6)
		if err != nil {
			return "", fmt.Errorf("netlab: addresses of %s in %s: %w", h.Iface, h.Name, err)
		}
		if !usable(addrs, h.Addr6) {
			return fmt.Sprintf("%s on %s in %s is not usable yet", h.Addr6, h.Iface, h.Name), nil
		}
	}
	return "", nil
}

// usable reports whether addrs hold a, past duplicate address detection.
func usable(addrs []netlink.Addr, a netip.Addr) bool {
	for _, x := range addrs {
		if ip, ok := netip.AddrFromSlice(x.IP); ok && ip == a {
			return x.Flags&(unix.IFA_F_TENTATIVE|unix.IFA_F_DADFAILED) == 0
		}
	}
	return false
}

// Shape limits host i's link to rateMbit in both directions with a token
// bucket (as Options.RateMbit does in the other labs): on the host's
// egress and on the switch port's egress toward it, so that every
// transfer to or from host i is held to the rate. 0 removes the limit.
func (b *Bridged) Shape(i, rateMbit int) error {
	if i < 0 || i >= len(b.Hosts) {
		return fmt.Errorf("netlab: shape host %d of a lab of %d", i, len(b.Hosts))
	}
	if rateMbit < 0 {
		return fmt.Errorf("netlab: rate %d Mbit/s: give 0 (no limit) or more", rateMbit)
	}
	h := b.Hosts[i]
	if err := h.limit(h.Iface, rateMbit); err != nil {
		return err
	}
	if err := b.Switch.limit(b.ports[i].name, rateMbit); err != nil {
		return err
	}
	b.rates[i] = rateMbit
	return nil
}

// limit puts a token bucket of rateMbit on iface's egress in h, in place
// of the one there may be, or removes it (0).
func (h *Host) limit(iface string, rateMbit int) error {
	hdl, link, err := h.handle(iface)
	if err != nil {
		return err
	}
	defer hdl.Close()
	if rateMbit > 0 {
		if err := hdl.QdiscReplace(tbf(link.Attrs().Index, rateMbit)); err != nil {
			return fmt.Errorf("netlab: rate limit %d Mbit/s on %s in %s: %w", rateMbit, iface, h.Name, err)
		}
		return nil
	}
	qs, err := hdl.QdiscList(link)
	if err != nil {
		return fmt.Errorf("netlab: qdiscs of %s in %s: %w", iface, h.Name, err)
	}
	for _, q := range qs {
		if q.Attrs().Parent == netlink.HANDLE_ROOT && q.Type() == "tbf" {
			if err := hdl.QdiscDel(q); err != nil {
				return fmt.Errorf("netlab: remove the rate limit on %s in %s: %w", iface, h.Name, err)
			}
		}
	}
	return nil
}

// WriteHosts gives every host of the lab a hosts file of its own: the
// localhost entries, then lines (in /etc/hosts format), written to
// /etc/netns/<namespace>/hosts, which `ip netns exec` mounts over
// /etc/hosts for the command it runs. Host.Command runs through it, so
// its commands resolve the names in lines; Host.Do does not (it moves a
// thread of this process, whose /etc/hosts stays the machine's). Close
// removes the files. A later WriteHosts replaces them.
func (b *Bridged) WriteHosts(lines string) error {
	data := localhosts + lines
	if lines != "" && lines[len(lines)-1] != '\n' {
		data += "\n"
	}
	var errs []error
	for _, h := range b.Hosts {
		errs = append(errs, writeEtc(h.Name, "hosts", []byte(data)))
	}
	return errors.Join(errs...)
}

// Close kills the lab's commands that are still running and removes its
// namespaces (and with them the bridge, every veth and qdisc) and the
// hosts files of WriteHosts.
func (b *Bridged) Close() error {
	if b == nil {
		return nil
	}
	return b.lab.Close()
}
