package netlab_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

// connect opens a TCP connection from src to dst's address to and checks
// that it arrives from src's own address of the same family.
func connect(t *testing.T, src, dst *netlab.Host, to netip.Addr) {
	t.Helper()
	var ln *net.TCPListener
	if err := dst.Do(func() (err error) {
		ln, err = net.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.AddrPortFrom(to, 0)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var c net.Conn
	if err := src.Do(func() (err error) {
		c, err = net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		return err
	}); err != nil {
		t.Errorf("%s to %s: %v", src.Name, ln.Addr(), err)
		return
	}
	defer c.Close()
	ln.SetDeadline(time.Now().Add(5 * time.Second))
	a, err := ln.Accept()
	if err != nil {
		t.Errorf("%s to %s: accept: %v", src.Name, ln.Addr(), err)
		return
	}
	defer a.Close()
	from := src.Addr4
	if to.Is6() {
		from = src.Addr6
	}
	if got := a.RemoteAddr().(*net.TCPAddr).AddrPort().Addr(); got != from {
		t.Errorf("%s to %s: the connection came from %s, want %s", src.Name, ln.Addr(), got, from)
	}
}

func TestBridgedMesh(t *testing.T) {
	for _, n := range []int{4, netlab.MaxBridgeHosts} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			lab := labtest.NewBridged(t, n, netlab.BridgeOptions{})
			t.Log(lab)
			if len(lab.Hosts) != n {
				t.Fatalf("%d hosts, want %d", len(lab.Hosts), n)
			}
			var got, want []string
			for i, h := range lab.Hosts {
				got = append(got, h.Addr4.String(), h.Addr6.String())
				want = append(want, fmt.Sprintf("198.18.10.%d", i+1), fmt.Sprintf("2001:2:0:a::%x", i+1))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("addresses (-want +got)\n%s", diff)
			}
			for _, dst := range lab.Hosts {
				for _, src := range lab.Hosts {
					// Every pair of 4 hosts; of 32, every host to and from the last.
					if src == dst || n > 4 && src != lab.Hosts[n-1] && dst != lab.Hosts[n-1] {
						continue
					}
					connect(t, src, dst, dst.Addr4)
					connect(t, src, dst, dst.Addr6)
				}
			}
		})
	}
}

// rate sends over TCP from src to dst's address to for d and returns the
// rate dst received at, in Mbit/s, from its first byte to the end.
func rate(t *testing.T, src, dst *netlab.Host, to netip.Addr, d time.Duration) float64 {
	t.Helper()
	var ln net.Listener
	if err := dst.Do(func() (err error) {
		ln, err = net.Listen("tcp", netip.AddrPortFrom(to, 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct {
		n       int64
		elapsed time.Duration
		err     error
	}
	got := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer c.Close()
		buf := make([]byte, 256<<10)
		if _, err := c.Read(buf); err != nil {
			got <- result{err: err}
			return
		}
		start := time.Now() // the rate counts what follows the first read
		n, err := io.CopyBuffer(io.Discard, c, buf)
		got <- result{n, time.Since(start), err}
	}()
	var c net.Conn
	if err := src.Do(func() (err error) {
		c, err = net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		return err
	}); err != nil {
		t.Fatalf("%s to %s: %v", src.Name, ln.Addr(), err)
	}
	c.SetWriteDeadline(time.Now().Add(d))
	_, err := io.Copy(c, zeros{})
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("%s to %s: %v", src.Name, ln.Addr(), err)
	}
	c.Close()
	r := <-got
	if r.err != nil {
		t.Fatalf("%s to %s: %v", src.Name, ln.Addr(), r.err)
	}
	return float64(r.n) * 8 / r.elapsed.Seconds() / 1e6
}

// tbfs counts the token buckets of rate in h's namespace (any rate: 0).
func tbfs(t *testing.T, h *netlab.Host, rateMbit int) int {
	t.Helper()
	out, err := h.Command("tc", "qdisc", "show").Output()
	if err != nil {
		t.Fatalf("tc qdisc show in %s: %v", h.Name, err)
	}
	n := 0
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "qdisc tbf ") && (rateMbit == 0 || strings.HasPrefix(l, "qdisc tbf 1: ") && strings.Contains(l, " root ") && strings.Contains(l, fmt.Sprintf(" rate %dMbit ", rateMbit))) {
			n++
		}
	}
	return n
}

// TestBridgedShape limits one host of three to 100 Mbit/s: transfers to
// and from it run at most at that rate, and the token buckets are in that
// host and its switch port only; without the limit none is left. (That
// the others run far faster is the host's to decide:
// TestTimingBridgedShape.)
func TestBridgedShape(t *testing.T) {
	lab := labtest.NewBridged(t, 3, netlab.BridgeOptions{})
	a, b, c := lab.Hosts[0], lab.Hosts[1], lab.Hosts[2]
	for _, bad := range [][2]int{{-1, 100}, {3, 100}, {2, -1}} {
		if err := lab.Shape(bad[0], bad[1]); err == nil {
			t.Errorf("Shape(%d, %d) of a lab of 3 hosts succeeded", bad[0], bad[1])
		}
	}
	if err := lab.Shape(2, 100); err != nil {
		t.Fatal(err)
	}
	t.Log(lab)
	if got := [2]int{tbfs(t, c, 100), tbfs(t, lab.Switch, 100)}; got != [2]int{1, 1} {
		t.Errorf("100 Mbit/s token buckets in host 2 and the switch: %v, want one each", got)
	}
	if got := [3]int{tbfs(t, a, 0), tbfs(t, b, 0), tbfs(t, lab.Switch, 0)}; got != [3]int{0, 0, 1} {
		t.Errorf("token buckets in hosts 0 and 1 and the switch: %v, want none, none, the one of host 2's port", got)
	}
	const shaped = 110 // Mbit/s: the limit, some slack
	into := rate(t, a, c, c.Addr4, 500*time.Millisecond)
	out := rate(t, c, b, b.Addr6, 500*time.Millisecond)
	t.Logf("host 0 to 2: %.0f Mbit/s; 2 to 1: %.0f Mbit/s", into, out)
	if into > shaped || out > shaped {
		t.Errorf("to and from host 2, limited to 100 Mbit/s: %.0f and %.0f Mbit/s, want at most %d", into, out, shaped)
	}

	if err := lab.Shape(2, 0); err != nil {
		t.Fatal(err)
	}
	if got := [2]int{tbfs(t, c, 0), tbfs(t, lab.Switch, 0)}; got != [2]int{0, 0} {
		t.Errorf("token buckets in host 2 and the switch after Shape(2, 0): %v, want none", got)
	}
	if err := lab.Shape(2, 0); err != nil {
		t.Errorf("Shape(2, 0) of an unlimited host: %v", err)
	}
}

// TestBridgedHosts checks that commands in every host resolve the names
// WriteHosts gave them, and that the machine's own commands do not.
func TestBridgedHosts(t *testing.T) {
	lab := labtest.NewBridged(t, 3, netlab.BridgeOptions{})
	getent := func(h *netlab.Host, name string) string {
		t.Helper()
		cmd := exec.Command("getent", "hosts", name)
		if h != nil {
			cmd = h.Command("getent", "hosts", name).Cmd
		}
		out, err := cmd.Output()
		if err != nil {
			return fmt.Sprintf("(%v)", err)
		}
		return strings.Join(strings.Fields(string(out)), " ")
	}
	for _, v := range []string{"one", "two"} {
		var lines strings.Builder
		for i, h := range lab.Hosts {
			fmt.Fprintf(&lines, "%s %s-%d\n%s %s-%d-v6\n", h.Addr4, v, i, h.Addr6, v, i)
		}
		if err := lab.WriteHosts(lines.String()); err != nil {
			t.Fatal(err)
		}
		for _, h := range lab.Hosts {
			for i, peer := range lab.Hosts {
				for name, want := range map[string]string{
					fmt.Sprintf("%s-%d", v, i):    peer.Addr4.String(),
					fmt.Sprintf("%s-%d-v6", v, i): peer.Addr6.String(),
				} {
					if got := getent(h, name); got != want+" "+name {
						t.Errorf("getent hosts %s in %s: %q, want %q", name, h.Name, got, want+" "+name)
					}
				}
			}
			if got := getent(h, "localhost"); !strings.Contains(got+" ", " localhost ") {
				t.Errorf("getent hosts localhost in %s: %q, want localhost", h.Name, got)
			}
			if got := getent(h, "one-0"); v == "two" && !strings.HasPrefix(got, "(") {
				t.Errorf("getent hosts one-0 in %s after the hosts were written again: %q, want it unknown", h.Name, got)
			}
		}
		if got := getent(nil, v+"-0"); !strings.HasPrefix(got, "(") {
			t.Errorf("getent hosts %s-0 outside the lab: %q, want it unknown", v, got)
		}
	}
}

// TestBridgedCloseRemovesEverything checks that Close leaves no
// namespace, hosts file, process or descriptor behind, and that nothing
// keeps the lab's namespaces (and with them the bridge and veths) alive.
func TestBridgedCloseRemovesEverything(t *testing.T) {
	labtest.RequireRoot(t)
	_, statErr := os.Stat("/etc/netns")
	etcBefore := statErr == nil
	fds := openFDs(t)
	lab, err := netlab.NewBridged(4, netlab.BridgeOptions{RateMbit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.WriteHosts("198.18.10.1 h0\n"); err != nil {
		t.Fatal(err)
	}
	sleeper := lab.Hosts[3].Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	names := []string{lab.Switch.Name}
	inodes := map[string]bool{}
	for _, h := range append([]*netlab.Host{lab.Switch}, lab.Hosts...) {
		names = append(names, h.Name)
		var st syscall.Stat_t
		if err := syscall.Stat("/run/netns/"+h.Name, &st); err != nil {
			t.Fatal(err)
		}
		inodes[fmt.Sprintf("net:[%d]", st.Ino)] = true
	}
	if err := lab.Close(); err != nil {
		t.Fatal(err)
	}
	if err := lab.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- sleeper.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Errorf("a command the lab started still runs after Close")
	}
	for _, n := range names {
		for _, p := range []string{"/run/netns/" + n, "/etc/netns/" + n} {
			if _, err := os.Stat(p); err == nil {
				t.Errorf("%s still exists after Close", p)
			}
		}
	}
	if _, err := os.Stat("/etc/netns"); err == nil && !etcBefore {
		t.Errorf("/etc/netns was made for the lab and still exists after Close")
	}
	if got := openFDs(t); got != fds {
		t.Errorf("%d descriptors open after Close, %d before New", got, fds)
	}
	// A namespace lives while a process is in it or holds it open.
	refs, _ := filepath.Glob("/proc/[0-9]*/ns/net")
	fdRefs, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, p := range append(refs, fdRefs...) {
		if l, err := os.Readlink(p); err == nil && inodes[l] {
			t.Errorf("%s is still %s, a namespace of the closed lab", p, l)
		}
	}
}
