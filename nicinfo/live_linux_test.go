//go:build linux

package nicinfo

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/internal/testkit"
)

// requireRoot skips tests that create interfaces and namespaces.
func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_NET_ADMIN) to create veth pairs and network namespaces")
	}
}

// veth is a real veth pair: Name in the test's network namespace, Peer moved
// into a throwaway namespace NS.
type veth struct {
	Name, Peer        string
	Index, PeerIndex  int
	MAC               net.HardwareAddr
	NS                netns.NsHandle
	peerHandle        *netlink.Handle
	peerLink, ownLink netlink.Link
}

var vethSeq atomic.Int32

// newVeth creates a veth pair with a unique name, both ends up, MTU 1400, and
// removes everything in t.Cleanup.
func newVeth(t testing.TB) *veth {
	t.Helper()
	requireRoot(t)
	n := vethSeq.Add(1)
	v := &veth{
		Name: fmt.Sprintf("bn%d-%da", os.Getpid()%100000, n),
		Peer: fmt.Sprintf("bn%d-%db", os.Getpid()%100000, n),
	}
	// A new namespace, without leaving ours: netns.New switches the thread.
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatalf("get current netns: %v", err)
	}
	ns, err := netns.New()
	if serr := netns.Set(orig); serr != nil {
		// The thread is stuck in the wrong namespace: keep it locked so that
		// the runtime discards it when the goroutine exits.
		t.Fatalf("restore netns: %v", serr)
	}
	orig.Close()
	runtime.UnlockOSThread()
	if err != nil {
		t.Fatalf("create netns: %v", err)
	}
	v.NS = ns
	t.Cleanup(func() { ns.Close() })

	la := netlink.NewLinkAttrs()
	la.Name = v.Name
	la.MTU = 1400
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: la, PeerName: v.Peer}); err != nil {
		t.Fatalf("add veth %s: %v", v.Name, err)
	}
	t.Cleanup(func() {
		if l, err := netlink.LinkByName(v.Name); err == nil {
			if err := netlink.LinkDel(l); err != nil {
				t.Errorf("delete veth %s: %v", v.Name, err)
			}
		}
	})
	own, err := netlink.LinkByName(v.Name)
	if err != nil {
		t.Fatal(err)
	}
	peer, err := netlink.LinkByName(v.Peer)
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetNsFd(peer, int(ns)); err != nil {
		t.Fatalf("move %s to netns: %v", v.Peer, err)
	}
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatalf("netlink handle in netns: %v", err)
	}
	t.Cleanup(h.Close)
	v.peerHandle = h
	if peer, err = h.LinkByName(v.Peer); err != nil {
		t.Fatal(err)
	}
	if err := h.LinkSetMTU(peer, 1400); err != nil {
		t.Fatal(err)
	}
	if err := h.LinkSetUp(peer); err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetUp(own); err != nil {
		t.Fatal(err)
	}
	v.ownLink, v.peerLink = own, peer
	v.Index = own.Attrs().Index
	v.PeerIndex = peer.Attrs().Index
	v.MAC = peer.Attrs().HardwareAddr
	waitOper(t, v.Name, true)
	return v
}

// setPeer brings the peer end up or down.
func (v *veth) setPeer(t testing.TB, up bool) {
	t.Helper()
	var err error
	if up {
		err = v.peerHandle.LinkSetUp(v.peerLink)
	} else {
		err = v.peerHandle.LinkSetDown(v.peerLink)
	}
	if err != nil {
		t.Fatalf("set %s up=%v: %v", v.Peer, up, err)
	}
}

// peerRxPackets reads the peer's receive counter inside its namespace.
func (v *veth) peerRxPackets(t testing.TB) uint64 {
	t.Helper()
	l, err := v.peerHandle.LinkByName(v.Peer)
	if err != nil {
		t.Fatal(err)
	}
	return l.Attrs().Statistics.RxPackets
}

// sendFrames sends n raw Ethernet frames of size bytes from the veth to its
// peer through AF_PACKET (no addresses, no routes).
func (v *veth) sendFrames(t testing.TB, n, size int) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("AF_PACKET socket: %v", err)
	}
	defer unix.Close(fd)
	frame := make([]byte, size)
	copy(frame[0:6], v.MAC)
	copy(frame[6:12], v.ownLink.Attrs().HardwareAddr)
	binary.BigEndian.PutUint16(frame[12:14], 0x88b5) // IEEE local experimental
	sa := &unix.SockaddrLinklayer{Ifindex: v.Index, Protocol: htons(0x88b5), Halen: 6}
	copy(sa.Addr[:], v.MAC)
	for i := 0; i < n; i++ {
		if err := unix.Sendto(fd, frame, 0, sa); err != nil {
			t.Fatalf("send frame %d: %v", i, err)
		}
	}
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func openLive(t testing.TB) *Source {
	t.Helper()
	s, err := Open(Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// waitOper waits until the kernel reports name's operstate as up (or as
// not up): its linkwatch applies a link change asynchronously, some time
// after the change was made.
func waitOper(t testing.TB, name string, up bool) {
	t.Helper()
	var state string
	if !testkit.Eventually(30*time.Second, func() bool {
		b, err := os.ReadFile("/sys/class/net/" + name + "/operstate")
		state = strings.TrimSpace(string(b))
		return err == nil && (state == "up") == up
	}) {
		t.Fatalf("%s: operstate still %q 30 s after the link change", name, state)
	}
}

func TestLiveVeth(t *testing.T) {
	v := newVeth(t)
	s := openLive(t)
	ifc, err := s.Inspect(v.Name)
	if err != nil {
		t.Fatal(err)
	}
	ten := 10000
	want := struct {
		Driver    string
		Index     int
		PeerIndex *int
		MTU       *int
		OperState string
		Carrier   *bool
		Speed     *int
		Duplex    string
		Source    string
		Virtual   bool
		Naming    string
		PeerStat  uint64
	}{"veth", v.Index, &v.PeerIndex, ptr(1400), "up", ptr(true), &ten, "full", "ethtool", true, "user", uint64(v.PeerIndex)}
	got := want
	got.Driver, got.Index, got.PeerIndex, got.MTU = ifc.Driver, ifc.Index, ifc.PeerIndex, ifc.MTU
	got.OperState, got.Carrier, got.Speed, got.Duplex = ifc.OperState, ifc.Carrier, ifc.Link.SpeedMbps, ifc.Link.Duplex
	got.Source, got.Virtual, got.Naming, got.PeerStat = ifc.Link.Source, ifc.Virtual, ifc.Naming.Kind, ifc.DriverStats["peer_ifindex"]
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("veth report (-want +got):\n%s", diff)
	}
	if !ifc.Link.ModesKnown {
		t.Errorf("link modes unknown: GLINKSETTINGS handshake failed: %v", ifc.Errors["linksettings"])
	}
	if _, ok := ifc.Counters["tx_bytes"]; !ok {
		t.Errorf("generic counter tx_bytes missing: %v", ifc.Counters)
	}
	if ifc.MAC != v.ownLink.Attrs().HardwareAddr.String() {
		t.Errorf("MAC = %q, want %q", ifc.MAC, v.ownLink.Attrs().HardwareAddr)
	}
	if ifc.XDP == nil || ifc.XDP.Attached {
		t.Errorf("XDP = %+v, want known and not attached", ifc.XDP)
	}
	if f := Diagnose(Input{Iface: ifc}); len(f) != 0 {
		t.Errorf("healthy veth has findings: %+v", f)
	}
}

func TestLiveVethCounters(t *testing.T) {
	v := newVeth(t)
	s := openLive(t)
	w, err := s.Watch(v.Name)
	if err != nil {
		t.Fatal(err)
	}
	peer0 := v.peerRxPackets(t)
	const n, size = 300, 1000
	v.sendFrames(t, n, size)
	res, err := w.Stop(0, false)
	if err != nil {
		t.Fatal(err)
	}
	d := res.Delta
	if got := d.Counters["tx_packets"]; got < n {
		t.Errorf("Δtx_packets = %d, want >= %d", got, n)
	}
	if got := d.Counters["tx_bytes"]; got < n*size {
		t.Errorf("Δtx_bytes = %d, want >= %d", got, n*size)
	}
	if got := v.peerRxPackets(t) - peer0; got < n {
		t.Errorf("peer Δrx_packets = %d, want >= %d", got, n)
	}
	if len(d.Resets) != 0 {
		t.Errorf("resets on a live veth: %v", d.Resets)
	}
	if d.DriverStats == nil {
		t.Errorf("no -S deltas for veth")
	}
	if len(res.Findings) != 0 {
		t.Errorf("healthy veth under traffic has findings: %+v", res.Findings)
	}
}

func TestLiveVethPeerDown(t *testing.T) {
	v := newVeth(t)
	v.setPeer(t, false)
	waitOper(t, v.Name, false)
	s := openLive(t)
	ifc := mustInspect(t, s, v.Name)
	if ifc.Carrier == nil || *ifc.Carrier {
		t.Errorf("carrier = %v, want false", ifc.Carrier)
	}
	// lowerlayerdown when the peer is in our namespace; down when the kernel
	// cannot see it (it lives in another namespace, as here).
	if ifc.OperState != "down" && ifc.OperState != "lowerlayerdown" {
		t.Errorf("operstate = %q, want down or lowerlayerdown", ifc.OperState)
	}
	if ifc.Link.SpeedMbps == nil || *ifc.Link.SpeedMbps != 10000 {
		t.Errorf("speed = %v, want the nominal 10000 even without carrier", ifc.Link.SpeedMbps)
	}
	f := Diagnose(Input{Iface: ifc})
	if diff := cmp.Diff([]string{"D12 ERROR"}, ruleSev(f)); diff != "" {
		t.Fatalf("findings (-want +got):\n%s", diff)
	}
	if !strings.Contains(f[0].Summary, "peer (ifindex "+strconv.Itoa(v.PeerIndex)+")") {
		t.Errorf("D12 does not name the veth peer: %q", f[0].Summary)
	}
}

func TestLiveLoopback(t *testing.T) {
	s := openLive(t)
	ifc := mustInspect(t, s, "lo")
	if ifc.Type == nil || *ifc.Type != 772 {
		t.Errorf("lo type = %v, want 772", ifc.Type)
	}
	if ifc.Index != 1 || !ifc.Virtual || ifc.Naming.Kind != "predictable" {
		t.Errorf("lo: index %d virtual %v naming %q, want 1 true predictable", ifc.Index, ifc.Virtual, ifc.Naming.Kind)
	}
	if ifc.Link.SpeedMbps != nil {
		t.Errorf("lo speed = %d, want unknown", *ifc.Link.SpeedMbps)
	}
	if _, ok := ifc.Counters["rx_packets"]; !ok {
		t.Errorf("lo has no rx_packets counter")
	}
	if _, err := s.Inspect("nonexistent0"); !errorsIs(err, ErrNoInterface) {
		t.Errorf("Inspect(nonexistent0) = %v, want ErrNoInterface", err)
	}
}

// TestLiveCapture captures the live system and checks that Load reads back the
// same identity and state.
func TestLiveCapture(t *testing.T) {
	s := openLive(t)
	names := []string{"lo"}
	if os.Geteuid() == 0 {
		names = append(names, newVeth(t).Name)
	}
	dir := t.TempDir()
	if err := s.Capture(dir, names...); err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		live := mustInspect(t, s, n)
		got := mustInspect(t, loaded, n)
		// Counters move between the two reads; everything else must match.
		opt := cmpopts.IgnoreFields(Interface{}, "Counters", "DriverStats", "Key")
		if diff := cmp.Diff(live, got, opt); diff != "" {
			t.Errorf("%s: live vs captured (-live +captured):\n%s", n, diff)
		}
	}
}

func TestInterfaceForLoopback(t *testing.T) {
	for _, a := range []string{"127.0.0.1", "::1"} {
		r, err := InterfaceFor(netip.MustParseAddr(a))
		if err != nil {
			t.Fatal(err)
		}
		if r.Iface != "lo" || r.Gateway.IsValid() {
			t.Errorf("InterfaceFor(%s) = %+v, want lo without gateway", a, r)
		}
	}
}

// TestInterfaceForGateway looks up a route through a gateway inside the veth's
// namespace.
func TestInterfaceForGateway(t *testing.T) {
	v := newVeth(t)
	addr, _ := netlink.ParseAddr("198.18.0.1/30")
	if err := v.peerHandle.AddrAdd(v.peerLink, addr); err != nil {
		t.Fatal(err)
	}
	_, dst, _ := net.ParseCIDR("198.19.7.0/24")
	if err := v.peerHandle.RouteAdd(&netlink.Route{LinkIndex: v.PeerIndex, Dst: dst, Gw: net.ParseIP("198.18.0.2")}); err != nil {
		t.Fatal(err)
	}
	var r *Route
	var lookupErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		// Not unlocked: if restoring the namespace fails the thread dies with us.
		orig, err := netns.Get()
		if err != nil {
			lookupErr = err
			return
		}
		defer orig.Close()
		if err := netns.Set(v.NS); err != nil {
			lookupErr = err
			return
		}
		r, lookupErr = InterfaceFor(netip.MustParseAddr("198.19.7.9"))
		if err := netns.Set(orig); err == nil {
			runtime.UnlockOSThread()
		}
	}()
	<-done
	if lookupErr != nil {
		t.Fatal(lookupErr)
	}
	want := &Route{Dst: netip.MustParseAddr("198.19.7.9"), Iface: v.Peer, Index: v.PeerIndex,
		Gateway: netip.MustParseAddr("198.18.0.2"), Src: netip.MustParseAddr("198.18.0.1")}
	if diff := cmp.Diff(want, r, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("route (-want +got):\n%s", diff)
	}
}

// BenchmarkSnapshotVeth measures one snapshot of a veth (issue 3 asks < 5 ms).
func BenchmarkSnapshotVeth(b *testing.B) {
	v := newVeth(b)
	s := openLive(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Snapshot(v.Name); err != nil {
			b.Fatal(err)
		}
	}
}
