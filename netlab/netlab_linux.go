package netlab

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

type nsHandle = netns.NsHandle

const (
	netnsDir = "/run/netns"
	prefix   = "blast-"
)

var labSeq atomic.Int64

// New builds a lab. On error nothing of it is left behind.
func New(topo Topology, opt Options) (lab *Lab, err error) {
	if err := needRoot(); err != nil {
		return nil, err
	}
	if err := opt.check(topo); err != nil {
		return nil, err
	}
	lab = &Lab{Topology: topo, Options: opt, seq: nextLab()}
	defer func() {
		if err != nil {
			lab.Close()
			lab = nil
		}
	}()
	if lab.A, err = lab.newHost("a"); err != nil {
		return lab, err
	}
	if lab.B, err = lab.newHost("b"); err != nil {
		return lab, err
	}
	switch topo {
	case Direct:
		if err = lab.join(lab.A, lab.vname("a"), lab.B, lab.vname("b"), 0, 1, 2); err != nil {
			return lab, err
		}
	case Routed:
		if lab.Router, err = lab.newHost("r"); err != nil {
			return lab, err
		}
		r := lab.Router
		if err = lab.join(lab.A, lab.vname("a"), r, lab.vname("ra"), 1, 1, 254); err != nil {
			return lab, err
		}
		if err = lab.join(r, lab.vname("rb"), lab.B, lab.vname("b"), 2, 254, 2); err != nil {
			return lab, err
		}
		r.Iface, r.Addr4, r.Addr6 = lab.vname("ra"), addr4(1, 254), addr6(1, 254)
		if err = r.Do(enableForwarding); err != nil {
			return lab, fmt.Errorf("netlab: router forwarding: %w", err)
		}
		if err = lab.A.route(2, addr4(1, 254), addr6(1, 254)); err != nil {
			return lab, err
		}
		if err = lab.B.route(1, addr4(2, 254), addr6(2, 254)); err != nil {
			return lab, err
		}
	case Delayed:
		if lab.Router, err = lab.newHost("r"); err != nil {
			return lab, err
		}
		if err = lab.delayed(lab.vname("a"), lab.vname("ra"), lab.vname("rb"), lab.vname("b")); err != nil {
			return lab, err
		}
	default:
		return lab, fmt.Errorf("netlab: unknown topology %d", topo)
	}
	return lab, nil
}

// needRoot says why a lab cannot be built when this process is not root.
func needRoot() error {
	if os.Geteuid() != 0 {
		return errors.New("netlab: building a lab needs root (network namespaces and veth pairs)")
	}
	return nil
}

// nextLab removes stale labs and numbers a new one.
func nextLab() int64 {
	sweepStale()
	return labSeq.Add(1)
}

// newHost creates the lab's namespace for role, with its loopback up.
func (l *Lab) newHost(role string) (*Host, error) {
	name := fmt.Sprintf("%s%d-%d-%s", prefix, os.Getpid(), l.seq, role)
	ns, err := newNamedNS(name)
	if err != nil {
		return nil, fmt.Errorf("netlab: create namespace %s: %w", name, err)
	}
	h := &Host{Name: name, lab: l, ns: ns}
	l.hosts = append(l.hosts, h)
	return h, h.linkUp("lo")
}

// vname names one of the lab's veth ends (or other links). Names must fit
// in 15 bytes: "bl" + pid/seq in hex + a role of 2 bytes at most.
func (l *Lab) vname(role string) string { return fmt.Sprintf("bl%x.%x%s", os.Getpid(), l.seq, role) }

// addr4 is 198.18.<subnet>.<host>; addr6 is 2001:2:0:<subnet>::<host>.
func addr4(subnet, host byte) netip.Addr { return netip.AddrFrom4([4]byte{198, 18, subnet, host}) }
func addr6(subnet, host byte) netip.Addr {
	return netip.AddrFrom16([16]byte{0x20, 0x01, 0, 2, 0, 0, 0, subnet, 15: host})
}

// join links x and y with a veth pair on subnet, x getting host number hx
// and y hy; A and B take the addresses as theirs.
func (l *Lab) join(x *Host, xName string, y *Host, yName string, subnet, hx, hy byte) error {
	hdl, err := netlink.NewHandleAt(x.ns)
	if err != nil {
		return fmt.Errorf("netlab: netlink in %s: %w", x.Name, err)
	}
	defer hdl.Close()
	q := l.Options.Queues
	if q < 1 {
		q = 1
	}
	veth := &netlink.Veth{
		LinkAttrs:       netlink.LinkAttrs{Name: xName, NumTxQueues: q, NumRxQueues: q},
		PeerName:        yName,
		PeerNamespace:   netlink.NsFd(int(y.ns)),
		PeerNumTxQueues: uint32(q),
		PeerNumRxQueues: uint32(q),
	}
	if err := hdl.LinkAdd(veth); err != nil {
		return fmt.Errorf("netlab: add veth %s-%s: %w", xName, yName, err)
	}
	for _, e := range []struct {
		h    *Host
		name string
		host byte
	}{{x, xName, hx}, {y, yName, hy}} {
		if err := e.h.configure(e.name, addr4(subnet, e.host), addr6(subnet, e.host), l.Options.RateMbit); err != nil {
			return err
		}
		if e.h != l.Router {
			e.h.Iface, e.h.Addr4, e.h.Addr6 = e.name, addr4(subnet, e.host), addr6(subnet, e.host)
		}
	}
	return nil
}

// configure addresses and raises iface in h, with an optional rate limit.
func (h *Host) configure(iface string, a4, a6 netip.Addr, rateMbit int) error {
	hdl, link, err := h.handle(iface)
	if err != nil {
		return err
	}
	defer hdl.Close()
	for _, a := range []struct {
		ip   netip.Addr
		bits int
	}{{a4, 24}, {a6, 64}} {
		addr := &netlink.Addr{IPNet: &net.IPNet{IP: a.ip.AsSlice(), Mask: net.CIDRMask(a.bits, a.ip.BitLen())}}
		if a.ip.Is6() {
			addr.Flags = unix.IFA_F_NODAD // usable at once, no 2 s of duplicate detection
		}
		if err := hdl.AddrAdd(link, addr); err != nil {
			return fmt.Errorf("netlab: address %s on %s: %w", a.ip, iface, err)
		}
	}
	if rateMbit > 0 {
		if err := hdl.QdiscAdd(tbf(link.Attrs().Index, rateMbit)); err != nil {
			return fmt.Errorf("netlab: rate limit %d Mbit/s on %s: %w", rateMbit, iface, err)
		}
	}
	if err := hdl.LinkSetUp(link); err != nil {
		return fmt.Errorf("netlab: bring up %s: %w", iface, err)
	}
	return nil
}

// handle opens a netlink handle in h and finds iface with it; the
// caller closes the handle.
func (h *Host) handle(iface string) (*netlink.Handle, netlink.Link, error) {
	hdl, err := netlink.NewHandleAt(h.ns)
	if err != nil {
		return nil, nil, fmt.Errorf("netlab: netlink in %s: %w", h.Name, err)
	}
	link, err := hdl.LinkByName(iface)
	if err != nil {
		hdl.Close()
		return nil, nil, fmt.Errorf("netlab: find %s in %s: %w", iface, h.Name, err)
	}
	return hdl, link, nil
}

// tbf is a token bucket that holds a link to rateMbit: a burst of 1/250 s
// of traffic (at least 64 KiB, so GSO-sized packets pass) and 50 ms of
// queue.
func tbf(ifindex, rateMbit int) *netlink.Tbf {
	rate := uint64(rateMbit) * 1000 * 1000 / 8
	burst := max(uint32(rate/250), 64<<10)
	return &netlink.Tbf{
		QdiscAttrs: netlink.QdiscAttrs{LinkIndex: ifindex, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT},
		Rate:       rate,
		Limit:      uint32(rate/20) + burst,
		Buffer:     netlink.Xmittime(rate, burst),
	}
}

func (h *Host) linkUp(name string) error {
	hdl, err := netlink.NewHandleAt(h.ns)
	if err != nil {
		return fmt.Errorf("netlab: netlink in %s: %w", h.Name, err)
	}
	defer hdl.Close()
	link, err := hdl.LinkByName(name)
	if err == nil {
		err = hdl.LinkSetUp(link)
	}
	if err != nil {
		return fmt.Errorf("netlab: bring up %s in %s: %w", name, h.Name, err)
	}
	return nil
}

// route sends traffic for the far subnet through gw4/gw6.
func (h *Host) route(subnet byte, gw4, gw6 netip.Addr) error {
	hdl, err := netlink.NewHandleAt(h.ns)
	if err != nil {
		return fmt.Errorf("netlab: netlink in %s: %w", h.Name, err)
	}
	defer hdl.Close()
	for _, r := range []struct {
		dst netip.Prefix
		gw  netip.Addr
	}{{netip.PrefixFrom(addr4(subnet, 0), 24), gw4}, {netip.PrefixFrom(addr6(subnet, 0), 64), gw6}} {
		dst := &net.IPNet{IP: r.dst.Addr().AsSlice(), Mask: net.CIDRMask(r.dst.Bits(), r.dst.Addr().BitLen())}
		if err := hdl.RouteAdd(&netlink.Route{Dst: dst, Gw: r.gw.AsSlice()}); err != nil {
			return fmt.Errorf("netlab: route %s via %s in %s: %w", r.dst, r.gw, h.Name, err)
		}
	}
	return nil
}

func enableForwarding() error {
	for _, f := range []string{"/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/ipv6/conf/all/forwarding"} {
		if err := os.WriteFile(f, []byte("1\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Do runs fn with the calling goroutine inside h's namespace: sockets fn
// creates belong to h and keep working after Do returns, from any
// goroutine. Goroutines fn starts do not inherit the namespace.
func (h *Host) Do(fn func() error) error {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netlab: current namespace: %w", err)
	}
	defer orig.Close()
	if err := netns.Set(h.ns); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netlab: enter %s: %w", h.Name, err)
	}
	ferr := fn()
	if err := netns.Set(orig); err != nil {
		// Leave the thread locked: the runtime retires it with the
		// goroutine instead of reusing a thread in the wrong namespace.
		return errors.Join(ferr, fmt.Errorf("netlab: leave %s: %w", h.Name, err))
	}
	runtime.UnlockOSThread()
	return ferr
}

// Cmd is a command that runs inside a lab host's namespace.
type Cmd struct {
	*exec.Cmd
	host *Host
	// exited is closed when the command has ended (not reaped: its
	// owner's Wait, on the exec.Cmd, does that).
	exited chan struct{}
}

// Command prepares name with args to run inside h. It runs through
// `ip netns exec`, which also mounts the namespace's own /sys, so the
// command sees its namespace's interfaces there (blast's NIC inspector
// reads them).
func (h *Host) Command(name string, args ...string) *Cmd {
	c := exec.Command("ip", append([]string{"netns", "exec", h.Name, name}, args...)...)
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return &Cmd{Cmd: c, host: h}
}

// Start starts the command; the lab kills it at Close if it still runs,
// and waits for it. Its pid is the command's own (ip execs it in place).
//
// The kernel sends Pdeathsig when the thread that forked the command
// exits, not the process, and Go ends a thread that a goroutine locked
// and never unlocked (engine.Run's flows): a command forked from a
// thread that went on to carry a flow was killed mid-test with no word
// (iperf3 -s died of SIGKILL in 1 of 4 blast client -u -R tests through
// a lossy lab, and in TestLabShapedRatesIperf3). It is forked from a
// thread locked for the purpose, which stays until the command exits.
func (c *Cmd) Start() error {
	started := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := c.Cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		// Wait for the exit without reaping it: the exec.Cmd's Wait,
		// by whoever owns the command, does that.
		var info unix.Siginfo
		for unix.Waitid(unix.P_PID, c.Cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
		}
		close(exited)
	}()
	if err := <-started; err != nil {
		return err
	}
	c.exited = exited
	l := c.host.lab
	l.mu.Lock()
	l.cmds = append(l.cmds, c)
	l.mu.Unlock()
	return nil
}

// Run starts the command and waits for it.
func (c *Cmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.Wait()
}

// Output runs the command and returns its standard output.
func (c *Cmd) Output() ([]byte, error) {
	var out strings.Builder
	c.Stdout = &out
	err := c.Run()
	return []byte(out.String()), err
}

// CombinedOutput runs the command and returns its standard output and
// standard error together.
func (c *Cmd) CombinedOutput() ([]byte, error) {
	var out strings.Builder
	c.Stdout = &out
	c.Stderr = &out
	err := c.Run()
	return []byte(out.String()), err
}

// Close kills the lab's commands that are still running and removes its
// namespaces (and with them every veth, address, route and qdisc).
func (l *Lab) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	cmds := l.cmds
	l.cmds = nil
	l.mu.Unlock()
	for _, c := range cmds {
		c.Process.Kill() // fails, harmlessly, for one that has ended
	}
	for _, c := range cmds {
		<-c.exited // no process of the lab outlives Close
	}
	var errs []error
	if l.stop != nil {
		errs = append(errs, l.stop()) // its sockets would keep R's namespace alive
		l.stop = nil
	}
	for _, h := range l.hosts {
		h.ns.Close()
		if err := netns.DeleteNamed(h.Name); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("netlab: remove namespace %s: %w", h.Name, err))
		}
		errs = append(errs, removeEtc(h.Name))
	}
	l.hosts = nil
	return errors.Join(errs...)
}

// netnsDirMu serialises this process's check that /run/netns is a
// shared mount point of its own.
var netnsDirMu sync.Mutex

// shareNetnsDir makes /run/netns a shared mount point of its own, as
// `ip netns add` does, before a lab pins a namespace there. Were it a
// plain directory, the first `ip netns add` on the host while a lab lives
// would bind /run/netns over itself, recursively: the lab's pins get
// copies on top, and the originals beneath are out of reach. Close would
// unmount only the copy, and the file, still a mount point beneath,
// could not be removed (EBUSY): the namespace would leak. Once the
// directory is a shared mount point, iproute2 binds nothing over it, and
// an unmount in any peer propagates to the others.
func shareNetnsDir() error {
	netnsDirMu.Lock()
	defer netnsDirMu.Unlock()
	if err := os.MkdirAll(netnsDir, 0o755); err != nil {
		return err
	}
	err := unix.Mount("", netnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if errors.Is(err, unix.EINVAL) { // not a mount point yet
		if err = unix.Mount(netnsDir, netnsDir, "none", unix.MS_BIND|unix.MS_REC, ""); err == nil {
			err = unix.Mount("", netnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
		}
	}
	if err != nil {
		return fmt.Errorf("make %s a shared mount point: %w", netnsDir, err)
	}
	return nil
}

// newNamedNS creates a network namespace pinned at /run/netns/name without
// moving the caller out of its own.
func newNamedNS(name string) (nsHandle, error) {
	if err := shareNetnsDir(); err != nil {
		return netns.None(), err
	}
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return netns.None(), err
	}
	defer orig.Close()
	ns, err := netns.NewNamed(name)
	if serr := netns.Set(orig); serr != nil {
		if ns.IsOpen() {
			ns.Close()
			netns.DeleteNamed(name)
		}
		return netns.None(), errors.Join(err, serr) // thread stays locked: see Do
	}
	runtime.UnlockOSThread()
	return ns, err
}

// sweepStale removes the namespaces, and their files in /etc/netns, of
// labs whose process is gone (a test binary killed before its cleanup ran).
func sweepStale() {
	for _, dir := range []string{netnsDir, etcNetnsDir} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			rest, ok := strings.CutPrefix(e.Name(), prefix)
			if !ok {
				continue
			}
			pidStr, _, _ := strings.Cut(rest, "-")
			pid, err := strconv.Atoi(pidStr)
			if err != nil || pid == os.Getpid() {
				continue
			}
			if _, err := os.Stat(filepath.Join("/proc", pidStr)); err == nil {
				continue // its owner still runs
			}
			if dir == netnsDir {
				// The file goes even when it is no mount point (any
				// more): a lab whose process died mid-Close.
				p := filepath.Join(netnsDir, e.Name())
				unix.Unmount(p, unix.MNT_DETACH)
				os.Remove(p)
			} else {
				removeEtc(e.Name())
			}
		}
	}
}
