package pathinfo_test

import (
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/internal/testkit"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
	"github.com/blastnet/blast/pathinfo"
)

// These tests configure tc in namespaces of their own (netlab
// labs: two namespaces joined by a veth pair, 198.18.0.1 in A and
// 198.18.0.2 in B) and check pathinfo against what they configured, what
// they sent and what tc itself prints.

// run runs a command in h and fails the test with its output if it fails.
func run(t *testing.T, h *netlab.Host, name string, args ...string) string {
	t.Helper()
	out, err := h.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s in %s: %v\n%s", name, strings.Join(args, " "), h.Name, err, out)
	}
	return string(out)
}

// take snapshots iface in h.
func take(t *testing.T, h *netlab.Host, iface string) *pathinfo.Snapshot {
	t.Helper()
	var s *pathinfo.Snapshot
	if err := h.Do(func() (err error) {
		s, err = pathinfo.Take(iface)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

// start starts a watch of iface in h; the test closes it at the end.
func start(t *testing.T, h *netlab.Host, iface string) *pathinfo.Watch {
	t.Helper()
	var w *pathinfo.Watch
	if err := h.Do(func() (err error) {
		w, err = pathinfo.Start(iface)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// find returns the qdisc or class of s with handle, failing without one.
func find(t *testing.T, qs []pathinfo.Qdisc, class bool, handle string) pathinfo.Qdisc {
	t.Helper()
	for _, q := range qs {
		if q.Class == class && q.Handle == handle {
			return q
		}
	}
	t.Fatalf("no %s with handle %s in %+v", map[bool]string{false: "qdisc", true: "class"}[class], handle, qs)
	return pathinfo.Qdisc{}
}

// tcQdisc is a qdisc as `tc -s -j qdisc show` prints it.
type tcQdisc struct {
	Kind       string         `json:"kind"`
	Handle     string         `json:"handle"`
	Root       bool           `json:"root"`
	Parent     string         `json:"parent"`
	Options    map[string]any `json:"options"`
	Bytes      uint64         `json:"bytes"`
	Packets    uint64         `json:"packets"`
	Drops      uint64         `json:"drops"`
	Overlimits uint64         `json:"overlimits"`
	Requeues   uint64         `json:"requeues"`
	Backlog    uint32         `json:"backlog"`
	Qlen       uint32         `json:"qlen"`
}

// tcQdiscs runs `tc -s -j qdisc show dev iface` in h.
func tcQdiscs(t *testing.T, h *netlab.Host, iface string) []tcQdisc {
	t.Helper()
	var qs []tcQdisc
	out := run(t, h, "tc", "-s", "-j", "qdisc", "show", "dev", iface)
	if err := json.Unmarshal([]byte(out), &qs); err != nil {
		t.Fatalf("tc -j qdisc show: %v\n%s", err, out)
	}
	return qs
}

// option returns a numeric option tc printed.
func (q tcQdisc) option(t *testing.T, name string) uint64 {
	t.Helper()
	v, ok := q.Options[name].(float64)
	if !ok {
		t.Fatalf("tc printed no numeric option %q for %s %s: %v", name, q.Kind, q.Handle, q.Options)
	}
	return uint64(v)
}

// skipWithout skips the test when the kernel has no qdisc of kind: adding
// one as the root of iface fails with ENOENT ("Specified qdisc kind is
// unknown", the module is neither built in nor loadable). Any other
// failure fails the test.
func skipWithout(t *testing.T, h *netlab.Host, iface, kind, instead string) {
	t.Helper()
	err := h.Do(func() error {
		l, err := netlink.LinkByName(iface)
		if err != nil {
			return err
		}
		q := &netlink.GenericQdisc{QdiscType: kind, QdiscAttrs: netlink.QdiscAttrs{
			LinkIndex: l.Attrs().Index, Handle: netlink.MakeHandle(0xfff0, 0), Parent: netlink.HANDLE_ROOT}}
		if err := netlink.QdiscAdd(q); err != nil {
			return err
		}
		return netlink.QdiscDel(q)
	})
	if errors.Is(err, unix.ENOENT) {
		t.Skipf("the kernel has no %s qdisc (%v); %s", kind, err, instead)
	}
	if err != nil {
		t.Fatalf("probe for the %s qdisc: %v", kind, err)
	}
}

// The token bucket the brief names: kind, rate, limit and burst exact,
// and the same as tc prints, but for tc's burst, which it computes in whole
// microseconds.
func TestTakeTBF(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	a := lab.A
	run(t, a, "tc", "qdisc", "add", "dev", a.Iface, "root", "tbf", "rate", "100mbit", "burst", "32kb", "limit", "30000")
	s := take(t, a, a.Iface)
	tq := tcQdiscs(t, a, a.Iface)
	if len(tq) != 1 || tq[0].Kind != "tbf" || !tq[0].Root {
		t.Fatalf("tc shows %+v, want one root tbf", tq)
	}
	got := find(t, s.Qdiscs, false, tq[0].Handle)
	want := pathinfo.Qdisc{Kind: "tbf", Handle: tq[0].Handle, Parent: "root",
		RateBps: 100_000_000, LimitBytes: 30000, BurstBytes: 32768}
	counters := cmpopts.IgnoreFields(pathinfo.Qdisc{}, "Drops", "Overlimits", "Requeues", "SentBytes", "SentPackets", "Backlog", "Qlen")
	if diff := cmp.Diff(want, got, counters); diff != "" {
		t.Errorf("tbf (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]pathinfo.Qdisc{got}, s.Shapers()); diff != "" {
		t.Errorf("Shapers (-want +got):\n%s", diff)
	}
	// tc prints the rate in bytes/s, the limit in bytes.
	if r := tq[0].option(t, "rate"); got.RateBps != 8*r {
		t.Errorf("RateBps = %d, tc says rate %d bytes/s = %d bit/s", got.RateBps, r, 8*r)
	}
	if l := tq[0].option(t, "limit"); got.LimitBytes != l {
		t.Errorf("LimitBytes = %d, tc says limit %d", got.LimitBytes, l)
	}
	// tc truncates the bucket's time to microseconds: it is short by less
	// than a microsecond of the rate (12.5 bytes at 100 Mbit/s).
	if b := tq[0].option(t, "burst"); got.BurstBytes < b || got.BurstBytes-b > 13 {
		t.Errorf("BurstBytes = %d, tc says burst %d: more than a microsecond of the rate apart", got.BurstBytes, b)
	}
	if s.Iface != a.Iface || s.MTU != 1500 {
		t.Errorf("Iface, MTU = %s, %d, want %s, 1500 (a veth's default)", s.Iface, s.MTU, a.Iface)
	}
	if len(s.Policers) != 0 {
		t.Errorf("Policers = %+v, want none", s.Policers)
	}
}

// parseTCRate reads a rate as tc prints it ("50Mbit"), parseTCSize a size
// ("1600b", "32Kb").
func parseTCRate(t *testing.T, s string) uint64 {
	t.Helper()
	for _, u := range []struct {
		suffix string
		mult   uint64
	}{{"Gbit", 1e9}, {"Mbit", 1e6}, {"Kbit", 1e3}, {"bit", 1}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseUint(n, 10, 64)
			if err == nil {
				return v * u.mult
			}
		}
	}
	t.Fatalf("tc rate %q: not a whole number of Gbit, Mbit, Kbit or bit", s)
	return 0
}

func parseTCSize(t *testing.T, s string) uint64 {
	t.Helper()
	for _, u := range []struct {
		suffix string
		mult   uint64
	}{{"Mb", 1 << 20}, {"Kb", 1 << 10}, {"b", 1}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseUint(n, 10, 64)
			if err == nil {
				return v * u.mult
			}
		}
	}
	t.Fatalf("tc size %q: not a whole number of Mb, Kb or b", s)
	return 0
}

// tcClassRE matches the first two lines of a class in `tc -s class show`
// (iproute2 prints classes as text even with -j).
var tcClassRE = regexp.MustCompile(`class (\S+) (\S+) (?:parent (\S+)|root) .*?rate (\S+) ceil (\S+) burst (\S+) cburst \S+ *\n Sent (\d+) bytes (\d+) pkt \(dropped (\d+), overlimits (\d+) requeues (\d+)\)`)

// An htb tree: the classes' rates, ceils and buckets are what was asked
// for and what tc prints; the htb qdisc itself shapes nothing. Two fifos
// under the leaves are read from the raw dump pathinfo does for the kinds
// the netlink library leaves undecoded, and the filters of the tree and of
// a clsact qdisc are listed without finding a policer.
func TestTakeHTB(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	a := lab.A
	dev := a.Iface
	for _, c := range [][]string{
		{"qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "10"},
		{"class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate", "80mbit"},
		{"class", "add", "dev", dev, "parent", "1:1", "classid", "1:10", "htb", "rate", "50mbit", "ceil", "80mbit"},
		{"class", "add", "dev", dev, "parent", "1:1", "classid", "1:20", "htb", "rate", "10mbit", "ceil", "20mbit"},
		{"qdisc", "add", "dev", dev, "parent", "1:10", "handle", "10:", "bfifo", "limit", "5000"},
		{"qdisc", "add", "dev", dev, "parent", "1:20", "handle", "20:", "pfifo", "limit", "7"},
		{"filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "u32", "match", "u32", "0", "0", "flowid", "1:10"},
		{"qdisc", "add", "dev", dev, "clsact"},
		{"filter", "add", "dev", dev, "ingress", "protocol", "all", "u32", "match", "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev", "lo"},
	} {
		run(t, a, "tc", c...)
	}
	s := take(t, a, dev)
	want := []pathinfo.Qdisc{
		{Kind: "htb", Handle: "1:", Parent: "root"},
		{Kind: "bfifo", Handle: "10:", Parent: "1:10", LimitBytes: 5000},
		{Kind: "pfifo", Handle: "20:", Parent: "1:20", LimitPackets: 7},
		{Kind: "clsact", Handle: "ffff:", Parent: "ffff:fff1"},
		{Kind: "htb", Handle: "1:1", Parent: "root", Class: true, RateBps: 80e6, CeilBps: 80e6, BurstBytes: 1600},
		{Kind: "htb", Handle: "1:10", Parent: "1:1", Class: true, RateBps: 50e6, CeilBps: 80e6, BurstBytes: 1600},
		{Kind: "htb", Handle: "1:20", Parent: "1:1", Class: true, RateBps: 10e6, CeilBps: 20e6, BurstBytes: 1600},
	}
	counters := cmpopts.IgnoreFields(pathinfo.Qdisc{}, "Drops", "Overlimits", "Requeues", "SentBytes", "SentPackets", "Backlog", "Qlen")
	byKey := cmpopts.SortSlices(func(x, y pathinfo.Qdisc) bool { return x.String() < y.String() })
	if diff := cmp.Diff(want, s.Qdiscs, counters, byKey); diff != "" {
		t.Errorf("qdiscs and classes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want[4:], s.Shapers(), counters, byKey); diff != "" {
		t.Errorf("Shapers (-want +got):\n%s", diff)
	}
	if len(s.Policers) != 0 {
		t.Errorf("Policers = %+v, want none (the filters have no police action)", s.Policers)
	}

	// What tc prints of the classes, counters included. The kernel may
	// send a packet of its own meanwhile (an MLD report, 110 bytes, up
	// to a second after the link came up), so tc's view is taken between
	// two snapshots that agree.
	var out string
	testkit.WaitFor(t, 30*time.Second, "two snapshots that agree around tc's view of the counters", func() bool {
		before := take(t, a, dev)
		out = run(t, a, "tc", "-s", "class", "show", "dev", dev)
		s = take(t, a, dev)
		return cmp.Equal(before.Qdiscs, s.Qdiscs)
	})
	ms := tcClassRE.FindAllStringSubmatch(out, -1)
	if len(ms) != 3 {
		t.Fatalf("found %d htb classes in tc's output, want 3:\n%s", len(ms), out)
	}
	for _, m := range ms {
		got := find(t, s.Qdiscs, true, m[2])
		parent := m[3]
		if parent == "" {
			parent = "root"
		}
		n := func(i int) uint64 { v, _ := strconv.ParseUint(m[i], 10, 64); return v }
		fromTC := pathinfo.Qdisc{Kind: m[1], Handle: m[2], Parent: parent, Class: true,
			RateBps: parseTCRate(t, m[4]), CeilBps: parseTCRate(t, m[5]), BurstBytes: parseTCSize(t, m[6]),
			SentBytes: n(7), SentPackets: n(8), Drops: n(9), Overlimits: n(10), Requeues: n(11)}
		if diff := cmp.Diff(fromTC, got, cmpopts.IgnoreFields(pathinfo.Qdisc{}, "Backlog", "Qlen")); diff != "" {
			t.Errorf("class %s, tc's view (-tc +pathinfo):\n%s", m[2], diff)
		}
	}
	for _, q := range tcQdiscs(t, a, dev) {
		if q.Kind != "bfifo" && q.Kind != "pfifo" {
			continue
		}
		got := find(t, s.Qdiscs, false, q.Handle)
		if l := q.option(t, "limit"); got.LimitBytes+got.LimitPackets != l {
			t.Errorf("%s: limit %d bytes %d packets, tc says limit %d", got, got.LimitBytes, got.LimitPackets, l)
		}
	}
}

// fq's maxrate caps each flow.
func TestTakeFQ(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	a := lab.A
	skipWithout(t, a, a.Iface, "fq", "TestFromQdisc converts a decoded fq")
	run(t, a, "tc", "qdisc", "add", "dev", a.Iface, "root", "handle", "1:", "fq", "maxrate", "10mbit", "limit", "500")
	got := find(t, take(t, a, a.Iface).Qdiscs, false, "1:")
	if got.Kind != "fq" || got.RateBps != 10e6 || got.LimitPackets != 500 {
		t.Errorf("fq = %+v, want kind fq, RateBps 10000000, LimitPackets 500", got)
	}
}

// cake's bandwidth, read from TCA_CAKE_BASE_RATE64 by a dump of pathinfo's
// own since the netlink library does not decode cake.
func TestTakeCake(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	a := lab.A
	skipWithout(t, a, a.Iface, "cake", "TestQdiscOptions reads cake's options from attributes laid out as cake_dump does")
	run(t, a, "tc", "qdisc", "add", "dev", a.Iface, "root", "handle", "1:", "cake", "bandwidth", "100mbit", "memlimit", "4mb")
	got := find(t, take(t, a, a.Iface).Qdiscs, false, "1:")
	if got.Kind != "cake" || got.RateBps != 100e6 || got.LimitBytes != 4<<20 {
		t.Errorf("cake = %+v, want kind cake, RateBps 100000000, LimitBytes %d", got, 4<<20)
	}
}

// quiet makes iface in h carry only what the test sends: no IPv6 (router
// and neighbour solicitations, MLD reports) and no ARP (peer resolved for
// good to peerMAC).
func quiet(t *testing.T, h *netlab.Host, iface string, peer netip.Addr, peerMAC net.HardwareAddr) {
	t.Helper()
	if err := h.Do(func() error {
		if err := os.WriteFile(filepath.Join("/proc/sys/net/ipv6/conf", iface, "disable_ipv6"), []byte("1\n"), 0o644); err != nil {
			return err
		}
		l, err := netlink.LinkByName(iface)
		if err != nil {
			return err
		}
		return netlink.NeighSet(&netlink.Neigh{LinkIndex: l.Attrs().Index, State: netlink.NUD_PERMANENT,
			IP: peer.AsSlice(), HardwareAddr: peerMAC})
	}); err != nil {
		t.Fatalf("quieten %s in %s: %v", iface, h.Name, err)
	}
}

func mac(t *testing.T, h *netlab.Host) net.HardwareAddr {
	t.Helper()
	var hw net.HardwareAddr
	if err := h.Do(func() error {
		l, err := netlink.LinkByName(h.Iface)
		if err == nil {
			hw = l.Attrs().HardwareAddr
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return hw
}

// quietLab is a lab whose veth carries only what the test sends.
func quietLab(t *testing.T) *netlab.Lab {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	quiet(t, lab.A, lab.A.Iface, lab.B.Addr4, mac(t, lab.B))
	quiet(t, lab.B, lab.B.Iface, lab.A.Addr4, mac(t, lab.A))
	return lab
}

// udpSocket opens a UDP socket in h bound to addr (port 0: any).
func udpSocket(t *testing.T, h *netlab.Host, addr netip.AddrPort) int {
	t.Helper()
	var fd int
	if err := h.Do(func() (err error) {
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
		if err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrInet4{Addr: addr.Addr().As4(), Port: int(addr.Port())})
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// sendN sends n datagrams of size bytes from fd to dst, each accepted by
// the kernel (a qdisc drop is no error to an unconnected UDP socket: the
// kernel counts it as Udp.SndbufErrors).
func sendN(t *testing.T, fd int, dst netip.AddrPort, n, size int) {
	t.Helper()
	to := &unix.SockaddrInet4{Addr: dst.Addr().As4(), Port: int(dst.Port())}
	buf := make([]byte, size)
	for i := range n {
		if err := unix.Sendto(fd, buf, 0, to); err != nil {
			t.Fatalf("send datagram %d of %d to %s: %v", i+1, n, dst, err)
		}
	}
}

// localPort is the port fd is bound to.
func localPort(t *testing.T, fd int) uint16 {
	t.Helper()
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return uint16(sa.(*unix.SockaddrInet4).Port)
}

// socketDrops is the socket's own drop count (sk_drops, SO_MEMINFO's
// SK_MEMINFO_DROPS): datagrams it had no room for.
func socketDrops(t *testing.T, fd int) uint64 {
	t.Helper()
	var mem [unix.SK_MEMINFO_VARS]uint32
	size := uint32(unsafe.Sizeof(mem))
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_MEMINFO,
		uintptr(unsafe.Pointer(&mem[0])), uintptr(unsafe.Pointer(&size)), 0); e != 0 {
		t.Fatalf("getsockopt SO_MEMINFO: %v", e)
	}
	return uint64(mem[unix.SK_MEMINFO_DROPS])
}

// Datagrams sent to a socket with a tiny receive buffer that does not read
// while they arrive: each is either taken into the buffer (and counted in
// Udp.InDatagrams when read) or dropped for want of room, counted in
// Udp.RcvbufErrors and Udp.InErrors. Nothing else uses UDP in the
// namespace, so the deltas are exact. The watch is stopped from outside
// the namespace: Stop goes back into it.
func TestUDPRcvbufErrors(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	a := lab.A
	rx := udpSocket(t, a, netip.AddrPortFrom(a.Addr4, 0))
	// Room for a few datagrams (the kernel doubles what it is asked for).
	if err := unix.SetsockoptInt(rx, unix.SOL_SOCKET, unix.SO_RCVBUF, 4096); err != nil {
		t.Fatal(err)
	}
	tx := udpSocket(t, a, netip.AddrPortFrom(a.Addr4, 0))
	dst := netip.AddrPortFrom(a.Addr4, localPort(t, rx))
	const n = 64

	w := start(t, a, a.Iface)
	sendN(t, tx, dst, n, 200)
	// Read until every datagram is accounted for, received or dropped by
	// the socket; delivery through lo may lag the sends.
	received := uint64(0)
	buf := make([]byte, 2048)
	deadline := time.Now().Add(30 * time.Second)
	for received+socketDrops(t, rx) < n {
		_, _, err := unix.Recvfrom(rx, buf, 0)
		switch {
		case err == nil:
			received++
		case errors.Is(err, unix.EAGAIN):
			if time.Now().After(deadline) {
				t.Fatalf("after 30 s, %d datagrams received and %d dropped of %d sent", received, socketDrops(t, rx), n)
			}
			unix.Poll([]unix.PollFd{{Fd: int32(rx), Events: unix.POLLIN}}, 10)
		default:
			t.Fatal(err)
		}
	}
	dropped := socketDrops(t, rx)
	d, after, err := w.Stop() // from the test's own namespace
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d datagrams: %d received, %d dropped by the socket", n, received, dropped)
	if after.Iface != a.Iface {
		t.Errorf("after.Iface = %s, want %s", after.Iface, a.Iface)
	}
	if received == 0 || dropped == 0 {
		t.Fatalf("%d received, %d dropped: the test needs both (a buffer that holds some datagrams, not all)", received, dropped)
	}
	want := map[string]uint64{
		"Udp.OutDatagrams": n,
		"Udp.InDatagrams":  received,
		"Udp.RcvbufErrors": dropped,
		"Udp.InErrors":     dropped,
		"Udp.SndbufErrors": 0,
		"Udp.NoPorts":      0,
	}
	got := map[string]uint64{}
	for k := range want {
		got[k] = d.Get(k)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("UDP counter deltas (-want +got):\n%s", diff)
	}
	if len(d.Resets) != 0 {
		t.Errorf("Resets = %q, want none", d.Resets)
	}
	if _, _, err := w.Stop(); err == nil {
		t.Error("a second Stop succeeded")
	}
}

// Datagrams sent through a token bucket with room for a few: the qdisc
// drops the rest, and each drop fails the datagram's send with ENOBUFS,
// which the kernel counts as Udp.SndbufErrors. With nothing else crossing
// the veth (quietLab), the qdisc's deltas match the UDP counters exactly,
// and its drops match what tc prints.
func TestTBFDrops(t *testing.T) {
	lab := quietLab(t)
	a, b := lab.A, lab.B
	run(t, a, "tc", "qdisc", "add", "dev", a.Iface, "root", "handle", "1:", "tbf", "rate", "1mbit", "burst", "2000", "limit", "3000")
	rx := udpSocket(t, b, netip.AddrPortFrom(b.Addr4, 0)) // so that B answers no ICMP
	tx := udpSocket(t, a, netip.AddrPortFrom(a.Addr4, 0))
	dst := netip.AddrPortFrom(b.Addr4, localPort(t, rx))
	const n = 300

	w := start(t, a, a.Iface)
	before := find(t, w.Before().Qdiscs, false, "1:")
	sendN(t, tx, dst, n, 200)
	var d *pathinfo.Delta
	var after *pathinfo.Snapshot
	if err := a.Do(func() (err error) { // in the namespace it started in
		d, after, err = w.Stop()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	got := find(t, d.Qdiscs, false, "1:")
	abs := find(t, after.Qdiscs, false, "1:")
	sndbuf, out := d.Get("Udp.SndbufErrors"), d.Get("Udp.OutDatagrams")
	t.Logf("%d datagrams: tbf sent %d, queued %d, dropped %d; Udp.OutDatagrams +%d, Udp.SndbufErrors +%d",
		n, got.SentPackets, got.Qlen, got.Drops, out, sndbuf)
	if got.Drops == 0 {
		t.Fatalf("the tbf dropped nothing of %d datagrams: %+v", n, got)
	}
	if got.Drops != sndbuf || out+sndbuf != n {
		t.Errorf("tbf drops %d; Udp.SndbufErrors %d, Udp.OutDatagrams %d: want drops = SndbufErrors, SndbufErrors + OutDatagrams = %d",
			got.Drops, sndbuf, out, n)
	}
	// Sent counts at dequeue; what is still queued is the rest.
	if got.SentPackets+uint64(got.Qlen) != out {
		t.Errorf("tbf sent %d + queued %d, want Udp.OutDatagrams = %d", got.SentPackets, got.Qlen, out)
	}
	if got.Drops != abs.Drops-before.Drops {
		t.Errorf("delta drops %d, want after - before = %d - %d", got.Drops, abs.Drops, before.Drops)
	}
	for _, q := range tcQdiscs(t, a, a.Iface) {
		if q.Handle == "1:" && q.Drops != abs.Drops {
			t.Errorf("after.Drops = %d, tc says dropped %d", abs.Drops, q.Drops)
		}
	}
	if len(d.Resets) != 0 {
		t.Errorf("Resets = %q, want none", d.Resets)
	}
}

// A policer on clsact's ingress hook: its rate, bucket and action as
// configured, and the traffic it saw. The kernel here may lack police
// actions or the matchall classifier; then the test skips.
func TestPolicer(t *testing.T) {
	lab := quietLab(t)
	a, b := lab.A, lab.B
	run(t, a, "tc", "qdisc", "add", "dev", a.Iface, "clsact")
	// Probe with netlink for the errno; tc prints only words.
	err := a.Do(func() error {
		l, err := netlink.LinkByName(a.Iface)
		if err != nil {
			return err
		}
		police := netlink.NewPoliceAction()
		police.Rate, police.Burst, police.ExceedAction = 1250000, 102400, netlink.TC_POLICE_SHOT
		f := &netlink.MatchAll{FilterAttrs: netlink.FilterAttrs{LinkIndex: l.Attrs().Index, Parent: netlink.HANDLE_MIN_INGRESS,
			Priority: 1, Protocol: unix.ETH_P_ALL}, Actions: []netlink.Action{police}}
		if err := netlink.FilterAdd(f); err != nil {
			return err
		}
		return netlink.FilterDel(f)
	})
	if errors.Is(err, unix.ENOENT) {
		t.Skipf("the kernel has no matchall classifier or police action (%v); TestFromPolice converts decoded police actions", err)
	}
	if err != nil {
		t.Fatalf("probe for matchall and police: %v", err)
	}
	run(t, a, "tc", "filter", "add", "dev", a.Iface, "ingress", "matchall", "action", "police", "rate", "10mbit", "burst", "100k", "drop")
	s := take(t, a, a.Iface)
	if len(s.Policers) != 1 {
		t.Fatalf("Policers = %+v, want one", s.Policers)
	}
	want := pathinfo.Policer{Direction: "ingress", Parent: "ffff:fff2", Filter: "matchall", Index: s.Policers[0].Index,
		RateBps: 10e6, BurstBytes: 100 << 10, Action: "drop"}
	if diff := cmp.Diff(want, s.Policers[0]); diff != "" {
		t.Errorf("policer (-want +got):\n%s", diff)
	}

	// 2000 datagrams of 1000 bytes from B in a burst: far over 100 KiB.
	// What the policer passes reaches no socket in A (Udp.NoPorts).
	const n = 2000
	tx := udpSocket(t, b, netip.AddrPortFrom(b.Addr4, 0))
	w := start(t, a, a.Iface)
	sendN(t, tx, netip.AddrPortFrom(a.Addr4, 9), n, 1000)
	// Delivery may lag the sends: wait until the policer has seen them all.
	seen := w.Before().Policers[0].Packets
	if !testkit.Eventually(30*time.Second, func() bool { return take(t, a, a.Iface).Policers[0].Packets >= seen+n }) {
		t.Fatalf("after 30 s the policer has seen %d packets of %d", take(t, a, a.Iface).Policers[0].Packets-seen, n)
	}
	d, _, err := w.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Policers) != 1 {
		t.Fatalf("Policers = %+v, want one", d.Policers)
	}
	p := d.Policers[0]
	if p.Packets != n || p.Drops == 0 || p.Drops != p.Overlimits || p.Drops+d.Get("Udp.NoPorts") != n {
		t.Errorf("policer saw %d packets, dropped %d (overlimits %d), Udp.NoPorts +%d: want %d seen, some dropped, drops = overlimits, drops + NoPorts = %d",
			p.Packets, p.Drops, p.Overlimits, d.Get("Udp.NoPorts"), n, n)
	}
}

// Snapshots read the namespace they are taken in: a missing interface is
// ErrNoInterface, and the counters and sysctls are the namespace's own.
func TestTakeNamespace(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	a := lab.A
	err := a.Do(func() error { _, err := pathinfo.Take(lab.B.Iface); return err })
	if !errors.Is(err, pathinfo.ErrNoInterface) {
		t.Errorf("Take(%s) in A: %v, want ErrNoInterface", lab.B.Iface, err)
	}
	// A value the host's namespace is unlikely to have.
	run(t, a, "sysctl", "-w", "net.ipv4.tcp_notsent_lowat=123457")
	s := take(t, a, a.Iface)
	if got := s.Sysctl("net.ipv4.tcp_notsent_lowat"); got != "123457" {
		t.Errorf("net.ipv4.tcp_notsent_lowat = %q, want 123457, set in the namespace", got)
	}
	if got, want := s.Sysctl("net.ipv4.tcp_rmem"), strings.Join(strings.Fields(run(t, a, "sysctl", "-n", "net.ipv4.tcp_rmem")), " "); got != want {
		t.Errorf("net.ipv4.tcp_rmem = %q, sysctl says %q", got, want)
	}
	for _, k := range []string{"Udp.RcvbufErrors", "Udp6.RcvbufErrors", "Tcp.RetransSegs", "TcpExt.TCPBacklogDrop", "IpExt.InNoRoutes"} {
		if _, ok := s.SNMP[k]; !ok {
			t.Errorf("SNMP lacks %s", k)
		}
	}
	// A fresh namespace has sent no TCP segment.
	if v := s.SNMP["Tcp.OutSegs"]; v != 0 {
		t.Errorf("Tcp.OutSegs = %d in a fresh namespace: not the namespace's counters", v)
	}
}

// Snapshots release what they open: the process's descriptors are as many
// after a hundred as before.
func TestTakeNoFDLeak(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	a := lab.A
	run(t, a, "tc", "qdisc", "add", "dev", a.Iface, "root", "handle", "1:", "htb")
	run(t, a, "tc", "qdisc", "add", "dev", a.Iface, "clsact")
	take(t, a, a.Iface) // warm up whatever the runtime opens once
	fds := func() int {
		es, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(es)
	}
	n := fds()
	for range 100 {
		take(t, a, a.Iface)
		w := start(t, a, a.Iface)
		if _, _, err := w.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	if m := fds(); m != n {
		t.Errorf("%d open descriptors after 100 snapshots and watches, %d before", m, n)
	}
}
