package afxdp_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/blastnet/blast/bpf"
	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/engine/afxdp"
	"github.com/blastnet/blast/internal/netlab"
)

const (
	port     = 5001
	sentinel = 4
)

// noXDPLeft fails t if an XDP program is still attached to a lab interface.
func noXDPLeft(t *testing.T, lab *netlab.Lab) {
	t.Helper()
	for _, h := range []*netlab.Host{lab.A, lab.B} {
		h.Do(func() error {
			l, err := netlink.LinkByName(h.Iface)
			if err != nil {
				t.Errorf("%s: %v", h.Iface, err)
				return nil
			}
			if x := l.Attrs().Xdp; x != nil && (x.Attached || x.ProgId != 0) {
				t.Errorf("%s: XDP program %d still attached", h.Iface, x.ProgId)
			}
			return nil
		})
	}
}

// resources counts the process's AF_XDP sockets and BPF objects (by fd)
// and the package's live mappings.
func resources(t *testing.T) (fds int, maps int64) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		l, _ := os.Readlink("/proc/self/fd/" + e.Name())
		if strings.HasPrefix(l, "anon_inode:bpf") || strings.HasPrefix(l, "socket:") {
			fds++
		}
	}
	return fds, afxdp.LiveMaps()
}

// sink is a socket receiver in host h counting datagrams and sequence
// numbers until an end sentinel or ctx.
type sink struct {
	conn  *net.UDPConn
	n     atomic.Int64
	seq   afxdp.Seq
	done  chan struct{}
	bytes atomic.Int64
}

func newSink(t *testing.T, h *netlab.Host) *sink {
	t.Helper()
	s := &sink{done: make(chan struct{})}
	err := h.Do(func() error {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: h.Addr4.AsSlice(), Port: port})
		s.conn = c
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	s.conn.SetReadBuffer(8 << 20)
	t.Cleanup(func() { s.conn.Close() })
	go func() {
		defer close(s.done)
		buf := make([]byte, 65536)
		for {
			s.conn.SetReadDeadline(time.Now().Add(3 * time.Second))
			n, err := s.conn.Read(buf)
			if err != nil || n <= sentinel {
				return
			}
			s.n.Add(1)
			s.bytes.Add(int64(n))
			s.seq.Add(binary.BigEndian.Uint32(buf[8:12]))
		}
	}()
	return s
}

// dial makes the connected UDP socket an afxdp sender takes its
// addresses from.
func dial(t *testing.T, from, to *netlab.Host) net.Conn {
	t.Helper()
	var c net.Conn
	err := from.Do(func() error {
		var err error
		c, err = net.Dial("udp4", net.JoinHostPort(to.Addr4.String(), "5001"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func send(ctx context.Context, h *netlab.Host, b engine.Backend, f *engine.Flow) error {
	return h.Do(func() error { return b.Send(ctx, f) })
}

func TestTransmitToSocket(t *testing.T) {
	for _, threads := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d threads", threads), func(t *testing.T) { transmitToSocket(t, threads) })
	}
}

// transmitToSocket sends from threads senders (beyond the first, on
// sockets sharing the queue's UMEM) to a socket receiver.
func transmitToSocket(t *testing.T, threads int) {
	lab := netlab.ForTest(t, netlab.Direct, netlab.Options{})
	fds, maps := resources(t)
	s := newSink(t, lab.B)
	const n = 3000
	conn := dial(t, lab.A, lab.B)
	f := &engine.Flow{Conn: conn, Stats: &engine.Counters{},
		Spec: &engine.Spec{Protocol: engine.UDP, BufLen: 64, Bytes: n * 64, Rate: 20000 * 64 * 8}}
	if err := send(t.Context(), lab.A, afxdp.Backend{Threads: threads}, f); err != nil {
		t.Fatal(err)
	}
	conn.Write([]byte("end!"))
	<-s.done
	st := f.Stats.Snapshot()
	if st.Datagrams != n || st.Bytes != n*64 {
		t.Errorf("sender counted %d datagrams, %d bytes; want %d, %d", st.Datagrams, st.Bytes, n, n*64)
	}
	if got := s.n.Load(); got != n {
		t.Errorf("socket received %d datagrams, want %d", got, n)
	}
	if s.seq.Lost() != 0 || s.seq.Lo != 1 || s.seq.Hi != n {
		t.Errorf("sequence %d..%d, %d lost", s.seq.Lo, s.seq.Hi, s.seq.Lost())
	}
	facts, _ := engine.FlowFacts(f)
	t.Logf("facts: %v", facts.Lines())
	conn.Close()
	s.conn.Close()
	if f2, m2 := resources(t); f2 > fds || m2 > maps {
		t.Errorf("fds %d -> %d, mappings %d -> %d: something leaked", fds, f2, maps, m2)
	}
}

// recvFlow starts an afxdp receiver in h and waits until its program is
// attached.
func recvFlow(t *testing.T, h *netlab.Host, b engine.Backend) (*engine.Flow, chan error) {
	t.Helper()
	var c *net.UDPConn
	err := h.Do(func() error {
		var err error
		c, err = net.ListenUDP("udp4", &net.UDPAddr{IP: h.Addr4.AsSlice(), Port: port})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	f := &engine.Flow{Conn: c, Stats: &engine.Counters{},
		Spec: &engine.Spec{Protocol: engine.UDP, BufLen: 2048, SentinelMax: sentinel}}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	errc := make(chan error, 1)
	go func() { errc <- h.Do(func() error { return b.Recv(ctx, f) }) }()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		facts, _ := engine.FlowFacts(f)
		for _, n := range facts.Notes {
			if strings.Contains(n, "XDP program attached") {
				return f, errc
			}
		}
		select {
		case err := <-errc:
			t.Fatalf("receiver ended early: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("the receiver did not attach its program")
	return nil, nil
}

func TestSocketToReceiver(t *testing.T) {
	lab := netlab.ForTest(t, netlab.Direct, netlab.Options{})
	f, errc := recvFlow(t, lab.B, afxdp.Backend{})
	conn := dial(t, lab.A, lab.B)
	const n = 2000
	buf := make([]byte, 100)
	for i := range n {
		binary.BigEndian.PutUint32(buf[8:], uint32(i+1))
		if _, err := conn.Write(buf); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	conn.Write([]byte("end!"))
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	st := f.Stats.Snapshot()
	facts, _ := engine.FlowFacts(f)
	t.Logf("facts: %v", facts.Lines())
	if st.Datagrams != n || st.Bytes != n*100 {
		t.Errorf("received %d datagrams, %d bytes; want %d, %d", st.Datagrams, st.Bytes, n, n*100)
	}
	if lost := facts.Counts["lost_datagrams"]; lost != 0 {
		t.Errorf("%d lost", lost)
	}
	noXDPLeft(t, lab)
}

func afxdpToAfxdp(t *testing.T, queues int) {
	lab := netlab.ForTest(t, netlab.Direct, netlab.Options{Queues: queues})
	fds, maps := resources(t)
	f, errc := recvFlow(t, lab.B, afxdp.Backend{})
	conn := dial(t, lab.A, lab.B)
	const n = 20000
	tf := &engine.Flow{Conn: conn, Stats: &engine.Counters{},
		Spec: &engine.Spec{Protocol: engine.UDP, BufLen: 64, Bytes: n * 64, Rate: 100000 * 64 * 8}}
	if err := send(t.Context(), lab.A, afxdp.Backend{Queues: queues}, tf); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	conn.Write([]byte("end!"))
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	st := f.Stats.Snapshot()
	facts, _ := engine.FlowFacts(f)
	t.Logf("receiver: %v", facts.Lines())
	tfacts, _ := engine.FlowFacts(tf)
	t.Logf("sender: %v", tfacts.Lines())
	if st.Datagrams != n {
		t.Errorf("received %d datagrams, want %d", st.Datagrams, n)
	}
	if lost := facts.Counts["lost_datagrams"]; lost != 0 {
		t.Errorf("%d lost", lost)
	}
	noXDPLeft(t, lab)
	conn.Close()
	f.Conn.Close()
	if f2, m2 := resources(t); f2 > fds || m2 > maps {
		t.Errorf("fds %d -> %d, mappings %d -> %d: something leaked", fds, f2, maps, m2)
	}
}

func TestAfxdpToAfxdp(t *testing.T)           { afxdpToAfxdp(t, 1) }
func TestAfxdpToAfxdpMultiQueue(t *testing.T) { afxdpToAfxdp(t, 2) }

func TestErrors(t *testing.T) {
	lab := netlab.ForTest(t, netlab.Direct, netlab.Options{})
	var ifindex int
	lab.A.Do(func() error {
		l, err := netlink.LinkByName(lab.A.Iface)
		if err == nil {
			ifindex = l.Attrs().Index
		}
		return err
	})
	t.Run("zero-copy on veth", func(t *testing.T) {
		err := lab.A.Do(func() error {
			s, err := afxdp.Open(afxdp.SocketConfig{Ifindex: ifindex, Iface: lab.A.Iface, TX: true, ZeroCopy: true})
			if err == nil {
				s.Close()
			}
			return err
		})
		if !errors.Is(err, engine.ErrNotSupported) || !strings.Contains(err.Error(), "zero-copy") {
			t.Errorf("err = %v, want a zero-copy refusal wrapping ErrNotSupported", err)
		}
	})
	t.Run("queue out of range", func(t *testing.T) {
		err := lab.A.Do(func() error {
			s, err := afxdp.Open(afxdp.SocketConfig{Ifindex: ifindex, Iface: lab.A.Iface, TX: true, Queue: 7})
			if err == nil {
				s.Close()
			}
			return err
		})
		if err == nil || !strings.Contains(err.Error(), "queue 7") {
			t.Errorf("err = %v, want one naming queue 7", err)
		}
	})
	t.Run("no such interface", func(t *testing.T) {
		c := dial(t, lab.A, lab.B)
		f := &engine.Flow{Conn: c, Stats: &engine.Counters{}, Spec: &engine.Spec{Protocol: engine.UDP, BufLen: 64, Bytes: 64}}
		err := send(t.Context(), lab.A, afxdp.Backend{Iface: "nosuch0"}, f)
		if err == nil || !strings.Contains(err.Error(), "no such interface") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("program already attached", func(t *testing.T) {
		err := lab.B.Do(func() error {
			l, err := netlink.LinkByName(lab.B.Iface)
			if err != nil {
				return err
			}
			other, err := bpf.Load(9999, 1)
			if err != nil {
				return err
			}
			defer other.Close()
			if _, err := other.Attach(l.Attrs().Index, false); err != nil {
				return err
			}
			info, err := other.Prog.Info()
			if err != nil {
				return err
			}
			id, _ := info.ID()
			c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: lab.B.Addr4.AsSlice(), Port: port})
			if err != nil {
				return err
			}
			defer c.Close()
			f := &engine.Flow{Conn: c, Stats: &engine.Counters{}, Spec: &engine.Spec{Protocol: engine.UDP, BufLen: 64, SentinelMax: 4}}
			err = afxdp.Backend{}.Recv(t.Context(), f)
			if err == nil || !strings.Contains(err.Error(), "id "+strconv.Itoa(int(id))) {
				t.Errorf("err = %v, want one naming program id %d", err, id)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		noXDPLeft(t, lab)
	})
}

// rxPackets reads the packets h's lab interface received.
func rxPackets(b *testing.B, h *netlab.Host) (n uint64) {
	h.Do(func() error {
		l, err := netlink.LinkByName(h.Iface)
		if err != nil {
			b.Fatal(err)
		}
		n = l.Attrs().Statistics.RxPackets
		return nil
	})
	return n
}

// BenchmarkTransmit measures AF_XDP transmit of 64-byte frames (60 bytes
// without the FCS: an 18-byte payload) from A over the veth for 2 s, and
// trafgen (netsniff-ng) sending the same frames from the same namespace
// when it is installed, both counted by B's interface. The frames carry a
// destination MAC that is not B's (BLAST_BENCH_PEER_STACK=1: B's own), so
// B's stack drops them at once and the sender is what is measured.
func BenchmarkTransmit(b *testing.B) {
	lab := netlab.ForTest(b, netlab.Direct, netlab.Options{})
	var conn net.Conn
	lab.A.Do(func() error {
		var err error
		conn, err = net.Dial("udp4", net.JoinHostPort(lab.B.Addr4.String(), "5001"))
		return err
	})
	defer conn.Close()
	mac := net.HardwareAddr{0x02, 0xbb, 0, 0, 0, 1}
	if os.Getenv("BLAST_BENCH_PEER_STACK") != "" {
		lab.B.Do(func() error {
			i, err := net.InterfaceByName(lab.B.Iface)
			if err == nil {
				mac = i.HardwareAddr
			}
			return err
		})
	}
	const d = 2 * time.Second
	var pps float64
	for b.Loop() {
		f := &engine.Flow{Conn: conn, Stats: &engine.Counters{},
			Spec: &engine.Spec{Protocol: engine.UDP, BufLen: 18, Duration: d}}
		r0, start := rxPackets(b, lab.B), time.Now()
		if err := send(b.Context(), lab.A, afxdp.Backend{DstMAC: mac}, f); err != nil {
			b.Fatal(err)
		}
		pps = float64(rxPackets(b, lab.B)-r0) / time.Since(start).Seconds()
		facts, _ := engine.FlowFacts(f)
		b.Logf("afxdp sent %d frames: %v", f.Stats.Snapshot().Datagrams, facts.Lines())
	}
	b.ReportMetric(pps, "afxdp-pps")
	if _, err := exec.LookPath("trafgen"); err != nil {
		b.Log("no trafgen: apt-get install netsniff-ng to compare")
		return
	}
	cfg := "{ eth(da=" + mac.String() + "), ipv4(saddr=" + lab.A.Addr4.String() + ", daddr=" + lab.B.Addr4.String() +
		"), udp(sp=40000, dp=5001), fill(0x41, 18) }"
	cmd := lab.A.Command("timeout", "-s", "INT", d.String(), "trafgen", "--dev", lab.A.Iface, "--conf", "/dev/stdin", "-q", "--no-sock-mem")
	cmd.Stdin = strings.NewReader(cfg)
	var sb strings.Builder
	cmd.Stdout, cmd.Stderr = &sb, &sb
	r0, start := rxPackets(b, lab.B), time.Now()
	if err := cmd.Run(); err != nil && !strings.Contains(err.Error(), "exit status") {
		b.Fatal(err)
	}
	tpps := float64(rxPackets(b, lab.B)-r0) / time.Since(start).Seconds()
	b.ReportMetric(tpps, "trafgen-pps")
	b.ReportMetric(pps/tpps, "x-trafgen")
}
