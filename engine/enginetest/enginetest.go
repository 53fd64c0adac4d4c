// Package enginetest is the conformance suite every engine.Backend must
// pass, over real loopback sockets the engine made: exact byte counts in
// both directions, data delivered byte for byte, prompt cancellation
// through the context, socket timeouts, options parsed and refused, facts
// reported, datagram headers stamped and read (Spec.Framing), and no file
// descriptor, thread, goroutine or mapping left behind.
package enginetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/testkit"
)

// Caps says which parts of the contract a backend implements; the suite
// skips the others, saying so.
type Caps struct {
	TCPSend, TCPRecv, UDPSend, UDPRecv bool
	// Source and Sink: the backend honours Spec.Source / Spec.Sink.
	Source, Sink bool
	// Batch is the most datagrams one UDP I/O call may move (sendmmsg,
	// recvmmsg); 0 means one.
	Batch int
	// Timeout: a receive honours the socket's timeout (Socket.SetTimeout).
	Timeout bool
	// Options are backend options to run the whole suite with ("" none).
	Options string
	// FramingSend and FramingRecv: the backend honours Spec.Framing on
	// the UDP datagrams it sends, receives. Without, the suite wants a
	// framed flow refused with an error wrapping engine.ErrNotSupported.
	FramingSend, FramingRecv bool
	// HeaderPeek: the receive copies only the first engine.HeaderPeek
	// bytes of each datagram, for the Framing (trunc).
	HeaderPeek bool
}

// All is the full contract.
var All = Caps{TCPSend: true, TCPRecv: true, UDPSend: true, UDPRecv: true, Source: true, Sink: true, Timeout: true, FramingSend: true, FramingRecv: true}

// hang bounds every step: a backend that hangs fails the suite instead of
// hanging it. It is a hang detector, not a timing assertion.
const hang = 20 * time.Second

// prompt is how soon a cancelled flow returns when the host is not too
// busy to judge: the bound of the timing check on CancelLatency (the
// suite itself wants the flow back with context.Canceled within hang).
const prompt = 2 * time.Second

// window is how many datagrams a plain peer sends ahead of what the
// backend's receive has counted (keepUp): a few dozen kilobytes, well
// inside a socket's default receive buffer, and more than the datagrams
// a receive waits for at once (recvmmsg returns with one, MSG_WAITFORONE).
const window = 64

// Pairs makes the sockets the suite runs a backend on, for a backend that
// cannot move data over loopback (afxdp needs an interface it can attach
// XDP to and send frames out of). A nil factory means the suite's own,
// over loopback.
type Pairs struct {
	// UDP returns the backend's end, an engine socket connected to the
	// peer, and the peer, a plain socket bound to the address mine is
	// connected to, with room in its receive buffer for a few hundred
	// datagrams. Both must be closed when t ends (t.Cleanup).
	UDP func(t *testing.T) (mine *engine.Socket, peer *net.UDPConn)
}

// Run runs the suite against b (configured with caps.Options).
func Run(t *testing.T, b engine.Backend, caps Caps) { RunWith(t, b, caps, Pairs{}) }

// RunWith runs the suite as Run does, on the sockets p makes.
func RunWith(t *testing.T, b engine.Backend, caps Caps, p Pairs) {
	loopback := p.UDP == nil
	if p.UDP == nil {
		p.UDP = udpPair
	}
	if err := b.Probe(); err != nil {
		if errors.Is(err, engine.ErrNotSupported) {
			t.Skipf("%s: %v", b.Name(), err)
		}
		t.Fatalf("%s: probe failed: %v", b.Name(), err)
	}
	t.Run("options", func(t *testing.T) { testOptions(t, b) })
	if caps.Options != "" {
		c, _, err := engine.Configure(b, caps.Options)
		if err != nil {
			t.Fatalf("%s: options %q: %v", b.Name(), caps.Options, err)
		}
		b = c
	}
	before := countResources(t)
	peakProcs := max(runtime.GOMAXPROCS(0), slices.Max(parallelFlows)+1)
	gor := runtime.NumGoroutine()

	dataTests(t, b, caps, p, loopback)
	// The same again on free flows (engine.Spec.Free), for a backend
	// that can run free: its calls through the raw entry, bounded,
	// yielding, interrupted by the collector.
	t.Run("free", func(t *testing.T) {
		if _, ok := b.(engine.Free); !ok {
			t.Skip("backend does not run free (engine.Free)")
		}
		freeFlows = true
		defer func() { freeFlows = false }()
		dataTests(t, b, caps, p, loopback)
	})

	// Leaks: everything the subtests opened is closed by now. Threads end
	// with their flows, a little after Run returns; wait for them to go.
	testkit.Eventually(hang, func() bool {
		return runtime.NumGoroutine() <= gor && countResources(t).more(before, peakProcs) == ""
	})
	if more := countResources(t).more(before, peakProcs); more != "" {
		t.Errorf("%s leaked %s", b.Name(), more)
	}
	if got := runtime.NumGoroutine(); got > gor {
		buf := make([]byte, 1<<16)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("%s leaked goroutines: %d before the suite, %d after:\n%s", b.Name(), gor, got, buf)
	}
}

// dataTests are the suite's tests of moving bytes, cancelling, deadlines
// and framing.
func dataTests(t *testing.T, b engine.Backend, caps Caps, p Pairs, loopback bool) {
	for _, network := range []string{"tcp4", "tcp6"} {
		t.Run(network, func(t *testing.T) {
			if !caps.TCPSend {
				t.Skip("backend does not send TCP")
			}
			testTCPSend(t, b, network, 8<<20+12345, 65536)
			testTCPSend(t, b, network, 1000, 1)
		})
	}
	t.Run("tcp/recv", func(t *testing.T) {
		if !caps.TCPRecv {
			t.Skip("backend does not receive TCP")
		}
		testTCPRecv(t, b, caps, 16<<20+7, 8192)
	})
	t.Run("tcp/source", func(t *testing.T) {
		if !caps.TCPSend || !caps.Source {
			t.Skip("backend does not send from a source")
		}
		testTCPSource(t, b, 4<<20+3)
	})
	t.Run("udp/send", func(t *testing.T) {
		if !caps.UDPSend {
			t.Skip("backend does not send UDP")
		}
		testUDPSend(t, b, caps, p.UDP, 300, 1200)
	})
	t.Run("udp/recv", func(t *testing.T) {
		if !caps.UDPRecv {
			t.Skip("backend does not receive UDP")
		}
		testUDPRecv(t, b, caps, p.UDP, 300, 1200)
	})
	for _, n := range parallelFlows {
		t.Run(fmt.Sprintf("tcp/flows-%d", n), func(t *testing.T) {
			if !caps.TCPSend && !caps.TCPRecv {
				t.Skip("backend moves no TCP")
			}
			testParallel(t, b, caps, n)
		})
	}
	t.Run("tcp/gc", func(t *testing.T) {
		if !caps.TCPSend && !caps.TCPRecv {
			t.Skip("backend moves no TCP")
		}
		testGCStorm(t, b, caps)
	})
	t.Run("cancel/recv", func(t *testing.T) {
		if !caps.TCPRecv {
			t.Skip("backend does not receive TCP")
		}
		testCancel(t, b, false)
	})
	t.Run("cancel/send", func(t *testing.T) {
		if !caps.TCPSend {
			t.Skip("backend does not send TCP")
		}
		testCancel(t, b, true)
	})
	t.Run("timeout/recv", func(t *testing.T) {
		if !caps.TCPRecv || !caps.Timeout {
			t.Skip("backend does not honour socket timeouts on receive")
		}
		testTimeout(t, b)
	})
	t.Run("duration", func(t *testing.T) {
		if !caps.TCPSend {
			t.Skip("backend does not send TCP")
		}
		testDuration(t, b)
	})
	t.Run("udp/cancel/recv", func(t *testing.T) {
		if !caps.UDPRecv {
			t.Skip("backend does not receive UDP")
		}
		testUDPCancel(t, b, p.UDP)
	})
	t.Run("udp/timeout/recv", func(t *testing.T) {
		if !caps.UDPRecv || !caps.Timeout {
			t.Skip("backend does not honour socket timeouts on UDP receive")
		}
		testUDPTimeout(t, b, p.UDP)
	})
	t.Run("udp/duration", func(t *testing.T) {
		if !caps.UDPSend {
			t.Skip("backend does not send UDP")
		}
		testUDPDuration(t, b, caps, p.UDP)
	})
	t.Run("udp/framing/send", func(t *testing.T) {
		if !caps.UDPSend {
			t.Skip("backend does not send UDP")
		}
		testFramingSend(t, b, caps, p.UDP)
	})
	t.Run("udp/framing/recv", func(t *testing.T) {
		if !caps.UDPRecv {
			t.Skip("backend does not receive UDP")
		}
		testFramingRecv(t, b, caps, p.UDP)
	})
	t.Run("udp/framing/loop", func(t *testing.T) {
		switch {
		case !caps.UDPSend || !caps.UDPRecv || !caps.FramingSend || !caps.FramingRecv:
			t.Skip("backend does not both send and receive framed UDP")
		case !loopback:
			t.Skip("the backend's own sockets are not on loopback")
		}
		FramedTransfer(t, b, b, framedCount, caps.HeaderPeek)
	})

}

// resources are what a backend could leave behind in the process.
type resources struct{ fds, threads, maps int }

func countResources(t *testing.T) resources {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("count open fds: %v", err)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatalf("count threads: %v", err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatalf("count mappings: %v", err)
	}
	return resources{fds: len(fds), threads: len(tasks), maps: fdMappings(maps)}
}

// fdMappings counts the mappings of /proc/self/maps that map a descriptor
// rather than memory: io_uring and AF_XDP rings ("anon_inode:[io_uring]",
// "socket:[...]"), memfds. Those are what a backend maps; anonymous
// mappings are mostly the Go heap, which grows as it likes.
func fdMappings(maps []byte) int {
	n := 0
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		if p := f[5]; strings.HasPrefix(p, "anon_inode:") || strings.HasPrefix(p, "socket:") || strings.HasPrefix(p, "/memfd:") {
			n++
		}
	}
	return n
}

// more says what r has more of than before ("" when nothing). A locked
// flow's thread ends with its flow; the Go runtime keeps idle threads of
// its own, up to about one per P it has had, so threads get that
// allowance: peakProcs, the most Ps the suite had (free flows raise
// GOMAXPROCS to their count plus one while they run). A backend's leaked
// thread also leaves its goroutine behind, which the suite checks
// exactly.
func (r resources) more(before resources, peakProcs int) string {
	var s []string
	if r.fds > before.fds {
		s = append(s, "file descriptors")
	}
	if r.threads > before.threads+max(runtime.GOMAXPROCS(0), peakProcs)+2 {
		s = append(s, "threads")
	}
	if r.maps > before.maps {
		s = append(s, "memory mappings of descriptors")
	}
	return strings.Join(s, ", ")
}

func testOptions(t *testing.T, b engine.Backend) {
	_, _, err := engine.Configure(b, "nonsense=1")
	if err == nil || !strings.Contains(err.Error(), "backend "+b.Name()) {
		t.Errorf("option nonsense=1: got %v, want an error naming backend %s", err, b.Name())
	}
	for _, o := range engine.OptionsOf(b) {
		if o.Help == "" || o.Default == "" {
			t.Errorf("option %s: declared without help or default", o.Name)
		}
		var good, bad string
		switch o.Kind {
		case engine.Flag:
			good, bad = o.Name, o.Name+"=1"
		case engine.Count:
			good, bad = o.Name+"=2", o.Name+"=0"
		case engine.Text:
			good, bad = o.Name+"=/dev/null", o.Name+"="
		case engine.MAC:
			good, bad = o.Name+"=02:00:00:00:00:01", o.Name+"=nope"
		}
		p, err := engine.ParseOptions(b.Name(), engine.OptionsOf(b), good)
		if err != nil || p.String() != good {
			t.Errorf("option %q: parsed as %q, %v; want it back as written", good, p.String(), err)
		}
		if _, err := engine.ParseOptions(b.Name(), engine.OptionsOf(b), bad); err == nil {
			t.Errorf("option %q: accepted, want it refused", bad)
		}
	}
}

// freeFlows makes flow ask for free flows (engine.Spec.Free): RunWith
// runs the suite's data tests again that way (the "free" subtests).
var freeFlows bool

func flow(s *engine.Socket, spec *engine.Spec) *engine.Flow {
	spec.Free = spec.Free || freeFlows
	return &engine.Flow{Sock: s, Spec: spec, Stats: &engine.Counters{}}
}

// tcpPair returns a connected pair over loopback: the backend's end (an
// engine socket) and the plain peer's end.
func tcpPair(t *testing.T, network string) (mine *engine.Socket, peer *net.TCPConn) {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "tcp6" {
		addr = "[::1]:0"
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		if network == "tcp6" {
			t.Skipf("no IPv6 loopback: %v", err)
		}
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := engine.Dial(context.Background(), network, ln.Addr().String(), engine.SockOpts{TOS: engine.NoTOS})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ln.Accept()
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); p.Close() })
	return c, p.(*net.TCPConn)
}

func run(t *testing.T, what string, b engine.Backend, f *engine.Flow, send bool) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	procs := runtime.GOMAXPROCS(0)
	tmo := timeouts(t, f.Sock)
	err := engine.Run(ctx, b, f, send)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%s did not finish within %v", what, hang)
	}
	checkRan(t, what, b, f, send, procs, tmo)
	return err
}

// checkRan checks how Run ran the flow (engine v3): a Free backend's
// unpaced flow without affinity runs free, unless BLAST_THREADS=locked;
// Run puts GOMAXPROCS and the socket's timeouts back as they were.
func checkRan(t *testing.T, what string, b engine.Backend, f *engine.Flow, send bool, procs int, tmo [2]time.Duration) {
	t.Helper()
	fb, ok := b.(engine.Free)
	asked := f.Spec.Free || os.Getenv("BLAST_THREADS") == "free"
	want := ok && fb.RunsFree(send) && f.Spec.Rate == 0 && len(f.Spec.Affinity) == 0 && asked && os.Getenv("BLAST_THREADS") != "locked"
	if f.Free != want {
		t.Errorf("%s: the flow ran free: %v, want %v (a Free backend's unpaced, unpinned flow runs free when asked)", what, f.Free, want)
	}
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("%s: GOMAXPROCS %d after Run, %d before: Run must put it back", what, got, procs)
	}
	if got := timeouts(t, f.Sock); got != tmo {
		t.Errorf("%s: the socket's timeouts (send, receive) are %v after Run, %v before: Run must put them back", what, got, tmo)
	}
	if f.CPU.User < 0 || f.CPU.System < 0 || f.Switches.Voluntary < 0 || f.Switches.Involuntary < 0 {
		t.Errorf("%s: negative CPU time or switches: %+v %+v", what, f.CPU, f.Switches)
	}
}

// timeouts reads the socket's SO_SNDTIMEO and SO_RCVTIMEO.
func timeouts(t *testing.T, s *engine.Socket) (out [2]time.Duration) {
	t.Helper()
	if s == nil {
		return out
	}
	s.Control(func(fd int) error {
		for i, opt := range []int{unix.SO_SNDTIMEO, unix.SO_RCVTIMEO} {
			tv, err := unix.GetsockoptTimeval(fd, unix.SOL_SOCKET, opt)
			if err != nil {
				t.Fatalf("getsockopt: %v", err)
			}
			out[i] = time.Duration(tv.Nano())
		}
		return nil
	})
	return out
}

// parallelFlows are the flow counts testParallel runs at once; the most
// of them, plus one, is the most Ps free flows give the process.
var parallelFlows = []int{2, 8}

// testParallel runs n flows at once, each its own connection (senders
// when the backend sends TCP, else receivers): every flow moves exactly
// its bytes, and GOMAXPROCS (which free flows raise while they run) is
// back where it was after the last one.
func testParallel(t *testing.T, b engine.Backend, caps Caps, n int) {
	procs := runtime.GOMAXPROCS(0)
	const size = 4<<20 + 11
	type pair struct {
		mine *engine.Socket
		peer *net.TCPConn
	}
	pairs := make([]pair, n)
	for i := range pairs {
		pairs[i].mine, pairs[i].peer = tcpPair(t, "tcp4")
	}
	send := caps.TCPSend
	errs := make(chan error, n)
	peerGot := make(chan int64, n)
	flows := make([]*engine.Flow, n)
	for i, p := range pairs {
		spec := &engine.Spec{Protocol: engine.TCP, BufLen: 65536}
		if send {
			spec.Bytes = size
			go func() {
				c, _ := io.Copy(io.Discard, p.peer)
				peerGot <- c
			}()
		} else {
			go func() {
				c, _ := io.Copy(p.peer, io.LimitReader(zeroReader{}, size))
				p.peer.CloseWrite()
				peerGot <- c
			}()
		}
		flows[i] = flow(p.mine, spec)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), hang)
			defer cancel()
			err := engine.Run(ctx, b, flows[i], send)
			if send {
				p.mine.CloseWrite()
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("%d flows at once: %v", n, err)
		}
	}
	for range n {
		if got := <-peerGot; got != size {
			t.Errorf("%d flows at once: a peer moved %d bytes, want %d", n, got, size)
		}
	}
	for i, f := range flows {
		if got := f.Stats.Snapshot().Bytes; got != size {
			t.Errorf("%d flows at once: flow %d counted %d bytes, want %d", n, i, got, size)
		}
	}
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("GOMAXPROCS %d after %d flows, %d before", got, n, procs)
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// testGCStorm sends and receives over TCP while the collector stops the
// world again and again: every stop interrupts the data calls (the
// runtime's preemption signal; a free flow's raw calls fail with EINTR),
// and every byte must still arrive once.
func testGCStorm(t *testing.T, b engine.Backend, caps Caps) {
	stop := make(chan struct{})
	gcDone := make(chan struct{})
	go func() {
		defer close(gcDone)
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	}()
	defer func() { close(stop); <-gcDone }()
	if caps.TCPSend {
		testTCPSend(t, b, "tcp4", 32<<20+5, 65536)
	}
	if caps.TCPRecv {
		testTCPRecv(t, b, caps, 32<<20+7, 65536)
	}
}

func checkSample(t *testing.T, f *engine.Flow, wantBytes int64, bufLen int) {
	t.Helper()
	s := f.Stats.Snapshot()
	if s.Bytes != wantBytes {
		t.Errorf("counters say %d bytes, want %d", s.Bytes, wantBytes)
	}
	if s.Calls < 1 || s.MinIO < 1 || s.MaxIO > int64(bufLen) || s.MinIO > s.MaxIO {
		t.Errorf("implausible I/O counters for at most %d bytes per call: %+v", bufLen, s)
	}
	if s.Errors != 0 {
		t.Errorf("counters report %d errors on a clean transfer", s.Errors)
	}
	if f.Facts.Count(engine.FactSyscalls) < 1 {
		t.Errorf("facts: no %s count after a transfer (got %v)", engine.FactSyscalls, f.Facts.Snapshot())
	}
}

func testTCPSend(t *testing.T, b engine.Backend, network string, n int64, bufLen int) {
	mine, peer := tcpPair(t, network)
	got := make(chan int64, 1)
	go func() {
		c, _ := io.Copy(io.Discard, peer)
		got <- c
	}()
	f := flow(mine, &engine.Spec{Protocol: engine.TCP, BufLen: bufLen, Bytes: n})
	if err := run(t, "send", b, f, true); err != nil {
		t.Fatalf("send %d bytes: %v", n, err)
	}
	mine.CloseWrite()
	if g := <-got; g != n {
		t.Errorf("peer received %d bytes, want %d", g, n)
	}
	checkSample(t, f, n, bufLen)
}

func testTCPRecv(t *testing.T, b engine.Backend, caps Caps, n int64, bufLen int) {
	mine, peer := tcpPair(t, "tcp4")
	data := randomBytes(t, int(n))
	go func() {
		peer.Write(data)
		peer.CloseWrite()
	}()
	h := sha256.New()
	spec := &engine.Spec{Protocol: engine.TCP, BufLen: bufLen}
	if caps.Sink {
		spec.Sink = h
	}
	f := flow(mine, spec)
	if err := run(t, "recv", b, f, false); err != nil {
		t.Fatalf("recv: %v", err)
	}
	checkSample(t, f, n, bufLen)
	if caps.Sink {
		if want := sha256.Sum256(data); !bytes.Equal(h.Sum(nil), want[:]) {
			t.Errorf("data written to the sink differs from what the peer sent")
		}
	}
}

func testTCPSource(t *testing.T, b engine.Backend, n int64) {
	mine, peer := tcpPair(t, "tcp4")
	data := randomBytes(t, int(n))
	sum := make(chan [32]byte, 1)
	go func() {
		h := sha256.New()
		io.Copy(h, peer)
		var s [32]byte
		copy(s[:], h.Sum(nil))
		sum <- s
	}()
	f := flow(mine, &engine.Spec{Protocol: engine.TCP, BufLen: 8192, Source: bytes.NewReader(data)})
	if err := run(t, "send from source", b, f, true); err != nil {
		t.Fatalf("send: %v", err)
	}
	mine.CloseWrite()
	if got := <-sum; got != sha256.Sum256(data) {
		t.Errorf("peer received different bytes than the source held")
	}
	checkSample(t, f, n, 8192)
}

// udpPair returns the backend's end, an engine socket connected to the
// plain peer.
func udpPair(t *testing.T) (mine *engine.Socket, peer *net.UDPConn) {
	t.Helper()
	a, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	a.SetReadBuffer(8 << 20)
	c, err := engine.Dial(context.Background(), "udp4", a.LocalAddr().String(), engine.SockOpts{TOS: engine.NoTOS, RcvBuf: 8 << 20})
	if err != nil {
		a.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); c.Close() })
	return c, a
}

func testUDPSend(t *testing.T, b engine.Backend, caps Caps, pair func(*testing.T) (*engine.Socket, *net.UDPConn), count, size int) {
	mine, peer := pair(t)
	got := make(chan [2]int64, 1)
	go func() {
		buf := make([]byte, 65536)
		var dg, by int64
		for dg < int64(count) {
			peer.SetReadDeadline(time.Now().Add(hang))
			n, err := peer.Read(buf)
			if err != nil {
				break
			}
			dg++
			by += int64(n)
		}
		got <- [2]int64{dg, by}
	}()
	f := flow(mine, &engine.Spec{Protocol: engine.UDP, BufLen: size, Bytes: int64(count * size), Rate: 50e6})
	if err := run(t, "udp send", b, f, true); err != nil {
		t.Fatalf("udp send: %v", err)
	}
	s := f.Stats.Snapshot()
	checkSample(t, f, int64(count*size), size*max(caps.Batch, 1))
	if s.Datagrams != int64(count) {
		t.Errorf("counters say %d datagrams sent, want %d", s.Datagrams, count)
	}
	if g := <-got; g != [2]int64{int64(count), int64(count * size)} {
		t.Errorf("peer received %d datagrams, %d bytes; want %d, %d", g[0], g[1], count, count*size)
	}
}

func testUDPRecv(t *testing.T, b engine.Backend, caps Caps, pair func(*testing.T) (*engine.Socket, *net.UDPConn), count, size int) {
	mine, peer := pair(t)
	f := flow(mine, &engine.Spec{Protocol: engine.UDP, BufLen: 65536, SentinelMax: 4})
	// mine is connected to peer's address; the peer sends back to mine.
	go func() {
		p := make([]byte, size)
		to := net.UDPAddrFromAddrPort(mine.LocalAddr())
		for i := 0; i < count && keepUp(f, i); i++ {
			peer.WriteTo(p, to)
		}
		peer.WriteTo(p[:4], to) // end sentinel
	}()
	if err := run(t, "udp recv", b, f, false); err != nil {
		t.Fatalf("udp recv: %v", err)
	}
	s := f.Stats.Snapshot()
	checkSample(t, f, int64(count*size), 65536*max(caps.Batch, 1))
	if s.Datagrams != int64(count) {
		t.Errorf("counters say %d datagrams received, want %d", s.Datagrams, count)
	}
}

// keepUp holds a plain peer that sends datagrams to f's receive until
// the receive has counted all but window of the i sent so far, so that
// the socket's buffer never overflows however slowly the receive runs.
// It reports false when the receive did not get there within hang (a
// datagram lost): the peer then stops, and the count is checked.
func keepUp(f *engine.Flow, i int) bool {
	return i < window || testkit.Eventually(hang, func() bool { return f.Stats.Snapshot().Datagrams >= int64(i-window) })
}

// testCancel cancels a flow that is blocked (the peer neither sends nor
// reads) and wants Run back with context.Canceled.
func testCancel(t *testing.T, b engine.Backend, send bool) {
	cancelBlocked(t, b, send)
}

// cancelBlocked runs a TCP flow on b whose peer neither sends nor reads,
// waits until the flow's thread blocks in a system call (a sender once it
// filled the socket buffers), cancels it and wants Run back with
// context.Canceled within hang. It returns how long Run took to return
// after the cancel.
func cancelBlocked(t *testing.T, b engine.Backend, send bool) time.Duration {
	t.Helper()
	mine, peer := tcpPair(t, "tcp4")
	ctx, cancel := context.WithCancel(context.Background())
	f := flow(mine, &engine.Spec{Protocol: engine.TCP, BufLen: 65536})
	done := make(chan error, 1)
	go func() { done <- engine.Run(ctx, b, f, send) }()
	if send {
		testkit.WaitFor(t, hang, "the sender's first bytes", func() bool { return f.Stats.Snapshot().Bytes > 0 })
	}
	testkit.WaitFor(t, hang, "the flow to block in a system call", blockedInIO)
	return cancelled(t, cancel, done, func() { peer.Close() })
}

// cancelled cancels a flow (cancel) and waits for Run's error on done:
// context.Canceled within hang. Past hang, unblock lets the flow go and
// the test fails. It returns how long Run took after the cancel.
func cancelled(t *testing.T, cancel func(), done <-chan error, unblock func()) time.Duration {
	t.Helper()
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		took := time.Since(start)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("after cancel: got %v, want an error wrapping context.Canceled", err)
		}
		return took
	case <-time.After(hang):
		unblock() // so the suite can go on
		<-done
		t.Fatalf("still blocked %v after the context was cancelled", hang)
		return hang
	}
}

// testTimeout gives the socket a receive timeout and sends nothing: the
// receive must fail with engine.ErrTimeout.
func testTimeout(t *testing.T, b engine.Backend) {
	mine, _ := tcpPair(t, "tcp4")
	if err := mine.SetTimeout(100 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	f := flow(mine, &engine.Spec{Protocol: engine.TCP, BufLen: 65536})
	err := run(t, "recv with a timeout", b, f, false)
	if !errors.Is(err, engine.ErrTimeout) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("recv past the socket's timeout: got %v, want an error wrapping engine.ErrTimeout", err)
	}
}

func testDuration(t *testing.T, b engine.Backend) {
	mine, peer := tcpPair(t, "tcp4")
	got := make(chan int64, 1)
	go func() {
		c, _ := io.Copy(io.Discard, peer)
		got <- c
	}()
	f := flow(mine, &engine.Spec{Protocol: engine.TCP, BufLen: 65536, Duration: 300 * time.Millisecond})
	if err := run(t, "timed send", b, f, true); err != nil {
		t.Fatalf("timed send: %v", err)
	}
	mine.CloseWrite()
	s := f.Stats.Snapshot()
	if g := <-got; g != s.Bytes || g == 0 {
		t.Errorf("peer received %d bytes, counters say %d sent (want equal and non-zero)", g, s.Bytes)
	}
}

// testUDPCancel cancels a UDP receive that waits for datagrams that
// never come, and wants Run back with context.Canceled.
func testUDPCancel(t *testing.T, b engine.Backend, pair func(*testing.T) (*engine.Socket, *net.UDPConn)) {
	udpCancelBlocked(t, b, pair)
}

// udpCancelBlocked runs a UDP receive on b that gets nothing, waits until
// it blocks, cancels it and wants Run back with context.Canceled within
// hang. It returns how long Run took to return after the cancel.
func udpCancelBlocked(t *testing.T, b engine.Backend, pair func(*testing.T) (*engine.Socket, *net.UDPConn)) time.Duration {
	t.Helper()
	mine, _ := pair(t)
	ctx, cancel := context.WithCancel(context.Background())
	f := flow(mine, &engine.Spec{Protocol: engine.UDP, BufLen: 65536, SentinelMax: 4})
	release, err := engine.Prepare(ctx, b, f)
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	defer release()
	done := make(chan error, 1)
	go func() { done <- engine.Run(ctx, b, f, false) }()
	testkit.WaitFor(t, hang, "the receive to block in its first wait", blockedInIO)
	return cancelled(t, cancel, done, func() { mine.Shutdown() })
}

// CancelLatency runs the suite's cancel checks that caps allow (a blocked
// TCP receive and send, a UDP receive that gets nothing, on p's sockets)
// and returns how long each flow took to return after its context was
// cancelled, by the name of the check. It fails t as the suite does when
// a flow does not return with context.Canceled. It is for a timing check
// (a backend that sees the cancel only at a timeout slice is slow here).
func CancelLatency(t *testing.T, b engine.Backend, caps Caps, p Pairs) map[string]time.Duration {
	t.Helper()
	if p.UDP == nil {
		p.UDP = udpPair
	}
	if caps.Options != "" {
		c, _, err := engine.Configure(b, caps.Options)
		if err != nil {
			t.Fatalf("%s: options %q: %v", b.Name(), caps.Options, err)
		}
		b = c
	}
	got := map[string]time.Duration{}
	if caps.TCPRecv {
		got["cancel/recv"] = cancelBlocked(t, b, false)
	}
	if caps.TCPSend {
		got["cancel/send"] = cancelBlocked(t, b, true)
	}
	if caps.UDPRecv {
		got["udp/cancel/recv"] = udpCancelBlocked(t, b, p.UDP)
	}
	return got
}

// Prompt is the bound for CancelLatency's figures: how soon a cancelled
// flow returns on a host that is not too busy to judge.
const Prompt = prompt

// testUDPTimeout gives the socket a receive timeout and sends nothing.
func testUDPTimeout(t *testing.T, b engine.Backend, pair func(*testing.T) (*engine.Socket, *net.UDPConn)) {
	mine, _ := pair(t)
	if err := mine.SetTimeout(100 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	f := flow(mine, &engine.Spec{Protocol: engine.UDP, BufLen: 65536, SentinelMax: 4})
	release, err := engine.Prepare(context.Background(), b, f)
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	defer release()
	err = run(t, "udp recv with a timeout", b, f, false)
	if !errors.Is(err, engine.ErrTimeout) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("recv past the socket's timeout: got %v, want an error wrapping engine.ErrTimeout", err)
	}
}

// testUDPDuration sends paced datagrams for a time limit: the send ends
// by itself, and every datagram it counted reached the peer.
func testUDPDuration(t *testing.T, b engine.Backend, caps Caps, pair func(*testing.T) (*engine.Socket, *net.UDPConn)) {
	mine, peer := pair(t)
	const size = 1000
	got := make(chan int64, 1)
	stop := make(chan struct{})
	go func() {
		buf := make([]byte, 65536)
		var dg int64
		for {
			peer.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			if _, err := peer.Read(buf); err != nil {
				select {
				case <-stop:
					got <- dg
					return
				default:
					continue
				}
			}
			dg++
		}
	}()
	// 8 Mbit/s of 1000-byte datagrams: 1000 a second, well inside the
	// peer's buffer.
	f := flow(mine, &engine.Spec{Protocol: engine.UDP, BufLen: size, Duration: 300 * time.Millisecond, Rate: 8e6})
	if err := run(t, "timed udp send", b, f, true); err != nil {
		t.Fatalf("timed udp send: %v", err)
	}
	close(stop)
	s := f.Stats.Snapshot()
	if g := <-got; g != s.Datagrams || g == 0 {
		t.Errorf("peer received %d datagrams, counters say %d sent (want equal and non-zero)", g, s.Datagrams)
	}
}

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}
