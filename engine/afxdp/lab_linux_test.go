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
	"github.com/blastnet/blast/engine/enginetest"
	"github.com/blastnet/blast/internal/testkit"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

const (
	port     = 5001
	sentinel = 4
)

// hang bounds every flow of these tests: a backend that hangs fails the
// test instead of hanging it. It is a hang detector, not a timing check.
const hang = 20 * time.Second

// noOpts are the socket options of every engine socket here.
var noOpts = engine.SockOpts{TOS: engine.NoTOS}

// TestConformance runs the engine's suite on afxdp, with sockets in a lab:
// afxdp needs an interface to attach XDP to and send frames out of, which
// loopback is not. The backend's end is in A, the plain peer in B.
func TestConformance(t *testing.T) {
	for _, c := range []struct {
		name string
		caps enginetest.Caps
	}{
		// It receives framed datagrams, and refuses to send them.
		{"defaults", enginetest.Caps{UDPSend: true, UDPRecv: true, Sink: true, Timeout: true, Batch: 256, FramingRecv: true}},
		// Three sending threads on one queue share the Sender's budget.
		{"threads", enginetest.Caps{UDPSend: true, UDPRecv: true, Sink: true, Timeout: true, Batch: 16, Options: "batch=16,threads=3", FramingRecv: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			lab := labtest.New(t, netlab.Direct, netlab.Options{})
			enginetest.RunWith(t, afxdp.Backend{}, c.caps, enginetest.Pairs{UDP: labPair(lab)})
			noXDPLeft(t, lab)
		})
	}
}

// labPair makes the suite's UDP pair: the backend's engine socket in A,
// connected to a plain socket in B.
func labPair(lab *netlab.Lab) func(t *testing.T) (*engine.Socket, *net.UDPConn) {
	return func(t *testing.T) (*engine.Socket, *net.UDPConn) {
		t.Helper()
		var peer *net.UDPConn
		err := lab.B.Do(func() error {
			var err error
			peer, err = net.ListenUDP("udp4", &net.UDPAddr{IP: lab.B.Addr4.AsSlice()})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		peer.SetReadBuffer(8 << 20)
		var mine *engine.Socket
		err = lab.A.Do(func() error {
			var err error
			mine, err = engine.Dial(t.Context(), "udp4", peer.LocalAddr().String(), engine.SockOpts{TOS: engine.NoTOS, RcvBuf: 8 << 20})
			return err
		})
		if err != nil {
			peer.Close()
			t.Fatal(err)
		}
		t.Cleanup(func() { mine.Close(); peer.Close() })
		return mine, peer
	}
}

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

// resources counts the process's sockets and BPF objects (by fd) and the
// package's live mappings.
func resources(t *testing.T) (fds int, maps int64) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		l, _ := os.Readlink("/proc/self/fd/" + e.Name())
		if strings.HasPrefix(l, "anon_inode:bpf") || strings.HasPrefix(l, "socket:") || strings.HasPrefix(l, "anon_inode:[eventfd]") {
			fds++
		}
	}
	return fds, afxdp.LiveMaps()
}

// checkNoLeak fails t if resources grew past fds, maps.
func checkNoLeak(t *testing.T, fds int, maps int64) {
	t.Helper()
	if f2, m2 := resources(t); f2 > fds || m2 > maps {
		t.Errorf("fds %d -> %d, mappings %d -> %d: something leaked", fds, f2, maps, m2)
	}
}

// sink is a socket receiver in host h counting datagrams and sequence
// numbers until an end sentinel or a quiet second.
type sink struct {
	conn  *net.UDPConn
	n     atomic.Int64
	bytes atomic.Int64
	seq   afxdp.Seq
	done  chan struct{}
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
			s.conn.SetReadDeadline(time.Now().Add(hang))
			n, err := s.conn.Read(buf)
			if err != nil || n <= sentinel {
				return
			}
			s.n.Add(1)
			s.bytes.Add(int64(n))
			var seq uint32
			if n >= afxdp.HeaderLen {
				seq = binary.BigEndian.Uint32(buf[8:12])
			}
			s.seq.Add(seq)
		}
	}()
	return s
}

// dial makes, in from, the connected engine socket an afxdp sender takes
// its addresses from.
func dial(t *testing.T, from, to *netlab.Host) *engine.Socket {
	t.Helper()
	var s *engine.Socket
	err := from.Do(func() error {
		var err error
		s, err = engine.Dial(t.Context(), "udp4", net.JoinHostPort(to.Addr4.String(), strconv.Itoa(port)), noOpts)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// listen makes, in h, the bound engine socket an afxdp receiver steers
// the port of.
func listen(t *testing.T, h *netlab.Host) *engine.Socket {
	t.Helper()
	var s *engine.Socket
	err := h.Do(func() error {
		var err error
		s, err = engine.ListenUDP(t.Context(), "udp4", net.JoinHostPort(h.Addr4.String(), strconv.Itoa(port)), engine.SockOpts{TOS: engine.NoTOS, RcvBuf: 8 << 20})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newFlow(s *engine.Socket, spec *engine.Spec) *engine.Flow {
	return &engine.Flow{Sock: s, Spec: spec, Stats: &engine.Counters{}}
}

// run runs a flow from the test's goroutine (whose thread is in the root
// namespace: the backend finds the lab's through the socket).
func run(t *testing.T, b engine.Backend, f *engine.Flow, send bool) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), hang)
	defer cancel()
	err := engine.Run(ctx, b, f, send)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("flow did not finish within %v", hang)
	}
	return err
}

func TestTransmitToSocket(t *testing.T) {
	for _, threads := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d threads", threads), func(t *testing.T) { transmitToSocket(t, threads) })
	}
}

// transmitToSocket sends from threads senders (beyond the first, on
// sockets sharing the queue's UMEM) to a socket receiver: a byte count
// that is not a multiple of the datagram, which every datagram and byte
// of must arrive once, in sequence.
func transmitToSocket(t *testing.T, threads int) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	fds, maps := resources(t)
	s := newSink(t, lab.B)
	const n, size, rest = 3000, 64, 20
	sock := dial(t, lab.A, lab.B)
	f := newFlow(sock, &engine.Spec{Protocol: engine.UDP, BufLen: size, Bytes: n*size + rest, Rate: 20000 * size * 8})
	if err := run(t, afxdp.Backend{Threads: threads}, f, true); err != nil {
		t.Fatal(err)
	}
	sock.Write([]byte("end!"))
	<-s.done
	st := f.Stats.Snapshot()
	if st.Datagrams != n+1 || st.Bytes != n*size+rest {
		t.Errorf("sender counted %d datagrams, %d bytes; want %d, %d", st.Datagrams, st.Bytes, n+1, n*size+rest)
	}
	if got, b := s.n.Load(), s.bytes.Load(); got != n+1 || b != n*size+rest {
		t.Errorf("socket received %d datagrams, %d bytes; want %d, %d", got, b, n+1, n*size+rest)
	}
	if s.seq.Lost() != 0 || s.seq.Lo != 1 || s.seq.Hi != n+1 {
		t.Errorf("sequence %d..%d, %d lost", s.seq.Lo, s.seq.Hi, s.seq.Lost())
	}
	facts := f.Facts.Snapshot()
	t.Logf("facts: %v", facts.Lines())
	if want := int64(threads - 1); facts.Counts[engine.FactOwnThreads] != want {
		t.Errorf("facts: %s = %d, want %d", engine.FactOwnThreads, facts.Counts[engine.FactOwnThreads], want)
	}
	if facts.Counts[engine.FactSyscalls] < 1 {
		t.Errorf("facts: no %s", engine.FactSyscalls)
	}
	sock.Close()
	s.conn.Close()
	checkNoLeak(t, fds, maps)
}

// TestTimeLimit sends for a time from two threads: everything counted
// arrives.
func TestTimeLimit(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	s := newSink(t, lab.B)
	sock := dial(t, lab.A, lab.B)
	f := newFlow(sock, &engine.Spec{Protocol: engine.UDP, BufLen: 100, Duration: 200 * time.Millisecond, Rate: 20000 * 100 * 8})
	if err := run(t, afxdp.Backend{Threads: 2}, f, true); err != nil {
		t.Fatal(err)
	}
	sock.Write([]byte("end!"))
	<-s.done
	st := f.Stats.Snapshot()
	if st.Datagrams == 0 || s.n.Load() != st.Datagrams || s.bytes.Load() != st.Bytes {
		t.Errorf("sender counted %d datagrams, %d bytes; the socket received %d, %d (want equal, non-zero)", st.Datagrams, st.Bytes, s.n.Load(), s.bytes.Load())
	}
}

// TestCancel cancels an unlimited send on two threads and a receive that
// gets nothing: both return promptly with the context's error, and leave
// nothing behind.
func TestCancel(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	fds, maps := resources(t)
	// A MAC nobody has: B's interface drops the frames at once.
	mac := net.HardwareAddr{0x02, 0xbb, 0, 0, 0, 1}
	for _, c := range []struct {
		name string
		send bool
		b    engine.Backend
		sock func() *engine.Socket
	}{
		{"send", true, afxdp.Backend{Threads: 2, DstMAC: mac}, func() *engine.Socket { return dial(t, lab.A, lab.B) }},
		{"recv", false, afxdp.Backend{}, func() *engine.Socket { return listen(t, lab.B) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFlow(c.sock(), &engine.Spec{Protocol: engine.UDP, BufLen: 64, SentinelMax: sentinel})
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- engine.Run(ctx, c.b, f, c.send) }()
			// Cancel once the flow runs: the sender has sent, the
			// receiver has attached its program.
			testkit.WaitFor(t, hang, "the flow to run", func() bool { return running(f, c.send) })
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("after cancel: %v, want context.Canceled", err)
				}
			case <-time.After(hang):
				<-done
				t.Fatalf("still running %v after the context was cancelled", hang)
			}
			f.Sock.Close()
		})
	}
	noXDPLeft(t, lab)
	checkNoLeak(t, fds, maps)
}

func running(f *engine.Flow, send bool) bool {
	if send {
		return f.Stats.Snapshot().Bytes > 0
	}
	return attached(f)
}

func attached(f *engine.Flow) bool {
	for _, n := range f.Facts.Snapshot().Notes {
		if strings.Contains(n, "XDP program attached") {
			return true
		}
	}
	return false
}

// TestRecvTimeout: a receive on a socket with a timeout that gets nothing
// fails with engine.ErrTimeout.
func TestRecvTimeout(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	sock := listen(t, lab.B)
	if err := sock.SetTimeout(100 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	f := newFlow(sock, &engine.Spec{Protocol: engine.UDP, BufLen: 2048, SentinelMax: sentinel})
	err := run(t, afxdp.Backend{}, f, false)
	if !errors.Is(err, engine.ErrTimeout) {
		t.Errorf("receive past the socket's timeout: %v, want an error wrapping engine.ErrTimeout", err)
	}
	noXDPLeft(t, lab)
}

// recvFlow prepares an afxdp receive in h (the program is attached when
// it returns) and runs it.
func recvFlow(t *testing.T, h *netlab.Host, b engine.Backend) (*engine.Flow, chan error) {
	t.Helper()
	f := newFlow(listen(t, h), &engine.Spec{Protocol: engine.UDP, BufLen: 2048, SentinelMax: sentinel})
	ctx, cancel := context.WithTimeout(t.Context(), hang)
	t.Cleanup(cancel)
	release, err := engine.Prepare(ctx, b, f)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		err := engine.Run(ctx, b, f, false)
		errc <- errors.Join(err, release())
	}()
	return f, errc
}

func TestSocketToReceiver(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	f, errc := recvFlow(t, lab.B, afxdp.Backend{})
	var conn net.Conn
	err := lab.A.Do(func() error {
		var err error
		conn, err = net.Dial("udp4", net.JoinHostPort(lab.B.Addr4.String(), strconv.Itoa(port)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const n, window = 2000, 100
	buf := make([]byte, 100)
	for i := range n {
		// Stay well inside the rings: at most window datagrams ahead
		// of what the receiver counted.
		if i >= window {
			testkit.WaitFor(t, hang, fmt.Sprintf("the receiver to count %d datagrams", i-window), func() bool {
				return f.Stats.Snapshot().Datagrams >= int64(i-window)
			})
		}
		binary.BigEndian.PutUint32(buf[8:], uint32(i+1))
		if _, err := conn.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	conn.Write([]byte("end!"))
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	st := f.Stats.Snapshot()
	facts := f.Facts.Snapshot()
	t.Logf("facts: %v", facts.Lines())
	if st.Datagrams != n || st.Bytes != n*100 {
		t.Errorf("received %d datagrams, %d bytes; want %d, %d", st.Datagrams, st.Bytes, n, n*100)
	}
	if lost := facts.Counts["lost_datagrams"]; lost != 0 {
		t.Errorf("%d lost", lost)
	}
	if facts.Counts["socket_datagrams"] != 1 {
		t.Errorf("%d datagrams reached the socket, want 1 (the first, which the program passes)", facts.Counts["socket_datagrams"])
	}
	noXDPLeft(t, lab)
}

func afxdpToAfxdp(t *testing.T, queues int) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{Queues: queues})
	fds, maps := resources(t)
	f, errc := recvFlow(t, lab.B, afxdp.Backend{})
	sock := dial(t, lab.A, lab.B)
	const n = 20000
	tf := newFlow(sock, &engine.Spec{Protocol: engine.UDP, BufLen: 64, Bytes: n * 64, Rate: 100000 * 64 * 8})
	if err := run(t, afxdp.Backend{Queues: queues}, tf, true); err != nil {
		t.Fatal(err)
	}
	sock.Write([]byte("end!"))
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	st := f.Stats.Snapshot()
	facts := f.Facts.Snapshot()
	t.Logf("receiver: %v", facts.Lines())
	t.Logf("sender: %v", tf.Facts.Snapshot().Lines())
	if st.Datagrams != n {
		t.Errorf("received %d datagrams, want %d", st.Datagrams, n)
	}
	if lost := facts.Counts["lost_datagrams"]; lost != 0 {
		t.Errorf("%d lost", lost)
	}
	noXDPLeft(t, lab)
	sock.Close()
	f.Sock.Close()
	checkNoLeak(t, fds, maps)
}

func TestAfxdpToAfxdp(t *testing.T)           { afxdpToAfxdp(t, 1) }
func TestAfxdpToAfxdpMultiQueue(t *testing.T) { afxdpToAfxdp(t, 2) }

func TestErrors(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
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
			s, err := afxdp.Open(t.Context(), afxdp.SocketConfig{Ifindex: ifindex, Iface: lab.A.Iface, TX: true, ZeroCopy: true})
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
			s, err := afxdp.Open(t.Context(), afxdp.SocketConfig{Ifindex: ifindex, Iface: lab.A.Iface, TX: true, Queue: 7})
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
		f := newFlow(dial(t, lab.A, lab.B), &engine.Spec{Protocol: engine.UDP, BufLen: 64, Bytes: 64})
		err := run(t, afxdp.Backend{Iface: "nosuch0"}, f, true)
		if err == nil || !strings.Contains(err.Error(), "no such interface") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("tcp", func(t *testing.T) {
		f := newFlow(dial(t, lab.A, lab.B), &engine.Spec{Protocol: engine.TCP, BufLen: 64, Bytes: 64})
		if err := run(t, afxdp.Backend{}, f, true); !errors.Is(err, engine.ErrNotSupported) {
			t.Errorf("err = %v, want ErrNotSupported", err)
		}
	})
	t.Run("program already attached", func(t *testing.T) {
		var id uint32
		err := lab.B.Do(func() error {
			l, err := netlink.LinkByName(lab.B.Iface)
			if err != nil {
				return err
			}
			other, err := bpf.Load(9999, 1)
			if err != nil {
				return err
			}
			t.Cleanup(func() { other.Close() })
			if _, err := other.Attach(l.Attrs().Index, false); err != nil {
				return err
			}
			info, err := other.Prog.Info()
			if err != nil {
				return err
			}
			i, _ := info.ID()
			id = uint32(i)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		f := newFlow(listen(t, lab.B), &engine.Spec{Protocol: engine.UDP, BufLen: 64, SentinelMax: sentinel})
		err = run(t, afxdp.Backend{}, f, false)
		if err == nil || !strings.Contains(err.Error(), "id "+strconv.Itoa(int(id))) {
			t.Errorf("err = %v, want one naming program id %d", err, id)
		}
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
	lab := labtest.New(b, netlab.Direct, netlab.Options{})
	var sock *engine.Socket
	err := lab.A.Do(func() error {
		var err error
		sock, err = engine.Dial(b.Context(), "udp4", net.JoinHostPort(lab.B.Addr4.String(), strconv.Itoa(port)), noOpts)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	defer sock.Close()
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
		f := newFlow(sock, &engine.Spec{Protocol: engine.UDP, BufLen: 18, Duration: d})
		r0, start := rxPackets(b, lab.B), time.Now()
		if err := engine.Run(b.Context(), afxdp.Backend{DstMAC: mac}, f, true); err != nil {
			b.Fatal(err)
		}
		pps = float64(rxPackets(b, lab.B)-r0) / time.Since(start).Seconds()
		b.Logf("afxdp sent %d frames: %v", f.Stats.Snapshot().Datagrams, f.Facts.Snapshot().Lines())
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
