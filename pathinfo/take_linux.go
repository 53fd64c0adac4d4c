package pathinfo

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Take snapshots iface in the network namespace of the calling thread.
func Take(iface string) (*Snapshot, error) {
	// Everything a snapshot reads follows the thread's namespace: netlink
	// sockets when they are opened, /proc/thread-self/net and /proc/sys/net
	// when a file is. One thread must do it all.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return take(iface)
}

// Start snapshots iface in the network namespace of the calling thread and
// remembers the namespace for Stop.
func Start(iface string) (*Watch, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ns, err := netns.Get()
	if err != nil {
		return nil, fmt.Errorf("pathinfo: open the current network namespace: %w", err)
	}
	s, err := take(iface)
	if err != nil {
		ns.Close()
		return nil, err
	}
	return &Watch{iface: iface, before: s, ns: ns}, nil
}

// takeIn snapshots iface in ns. When the calling thread is elsewhere, a
// thread of its own enters ns, and the runtime discards that thread after
// (it stays locked), so no goroutine ever runs in a namespace it did not
// choose.
func takeIn(ns netns.NsHandle, iface string) (*Snapshot, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cur, err := netns.Get()
	if err != nil {
		return nil, fmt.Errorf("pathinfo: open the current network namespace: %w", err)
	}
	defer cur.Close()
	if cur.Equal(ns) {
		return take(iface)
	}
	type result struct {
		s   *Snapshot
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := netns.Set(ns); err != nil {
			if errors.Is(err, unix.EPERM) {
				err = fmt.Errorf("%w (needs CAP_SYS_ADMIN: run as root, or stop the watch in the namespace it started in)", err)
			}
			done <- result{nil, fmt.Errorf("pathinfo: enter the network namespace of the watch of %s: %w", iface, err)}
			return
		}
		s, err := take(iface)
		done <- result{s, err}
	}()
	r := <-done
	return r.s, r.err
}

// take reads the snapshot; the caller has locked the thread.
func take(iface string) (*Snapshot, error) {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("pathinfo: open a netlink socket: %w", err)
	}
	defer h.Close()
	link, err := h.LinkByName(iface)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil, fmt.Errorf("pathinfo: %s: %w in this network namespace (see ip link)", iface, ErrNoInterface)
		}
		return nil, fmt.Errorf("pathinfo: look up %s: %w", iface, err)
	}
	s := &Snapshot{Iface: iface, Time: time.Now(), MTU: link.Attrs().MTU}
	tree, err := readTree(h, link)
	if err != nil {
		return nil, fmt.Errorf("pathinfo: %s: %w", iface, err)
	}
	s.Qdiscs = tree.qdiscs
	if s.Policers, err = readPolicers(h, link, tree); err != nil {
		return nil, fmt.Errorf("pathinfo: %s: %w", iface, err)
	}
	if s.SNMP, err = readCounters(os.DirFS("/proc/thread-self")); err != nil {
		return nil, err
	}
	s.Sysctls = readSysctls(os.DirFS("/proc"))
	s.CPUs = readCPUs(os.DirFS("/proc"))
	s.Cgroup = cgroupCPU()
	return s, nil
}

// tree is the qdiscs and classes of a link, with the raw handles filters
// are listed by.
type tree struct {
	qdiscs []Qdisc
	// parents are the handles of the egress tree's qdiscs and classes.
	parents []uint32
	// ingress is the kind of the ingress-side qdisc: "", "ingress" or
	// "clsact".
	ingress string
}

// rawQdiscKinds are the qdisc kinds whose options the library does not
// decode and pathinfo reads itself (tcopts.go); of the classes, hfsc.
var rawQdiscKinds = map[string]bool{"cake": true, "bfifo": true, "pfifo": true, "pfifo_head_drop": true}

// readTree lists the qdiscs and then the classes of link.
func readTree(h *netlink.Handle, link netlink.Link) (*tree, error) {
	qs, err := redump(func() ([]netlink.Qdisc, error) { return h.QdiscList(link) })
	if err != nil {
		return nil, fmt.Errorf("list qdiscs: %w", err)
	}
	cs, err := redump(func() ([]netlink.Class, error) { return h.ClassList(link, 0) })
	if err != nil {
		return nil, fmt.Errorf("list classes: %w", err)
	}
	t := &tree{}
	var qopts, copts map[tcKey][]byte
	for _, q := range qs {
		if rawQdiscKinds[q.Type()] && qopts == nil {
			if qopts, err = dumpOptions(unix.RTM_GETQDISC, unix.RTM_NEWQDISC, link.Attrs().Index); err != nil {
				return nil, fmt.Errorf("list qdisc options: %w", err)
			}
		}
	}
	for _, c := range cs {
		if c.Type() == "hfsc" && copts == nil {
			if copts, err = dumpOptions(unix.RTM_GETTCLASS, unix.RTM_NEWTCLASS, link.Attrs().Index); err != nil {
				return nil, fmt.Errorf("list class options: %w", err)
			}
		}
	}
	seen := map[uint32]bool{}
	addParent := func(h uint32) {
		if h>>16 != 0 && !seen[h] {
			seen[h] = true
			t.parents = append(t.parents, h)
		}
	}
	for _, q := range qs {
		a := q.Attrs()
		out, err := fromQdisc(q, qopts[tcKey{a.Handle, a.Parent}])
		if err != nil {
			return nil, err
		}
		t.qdiscs = append(t.qdiscs, out)
		if a.Parent == handleIngress {
			t.ingress = q.Type()
		} else {
			addParent(a.Handle)
		}
	}
	for _, c := range cs {
		a := c.Attrs()
		out, err := fromClass(c, copts[tcKey{a.Handle, a.Parent}])
		if err != nil {
			return nil, err
		}
		t.qdiscs = append(t.qdiscs, out)
		addParent(a.Handle)
	}
	return t, nil
}

// redump repeats a netlink dump the kernel interrupted because the tc
// configuration changed under it, a few times.
func redump[T any](dump func() ([]T, error)) ([]T, error) {
	for range 3 {
		v, err := dump()
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return v, err
		}
	}
	return nil, errors.New("the tc configuration kept changing while it was read; try again")
}

// fromQdisc converts what the netlink library decoded of a qdisc; opts are
// the raw options of the kinds it leaves undecoded.
func fromQdisc(q netlink.Qdisc, opts []byte) (Qdisc, error) {
	a := q.Attrs()
	out := Qdisc{Kind: q.Type(), Handle: qdiscHandle(a.Handle), Parent: classID(a.Parent)}
	if a.Statistics != nil {
		stats(&out, (*netlink.ClassStatistics)(a.Statistics))
	}
	switch q := q.(type) {
	case *netlink.Tbf:
		out.RateBps = bitRate(q.Rate)
		out.LimitBytes = uint64(q.Limit)
		out.BurstBytes = bucketBytes(q.Rate, q.Buffer)
	case *netlink.Fq:
		// ~0U is fq's "no maxrate".
		if r := q.FlowMaxRate; r != 0 && r != ^uint32(0) {
			out.RateBps = bitRate(uint64(r))
		}
		out.LimitPackets = uint64(q.PacketLimit)
	case *netlink.FqCodel:
		out.LimitPackets = uint64(q.Limit)
	case *netlink.Sfq:
		out.LimitPackets = uint64(q.Limit)
	case *netlink.Netem:
		out.RateBps = bitRate(q.Rate64)
		out.LimitPackets = uint64(q.Limit)
	case *netlink.GenericQdisc:
		if opts != nil {
			if err := applyQdiscOptions(&out, opts); err != nil {
				return out, fmt.Errorf("%s: %w", out, err)
			}
		}
	}
	return out, nil
}

// fromClass converts a class; opts are the raw options of an hfsc class.
func fromClass(c netlink.Class, opts []byte) (Qdisc, error) {
	a := c.Attrs()
	out := Qdisc{Kind: c.Type(), Handle: classID(a.Handle), Parent: classID(a.Parent), Class: true}
	if a.Statistics != nil {
		stats(&out, a.Statistics)
	}
	switch c := c.(type) {
	case *netlink.HtbClass:
		out.RateBps = bitRate(c.Rate)
		out.CeilBps = bitRate(c.Ceil)
		out.BurstBytes = bucketBytes(c.Rate, c.Buffer)
	default:
		if opts != nil {
			if err := applyClassOptions(&out, opts); err != nil {
				return out, fmt.Errorf("%s: %w", out, err)
			}
		}
	}
	return out, nil
}

// stats copies the generic statistics (TCA_STATS2) of a qdisc, class or
// action.
func stats(q *Qdisc, s *netlink.ClassStatistics) {
	if b := s.Basic; b != nil {
		q.SentBytes = b.Bytes
		q.SentPackets = uint64(b.Packets)
	}
	if qs := s.Queue; qs != nil {
		q.Drops = uint64(qs.Drops)
		q.Overlimits = uint64(qs.Overlimits)
		q.Requeues = uint64(qs.Requeues)
		q.Backlog = qs.Backlog
		q.Qlen = qs.Qlen
	}
}

// readPolicers lists the filters on every hook of link and keeps their
// police actions. Filters hang on the ingress or clsact qdisc's hooks and on
// any qdisc or class of the egress tree. The library decodes the actions of
// u32, matchall, flower and fw filters; a policer on another kind of filter
// (basic, bpf) is not seen.
func readPolicers(h *netlink.Handle, link netlink.Link, t *tree) ([]Policer, error) {
	type hook struct {
		parent    uint32
		direction string
	}
	var hooks []hook
	switch t.ingress {
	case "clsact":
		hooks = append(hooks, hook{minIngress, "ingress"}, hook{minEgress, "egress"})
	case "ingress":
		// The ingress qdisc has one block, whichever minor is asked for.
		hooks = append(hooks, hook{minIngress, "ingress"})
	}
	for _, p := range t.parents {
		hooks = append(hooks, hook{p, "egress"})
	}
	var out []Policer
	seen := map[string]bool{}
	for _, hk := range hooks {
		fs, err := redump(func() ([]netlink.Filter, error) { return h.FilterList(link, hk.parent) })
		if err != nil {
			return nil, fmt.Errorf("list filters of %s: %w", classID(hk.parent), err)
		}
		for _, f := range fs {
			for _, p := range policeActions(f) {
				pol := fromPolice(p, hk.direction, classID(hk.parent), f.Type())
				if !seen[pol.String()] { // an action shared by filters of one hook
					seen[pol.String()] = true
					out = append(out, pol)
				}
			}
		}
	}
	return out, nil
}

// policeActions returns the police actions of a filter, including the
// old-style "police" of u32 and fw.
func policeActions(f netlink.Filter) []*netlink.PoliceAction {
	var acts []netlink.Action
	var old *netlink.PoliceAction
	switch f := f.(type) {
	case *netlink.U32:
		acts, old = f.Actions, f.Police
	case *netlink.FwFilter:
		acts, old = f.Actions, f.Police
	case *netlink.MatchAll:
		acts = f.Actions
	case *netlink.Flower:
		acts = f.Actions
	}
	var out []*netlink.PoliceAction
	if old != nil {
		out = append(out, old)
	}
	for _, a := range acts {
		if p, ok := a.(*netlink.PoliceAction); ok {
			out = append(out, p)
		}
	}
	return out
}

// fromPolice converts a police action. The library gives its rate in
// bytes/s (32 bits, see Policer.RateBps) and its burst already in bytes.
func fromPolice(p *netlink.PoliceAction, direction, parent, filter string) Policer {
	out := Policer{
		Direction:  direction,
		Parent:     parent,
		Filter:     filter,
		Index:      uint32(p.Index),
		RateBps:    bitRate(uint64(p.Rate)),
		BurstBytes: uint64(p.Burst),
		Action:     actionName(int32(p.ExceedAction)),
	}
	if s := p.Statistics; s != nil {
		if b := s.Basic; b != nil {
			out.Bytes = b.Bytes
			out.Packets = uint64(b.Packets)
		}
		if q := s.Queue; q != nil {
			out.Drops = uint64(q.Drops)
			out.Overlimits = uint64(q.Overlimits)
		}
	}
	return out
}

// tcKey identifies a qdisc or class in a dump.
type tcKey struct{ handle, parent uint32 }

// dumpOptions dumps the qdiscs (RTM_GETQDISC) or classes (RTM_GETTCLASS) of
// the link with index ifindex and returns the raw TCA_OPTIONS of each.
func dumpOptions(req, resp uint16, ifindex int) (map[tcKey][]byte, error) {
	for range 3 {
		r := nl.NewNetlinkRequest(int(req), unix.NLM_F_DUMP)
		r.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: int32(ifindex)})
		msgs, err := r.Execute(unix.NETLINK_ROUTE, resp)
		if errors.Is(err, nl.ErrDumpInterrupted) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return tcOptions(msgs, ifindex)
	}
	return nil, errors.New("the tc configuration kept changing while it was read; try again")
}

// tcOptions picks the TCA_OPTIONS of each message (a struct tcmsg and
// attributes) of the link with index ifindex.
func tcOptions(msgs [][]byte, ifindex int) (map[tcKey][]byte, error) {
	m := map[tcKey][]byte{}
	for _, b := range msgs {
		if len(b) < nl.SizeofTcMsg {
			return nil, fmt.Errorf("tc message of %d bytes, shorter than a tcmsg", len(b))
		}
		msg := nl.DeserializeTcMsg(b)
		if int(msg.Ifindex) != ifindex {
			continue
		}
		as, err := parseAttrs(b[nl.SizeofTcMsg:])
		if err != nil {
			return nil, fmt.Errorf("tc message of %s: %w", classID(msg.Handle), err)
		}
		for _, a := range as {
			if a.typ == unix.TCA_OPTIONS {
				m[tcKey{msg.Handle, msg.Parent}] = a.data
			}
		}
	}
	return m, nil
}

// cgroupCPU reads the CPU quota that holds this process, in the cgroup
// tree at /sys/fs/cgroup or, when that is not mounted here (ip netns
// exec mounts a fresh /sys in a mount namespace of its own), in the tree
// of init's mount namespace (/proc/1/root, root only).
func cgroupCPU() *CgroupCPU {
	proc := os.DirFS("/proc/thread-self")
	for _, root := range []string{"/sys/fs/cgroup", "/proc/1/root/sys/fs/cgroup"} {
		if c := readCgroupCPU(proc, os.DirFS(root)); c != nil {
			return c
		}
	}
	return nil
}
