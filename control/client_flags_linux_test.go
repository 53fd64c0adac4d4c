package control

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/blastnet/blast/control/render"
	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/internal/testkit"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

// The client flags of iperf3 3.x, each run against Debian's iperf3 -s or a
// blast server on loopback, checking what the flag promises.

// runClientErr runs a client test that may fail.
func runClientErr(t *testing.T, cfg Config) (*result.Result, error) {
	t.Helper()
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	if cfg.Interval == 0 {
		cfg.Interval = time.Second
	}
	cfg.NoNIC = true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return Run(ctx, cfg)
}

// hookConnected runs fn with the client once its streams are connected,
// for the rest of the test.
func hookConnected(t *testing.T, fn func(*client)) {
	t.Helper()
	testHookConnected = fn
	t.Cleanup(func() { testHookConnected = nil })
}

func sockInt(t *testing.T, c interface {
	Control(func(fd int) error) error
}, level, opt int) int {
	t.Helper()
	var v int
	if err := c.Control(func(fd int) (err error) { v, err = unix.GetsockoptInt(fd, level, opt); return err }); err != nil {
		t.Errorf("getsockopt %d/%d: %v", level, opt, err)
	}
	return v
}

func sockString(t *testing.T, c interface {
	Control(func(fd int) error) error
}, level, opt int) string {
	t.Helper()
	var v string
	if err := c.Control(func(fd int) (err error) { v, err = unix.GetsockoptString(fd, level, opt); return err }); err != nil {
		t.Errorf("getsockopt %d/%d: %v", level, opt, err)
	}
	return v
}

// ctrlSock lets the control connection's descriptor be read like an
// engine socket's.
type ctrlSock struct{ c net.Conn }

func (s ctrlSock) Control(fn func(fd int) error) error {
	rc, err := s.c.(syscall.Conn).SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// iperf3Doc is what these tests read of iperf3's own -J document.
type iperf3Doc struct {
	Start struct {
		Connected []struct {
			RemoteHost string `json:"remote_host"`
			RemotePort int    `json:"remote_port"`
		} `json:"connected"`
		AcceptedConnection struct {
			Host string `json:"host"`
		} `json:"accepted_connection"`
	} `json:"start"`
	End struct {
		SumReceived *iperfSum `json:"sum_received"`
	} `json:"end"`
	ExtraData string `json:"extra_data"`
	Error     string `json:"error"`
}

// TestClientBindCPort: -B puts the control and data connections on a
// local address, --cport numbers the data streams' ports from PORT, and
// iperf3's server sees exactly that.
func TestClientBindCPort(t *testing.T) {
	port, wait := iperf3ServerArgs(t, "127.0.0.1")
	cport := testkit.FreePorts(t, 2)
	var ctrlLocal netip.AddrPort
	hookConnected(t, func(cl *client) { ctrlLocal = netip.MustParseAddrPort(cl.ctrl.LocalAddr().String()) })
	r, err := runClientErr(t, Config{Port: port, Duration: time.Second, Parallel: 2,
		Bind: netip.MustParseAddr("127.0.0.2"), CPort: cport})
	if err != nil {
		t.Fatal(err)
	}
	var d iperf3Doc
	if err := json.Unmarshal(wait(), &d); err != nil {
		t.Fatal(err)
	}
	if d.Start.AcceptedConnection.Host != "127.0.0.2" || ctrlLocal.Addr().String() != "127.0.0.2" {
		t.Errorf("iperf3 accepted the control connection from %q, blast's local address %v; want 127.0.0.2", d.Start.AcceptedConnection.Host, ctrlLocal)
	}
	if ctrlLocal.Port() == uint16(cport) || ctrlLocal.Port() == uint16(cport+1) {
		t.Errorf("the control connection took --cport's port %d", ctrlLocal.Port())
	}
	if len(d.Start.Connected) != 2 {
		t.Fatalf("iperf3 saw %d streams", len(d.Start.Connected))
	}
	for i, c := range d.Start.Connected {
		if c.RemoteHost != "127.0.0.2" || c.RemotePort != cport+i {
			t.Errorf("iperf3's stream %d comes from %s port %d, want 127.0.0.2 port %d", i, c.RemoteHost, c.RemotePort, cport+i)
		}
		if got := r.Streams[i].Local; got != netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), uint16(cport+i)) {
			t.Errorf("blast's stream %d is bound to %v", i, got)
		}
	}
	// A bidirectional test's receiving streams follow the sending ones.
	_, port2, _ := blastServer(t, ServerConfig{})
	r, err = runClientErr(t, Config{Port: port2, Duration: time.Second, Bidir: true, CPort: cport})
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range r.Streams {
		if st.Local.Port() != uint16(cport+i) {
			t.Errorf("--bidir stream %d (sender %v) on port %d, want %d", i, st.Sender, st.Local.Port(), cport+i)
		}
	}
}

// TestClientBindDevTimeoutsKeepalive: --bind-dev binds the control and
// data sockets to the interface, --snd-timeout sets TCP_USER_TIMEOUT on
// both, --cntl-ka turns keepalive on the control connection with its
// three values, or the system's.
func TestClientBindDevTimeoutsKeepalive(t *testing.T) {
	_, port, _ := blastServer(t, ServerConfig{})
	root := os.Geteuid() == 0
	var checked bool
	hookConnected(t, func(cl *client) {
		checked = true
		ctrl := ctrlSock{cl.ctrl}
		if got := sockInt(t, ctrl, unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT); got != 2500 {
			t.Errorf("control connection TCP_USER_TIMEOUT %d, want 2500", got)
		}
		if sockInt(t, ctrl, unix.SOL_SOCKET, unix.SO_KEEPALIVE) != 1 {
			t.Error("control connection without SO_KEEPALIVE")
		}
		for _, o := range []struct {
			opt, want int
			name      string
		}{{unix.TCP_KEEPIDLE, 10, "TCP_KEEPIDLE"}, {unix.TCP_KEEPINTVL, 2, "TCP_KEEPINTVL"}, {unix.TCP_KEEPCNT, 3, "TCP_KEEPCNT"}} {
			if got := sockInt(t, ctrl, unix.IPPROTO_TCP, o.opt); got != o.want {
				t.Errorf("control connection %s %d, want %d", o.name, got, o.want)
			}
		}
		for _, st := range cl.sess.streams {
			if got := sockInt(t, st.sock, unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT); got != 2500 {
				t.Errorf("stream %d TCP_USER_TIMEOUT %d, want 2500", st.id, got)
			}
		}
		if root {
			if got := sockString(t, ctrl, unix.SOL_SOCKET, unix.SO_BINDTODEVICE); got != "lo" {
				t.Errorf("control connection bound to %q, want lo", got)
			}
			for _, st := range cl.sess.streams {
				if got := sockString(t, st.sock, unix.SOL_SOCKET, unix.SO_BINDTODEVICE); got != "lo" {
					t.Errorf("stream %d bound to %q, want lo", st.id, got)
				}
			}
		}
	})
	ka, err := ParseKeepAlive("10/2/3")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Port: port, Duration: time.Second, Parallel: 2, SndTimeout: 2500 * time.Millisecond, KeepAlive: ka}
	if root {
		cfg.BindDev = "lo"
	}
	if _, err := runClientErr(t, cfg); err != nil {
		t.Fatal(err)
	}
	if !checked {
		t.Fatal("the hook never ran")
	}

	// --cntl-ka without values: keepalive with the system's timings.
	sysIdle, err := os.ReadFile("/proc/sys/net/ipv4/tcp_keepalive_time")
	if err != nil {
		t.Skip(err)
	}
	want, _ := strconv.Atoi(strings.TrimSpace(string(sysIdle)))
	hookConnected(t, func(cl *client) {
		if got := sockInt(t, ctrlSock{cl.ctrl}, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE); got != want {
			t.Errorf("--cntl-ka alone: TCP_KEEPIDLE %d, want the system's %d", got, want)
		}
	})
	ka, _ = ParseKeepAlive("//")
	if _, err := runClientErr(t, Config{Port: port, Duration: time.Second, KeepAlive: ka}); err != nil {
		t.Fatal(err)
	}
}

func TestClientOptionErrors(t *testing.T) {
	ka, _ := ParseKeepAlive("5/2/3")
	two := 2
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{KeepAlive: ka}, "control connection Keepalive period should be larger than the full retry period (interval * count)"},
		{Config{RcvTimeout: time.Second}, "client receive timeout is valid only in receiving mode"},
		{Config{Reverse: true, RcvTimeout: 50 * time.Millisecond}, "receive timeout value is incorrect or not in range"},
		{Config{SndTimeout: -time.Second}, "send timeout value is incorrect or not in range"},
		{Config{File: "x", UDP: true}, "cannot transfer file using UDP"},
		{Config{File: "x", Bidir: true}, "one file cannot be both"},
		{Config{File: "x", Reverse: true, Parallel: 2}, "would write over each other"},
		{Config{FlowLabel: 0x100000}, "unable to set IPv6 flow label"},
		{Config{FlowLabel: 5, Family: "4"}, "unable to set IPv6 flow label"},
		{Config{RepeatingPayload: true, ZeroCopy: true}, "--repeating-payload with -Z"},
		{Config{SkipRxCopy: true, RxBackend: "readwrite"}, "--skip-rx-copy and --rx-backend readwrite"},
		{Config{GSRO: true, UDP: true, Backend: "readwrite"}, "--gsro and --backend readwrite"},
		{Config{MPTCP: true, UDP: true}, "MPTCP is Multipath TCP"},
		{Config{ServerAffinity: &[]int{2000}[0]}, "the server's CPU must be 0 to 1024"},
		{Config{Affinity: []int{-1}, ServerAffinity: &two}, "the CPU must be 0 to 1023"},
		{Config{CPort: 65535, Parallel: 2}, "beyond 65535"},
		{Config{Bind: netip.MustParseAddr("::1"), Family: "4"}, "-4 asks for IPv4"},
	} {
		cfg := tc.cfg
		cfg.Host = "127.0.0.1"
		cfg.Defaults()
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
	for _, s := range []string{"1/2/3/4", "x", "0", "-1//"} {
		if _, err := ParseKeepAlive(s); err == nil {
			t.Errorf("--cntl-ka=%s taken", s)
		}
	}
	ka, _ = ParseKeepAlive("/7/")
	if ka.Idle != -1 || ka.Interval != 7*time.Second || ka.Count != -1 {
		t.Errorf("--cntl-ka=/7/: %+v", ka)
	}
	for _, tc := range []struct{ in, host, dev string }{
		{"10.0.0.1%eth1", "10.0.0.1", "eth1"}, {"fe80::1%eth1", "fe80::1%eth1", ""},
		{"host.lab%veth0", "host.lab", "veth0"}, {"::1", "::1", ""}, {"10.0.0.1%", "10.0.0.1%", ""},
	} {
		if h, d := ParseBind(tc.in); h != tc.host || d != tc.dev {
			t.Errorf("ParseBind(%q) = %q, %q; want %q, %q", tc.in, h, d, tc.host, tc.dev)
		}
	}
}

// pinnedThreads counts this process's threads whose CPUs are only cpu.
func pinnedThreads(t *testing.T, cpu int) int {
	tasks, err := filepath.Glob("/proc/self/task/*/status")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok && strings.TrimSpace(v) == strconv.Itoa(cpu) {
				n++
			}
		}
	}
	return n
}

// TestClientAffinity: -A n pins every data stream's thread to CPU n while
// the test runs; -A n,m asks the server for CPU m.
func TestClientAffinity(t *testing.T) {
	var mine unix.CPUSet
	if err := unix.SchedGetaffinity(0, &mine); err != nil {
		t.Fatal(err)
	}
	if mine.Count() < 2 {
		t.Skip("needs two CPUs to tell a pinned thread from the rest")
	}
	cpu := -1
	for c := range engine.MaxCPU + 1 {
		if mine.IsSet(c) {
			cpu = c
		}
	}
	_, port, log := blastServer(t, ServerConfig{})
	m := 0
	before := pinnedThreads(t, cpu)
	var during []int
	var mu sync.Mutex
	cfg := Config{Port: port, Duration: time.Second, Interval: 250 * time.Millisecond, Parallel: 2, Affinity: []int{cpu}, ServerAffinity: &m,
		OnInterval: func(*result.Result, *result.Interval) {
			n := pinnedThreads(t, cpu)
			mu.Lock()
			during = append(during, n)
			mu.Unlock()
		}}
	if _, err := runClientErr(t, cfg); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(during) == 0 {
		t.Fatal("no interval")
	}
	// The last interval is closed once the streams have ended: the
	// intervals before it saw them running.
	most := 0
	for _, n := range during[:len(during)-1] {
		most = max(most, n)
	}
	if most-before < 2 {
		t.Errorf("threads pinned to CPU %d while the streams ran: %v (before: %d), want the 2 streams' at least", cpu, during, before)
	}
	if after := pinnedThreads(t, cpu); after > before {
		t.Errorf("%d threads still pinned to CPU %d after the test (before: %d)", after, cpu, before)
	}
	srv := log.wait(t, 1)[0]
	if srv.Params.ServerAffinity == nil || *srv.Params.ServerAffinity != 0 {
		t.Errorf("the server got server_affinity %v, want 0", srv.Params.ServerAffinity)
	}
}

func randomFile(t *testing.T, n int) (string, []byte) {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	name := filepath.Join(t.TempDir(), "src.bin")
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return name, b
}

// TestClientFileSend: -F sends the file's bytes, exactly, to an iperf3
// server that writes what it gets (iperf3 -s -F).
func TestClientFileSend(t *testing.T) {
	src, want := randomFile(t, 3<<20+123)
	dst := filepath.Join(t.TempDir(), "dst.bin")
	port, wait := iperf3ServerArgs(t, "127.0.0.1", "-F", dst)
	r, err := runClientErr(t, Config{Port: port, File: src, Bytes: int64(len(want))})
	if err != nil {
		t.Fatal(err)
	}
	wait()
	checkCopy(t, dst, want, r, src)
	if out := render.TextString(r); !strings.Contains(out, "        Sent 3.00 MByte / 3.00 MByte (100%) of "+src+"\n") {
		t.Errorf("no -F line:\n%s", out)
	}
}

// TestClientFileEndsTheTest: a sender's test ends at the end of its file,
// however long -t is, having sent the file whole: the test measured less
// than its -t (a test that ran to its time measures all of it), and the
// result names the file, sent in full.
func TestClientFileEndsTheTest(t *testing.T) {
	src, want := randomFile(t, 1<<20)
	_, port, log := blastServer(t, ServerConfig{})
	const testTime = 20 * time.Second
	r, err := runClientErr(t, Config{Port: port, File: src, Duration: testTime})
	if err != nil {
		t.Fatal(err)
	}
	if s := sumsOf(r); s.upSent != int64(len(want)) || s.upRecv != int64(len(want)) {
		t.Errorf("sent %d, the server got %d, of a %d-byte file", s.upSent, s.upRecv, len(want))
	}
	if st := r.Streams[0]; st.Seconds >= testTime.Seconds() {
		t.Errorf("the test measured %.3f s of its -t %v: it ran to its time, not to the file's end", st.Seconds, testTime)
	}
	if srv := log.wait(t, 1)[0]; srv.Streams[0].Seconds >= testTime.Seconds() {
		t.Errorf("the server measured %.3f s of -t %v", srv.Streams[0].Seconds, testTime)
	}
	if r.File == nil || r.File.Size != int64(len(want)) || r.File.Name != src {
		t.Errorf("Result.File %+v, want %s of %d bytes", r.File, src, len(want))
	}
	if out := render.TextString(r); !strings.Contains(out, "        Sent 1.00 MByte / 1.00 MByte (100%) of "+src+"\n") {
		t.Errorf("no -F line saying the whole file went:\n%s", out)
	}
}

// TestClientFileReceive: with -R, -F writes what the server sends: an
// iperf3 server sending a file (iperf3 -s -F) gets it copied whole.
func TestClientFileReceive(t *testing.T) {
	src, want := randomFile(t, 2<<20+77)
	dst := filepath.Join(t.TempDir(), "copy.bin")
	os.WriteFile(dst, []byte("old contents, longer than nothing"), 0o644)
	port, wait := iperf3ServerArgs(t, "127.0.0.1", "-F", src)
	r, err := runClientErr(t, Config{Port: port, Reverse: true, File: dst, Bytes: int64(len(want))})
	if err != nil {
		t.Fatal(err)
	}
	wait()
	checkCopy(t, dst, want, r, dst)
}

// checkCopy checks that file dst holds want, and that the Result names
// the client's -F file and its size.
func checkCopy(t *testing.T, dst string, want []byte, r *result.Result, file string) {
	t.Helper()
	got, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s holds %d bytes, not the %d of the file (first difference at %d)", dst, len(got), len(want), firstDiff(got, want))
	}
	if r.File == nil || r.File.Size != int64(len(want)) || r.File.Name != file {
		t.Errorf("Result.File %+v, want %s of %d bytes", r.File, file, len(want))
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// repeatingOK reports whether b is iperf3's repeating payload sent in
// blocks of blk bytes, each starting again at '0'.
func repeatingOK(b []byte, blk int) (int, bool) {
	for i, c := range b {
		if c != '0'+byte(i%blk%10) {
			return i, false
		}
	}
	return 0, true
}

// TestClientRepeatingPayload: --repeating-payload sends iperf3's payload,
// every block from '0', and asks the server to send it too.
func TestClientRepeatingPayload(t *testing.T) {
	t.Run("client sends", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "dst.bin")
		port, wait := iperf3ServerArgs(t, "127.0.0.1", "-F", dst)
		if _, err := runClientErr(t, Config{Port: port, RepeatingPayload: true, Bytes: 300 << 10}); err != nil {
			t.Fatal(err)
		}
		wait()
		got, _ := os.ReadFile(dst)
		if i, ok := repeatingOK(got, wire.DefaultTCPBlock); !ok || len(got) != 300<<10 {
			t.Errorf("iperf3 got %d bytes, the payload breaks at %d: %q", len(got), i, got[i:min(i+20, len(got))])
		}
	})
	t.Run("iperf3 sends", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "dst.bin")
		port, wait := iperf3ServerArgs(t, "127.0.0.1")
		if _, err := runClientErr(t, Config{Port: port, Reverse: true, RepeatingPayload: true, File: dst, Bytes: 300 << 10}); err != nil {
			t.Fatal(err)
		}
		wait()
		got, _ := os.ReadFile(dst)
		if i, ok := repeatingOK(got, wire.DefaultTCPBlock); !ok || len(got) < 300<<10 {
			t.Errorf("received %d bytes, the payload breaks at %d", len(got), i)
		}
	})
	t.Run("udp", func(t *testing.T) {
		_, port, log := blastServer(t, ServerConfig{})
		if _, err := runClientErr(t, Config{Port: port, UDP: true, RepeatingPayload: true, BlockLen: 100, Blocks: 50, Rate: 1e6, RateSet: true}); err != nil {
			t.Fatal(err)
		}
		if p := log.wait(t, 1)[0].Params; p.RepeatingPayload != 1 {
			t.Errorf("the server got repeating_payload %d", p.RepeatingPayload)
		}
		// What a datagram carries after iperf3's header.
		u := newUDPFraming(false)
		u.repeat = true
		p := make([]byte, 100)
		u.Stamp(p, time.Second)
		for i := 12; i < len(p); i++ {
			if p[i] != '0'+byte(i%10) {
				t.Fatalf("datagram byte %d is %q, want %q", i, p[i], '0'+byte(i%10))
			}
		}
		if binary.BigEndian.Uint32(p[8:]) != 1 {
			t.Errorf("sequence number %d", binary.BigEndian.Uint32(p[8:]))
		}
	})
}

// TestClientExtraData: --extra-data reaches iperf3's JSON document and
// blast's.
func TestClientExtraData(t *testing.T) {
	port, wait := iperf3ServerArgs(t, "127.0.0.1")
	r, err := runClientErr(t, Config{Port: port, Duration: time.Second, ExtraData: "rack b, run 7"})
	if err != nil {
		t.Fatal(err)
	}
	var d iperf3Doc
	if err := json.Unmarshal(wait(), &d); err != nil {
		t.Fatal(err)
	}
	if d.ExtraData != "rack b, run 7" {
		t.Errorf("iperf3's extra_data %q", d.ExtraData)
	}
	b, _ := render.JSONBytes(r)
	var mine iperf3Doc
	json.Unmarshal(b, &mine)
	if mine.ExtraData != "rack b, run 7" {
		t.Errorf("blast's extra_data %q", mine.ExtraData)
	}
}

// TestClientRcvTimeout: a receiving client that gets nothing for
// --rcv-timeout ends the test with iperf3's error (iperf3 -s sending one
// block, then nothing at 8 bit/s), not at its -t of 20 s (which would end
// it without an error). How soon is TestTimingRcvTimeoutReported's.
func TestClientRcvTimeout(t *testing.T) {
	port, _ := iperf3ServerArgs(t, "127.0.0.1")
	_, err := runClientErr(t, Config{Port: port, Reverse: true, Rate: 8, RateSet: true, BlockLen: 1024,
		Duration: 20 * time.Second, RcvTimeout: 500 * time.Millisecond})
	if !errors.Is(err, ErrNoData) || !strings.Contains(err.Error(), "idle timeout for receiving data") {
		t.Fatalf("err %v, want iperf3's idle timeout", err)
	}
}

// TestClientSkipRxCopy: --skip-rx-copy receives with MSG_TRUNC and asks
// the server to.
func TestClientSkipRxCopy(t *testing.T) {
	port, _ := iperf3ServerArgs(t, "127.0.0.1")
	r, err := runClientErr(t, Config{Port: port, Reverse: true, SkipRxCopy: true, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Backend, "trunc") || sumsOf(r).downRecv <= 0 {
		t.Errorf("received %d bytes with %q, want trunc", sumsOf(r).downRecv, r.Backend)
	}
	_, bport, log := blastServer(t, ServerConfig{})
	if _, err := runClientErr(t, Config{Port: bport, SkipRxCopy: true, Duration: time.Second}); err != nil {
		t.Fatal(err)
	}
	if p := log.wait(t, 1)[0].Params; p.SkipRxCopy != 1 {
		t.Errorf("the server got skip_rx_copy %d", p.SkipRxCopy)
	}
}

// TestClientGSRO: --gsro sends and receives UDP with GSO and GRO and asks
// the server for them with iperf3 3.21's parameters.
func TestClientGSRO(t *testing.T) {
	if !mmsgUsable() {
		t.Skip("no mmsg backend here")
	}
	_, port, log := blastServer(t, ServerConfig{})
	r, err := runClientErr(t, Config{Port: port, UDP: true, GSRO: true, BlockLen: 1400, Rate: 50e6, RateSet: true, Duration: time.Second, Bidir: true})
	if err != nil {
		t.Fatal(err)
	}
	p := log.wait(t, 1)[0].Params
	if p.GSO != 1 || p.GRO != 1 || p.GSODgSize != 1400 || p.GSOBfSize != wire.MaxUDPBlock/1400*1400 || p.GROBfSize != wire.MaxUDPBlock {
		t.Errorf("the server got gso %d/%d/%d, gro %d/%d", p.GSO, p.GSODgSize, p.GSOBfSize, p.GRO, p.GROBfSize)
	}
	if !strings.HasPrefix(r.Backend, "mmsg") {
		t.Errorf("sent with %q, want mmsg", r.Backend)
	}
	cfg := Config{Host: "h", UDP: true, GSRO: true, Backend: "mmsg", BackendOptions: "batch=8"}
	cfg.Defaults()
	if cfg.BackendOptions != "batch=8,gso,gro" {
		t.Errorf("--gsro --backend mmsg:batch=8 sends with %q", cfg.BackendOptions)
	}
	// An iperf3 3.21 server takes the parameters, where there is one.
	if bin, err := exec.LookPath("/work/bin/iperf3-3.21"); err == nil {
		port := testkit.FreePort(t)
		srv := exec.Command(bin, "-s", "-1", "-B", "127.0.0.1", "-p", strconv.Itoa(port))
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { srv.Process.Kill(); srv.Wait() }()
		waitListen(t, port)
		r, err := runClientErr(t, Config{Port: port, UDP: true, GSRO: true, BlockLen: 1400, Rate: 20e6, RateSet: true, Duration: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if s := sumsOf(r); s.upRecv <= 0 {
			t.Errorf("iperf3 3.21 with GSO/GRO received %d bytes", s.upRecv)
		}
	}
}

// TestClientMPTCP: -m makes the data streams MPTCP sockets where the
// kernel has MPTCP (an iperf3 server without it gets plain TCP, as MPTCP
// falls back), and says why not where it has not.
func TestClientMPTCP(t *testing.T) {
	enabled, _ := os.ReadFile("/proc/sys/net/mptcp/enabled")
	_, port, log := blastServer(t, ServerConfig{})
	var protos []int
	hookConnected(t, func(cl *client) {
		for _, st := range cl.sess.streams {
			protos = append(protos, sockInt(t, st.sock, unix.SOL_SOCKET, unix.SO_PROTOCOL))
		}
	})
	r, err := runClientErr(t, Config{Port: port, MPTCP: true, Duration: time.Second, Parallel: 2})
	if strings.TrimSpace(string(enabled)) != "1" {
		if !errors.Is(err, engine.ErrNotSupported) {
			t.Fatalf("MPTCP off: %v, want ErrNotSupported", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(protos) != fmt.Sprint([]int{unix.IPPROTO_MPTCP, unix.IPPROTO_MPTCP}) {
		t.Errorf("data socket protocols %v, want IPPROTO_MPTCP", protos)
	}
	// Everything written arrived: in the test's time or after it.
	if s, w := sumsOf(r), writtenBy(r, true)(true); s.upRecv <= 0 || s.upRecv+s.upDrained != w || s.upSent > w {
		t.Errorf("wrote %d, counted %d sent; received %d in the test and %d after it", w, s.upSent, s.upRecv, s.upDrained)
	}
	if !log.wait(t, 1)[0].Params.MPTCP {
		t.Error("the server did not get mptcp")
	}
	iport, _ := iperf3ServerArgs(t, "127.0.0.1")
	if _, err := runClientErr(t, Config{Port: iport, MPTCP: true, Duration: time.Second}); err != nil {
		t.Errorf("against iperf3 -s: %v", err)
	}
}

// TestClientDebug: -d writes iperf3's debug lines: the parameters and
// results as they cross, each stream's buffers; from level 3 every state.
func TestClientDebug(t *testing.T) {
	_, port, _ := blastServer(t, ServerConfig{})
	var b testkit.SyncBuffer
	if _, err := runClientErr(t, Config{Port: port, Duration: time.Second, Debug: &b, DebugLevel: 4}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Reading new State from the Server - current state is 0-Test reset\n",
		"State change: client received and changed State to 9-PARAM_EXCHANGE - Client to Server Parameters Exchange\n",
		"send_parameters:\n{\n\t\"tcp\": true,",
		"State change: client received and changed State to 10-CREATE_STREAMS\n",
		"SNDBUF is ", "RCVBUF is ", "Congestion algorithm is ",
		"State change: client received and changed State to 2-TEST_RUNNING\n",
		"State change: State set to 4-TEST_END (from 2-TEST_RUNNING)\n",
		"send_results\n{\n\t\"cpu_util_total\"",
		"get_results\n{\n\t\"cpu_util_total\"",
		"State change: State set to 16-IPERF_DONE (from 14-DISPLAY_RESULTS)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("-d output lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	if _, err := runClientErr(t, Config{Port: port, Duration: time.Second, Debug: &b, DebugLevel: 1}); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "send_parameters:") || strings.Contains(out, "State change") {
		t.Errorf("-d=1 writes the parameters and no state changes:\n%s", out)
	}
}

// intervalCases are tests, timed and of a byte count, against iperf3 -s
// and a blast server, with interval reports.
type intervalCase struct {
	name   string
	iperf3 bool
	cfg    Config
}

var intervalCases = []intervalCase{
	{"t", true, Config{Duration: time.Second, Interval: 300 * time.Millisecond}},
	{"t-R", true, Config{Duration: time.Second, Reverse: true, Interval: 300 * time.Millisecond}},
	{"t-udp", true, Config{Duration: time.Second, UDP: true, Rate: 50e6, RateSet: true, Interval: 300 * time.Millisecond}},
	{"n-blast", false, Config{Bytes: 256 << 20, Parallel: 2, Interval: 100 * time.Millisecond}},
	{"n-R-blast", false, Config{Bytes: 256 << 20, Reverse: true, Interval: 100 * time.Millisecond}},
	{"n-bidir-blast", false, Config{Bytes: 128 << 20, Bidir: true, Interval: 100 * time.Millisecond}},
	{"t-bidir-blast", false, Config{Duration: time.Second, Bidir: true, Interval: 300 * time.Millisecond}},
}

// runIntervalCase runs tc against a fresh iperf3 -s, or the blast server
// on bport.
func runIntervalCase(t *testing.T, tc intervalCase, bport int) (*result.Result, Config) {
	t.Helper()
	cfg := tc.cfg
	cfg.Port = bport
	if tc.iperf3 {
		cfg.Port, _ = iperf3ServerArgs(t, "127.0.0.1")
	}
	r, err := runClientErr(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Intervals) == 0 {
		t.Fatal("no intervals")
	}
	return r, cfg
}

// TestClientIntervalsEndWithTheSummary (issue 11 item 5): the last
// interval ends where the summary does, for time tests and byte counts,
// both ways, against iperf3 and a blast server.
func TestClientIntervalsEndWithTheSummary(t *testing.T) {
	_, bport, _ := blastServer(t, ServerConfig{})
	for _, tc := range intervalCases {
		t.Run(tc.name, func(t *testing.T) {
			r, cfg := runIntervalCase(t, tc, bport)
			last := r.Intervals[len(r.Intervals)-1]
			for _, si := range last.Streams {
				st := r.Streams[0]
				for _, s := range r.Streams {
					if s.ID == si.ID {
						st = s
					}
				}
				if si.End != st.Seconds {
					t.Errorf("stream %d: the last interval ends at %.6f, its summary at %.6f", si.ID, si.End, st.Seconds)
				}
				// The test ran its time. That the end is when the test
				// stopped, not after the exchange of results, is a
				// timing property (TestTimingIntervalsEndWithTheTest).
				if cfg.Duration > 0 && si.End < cfg.Duration.Seconds() {
					t.Errorf("stream %d: the last interval of -t %v ends at %.6f", si.ID, cfg.Duration, si.End)
				}
			}
			// Every byte of the summary is in the intervals.
			for _, st := range r.Streams {
				var sum int64
				for _, iv := range r.Intervals {
					for _, si := range iv.Streams {
						if si.ID == st.ID {
							sum += si.Bytes
						}
					}
				}
				if sum != st.Bytes {
					t.Errorf("stream %d: intervals hold %d bytes, the summary %d", st.ID, sum, st.Bytes)
				}
			}
		})
	}
}

// TestClientReverseJSONKeys (issue 11 item 5): a -R test's sender summary
// has the keys iperf3 writes there, with zeros: the client cannot know
// the server's TCP_INFO.
func TestClientReverseJSONKeys(t *testing.T) {
	port, _ := iperf3ServerArgs(t, "127.0.0.1")
	r, err := runClientErr(t, Config{Port: port, Reverse: true, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := render.JSONBytes(r)
	var d struct {
		End struct {
			Streams []struct {
				Sender map[string]any `json:"sender"`
			} `json:"streams"`
		} `json:"end"`
	}
	if err := json.Unmarshal(b, &d); err != nil || len(d.End.Streams) != 1 {
		t.Fatalf("%v: %s", err, b)
	}
	for _, k := range []string{"retransmits", "max_snd_cwnd", "max_snd_wnd", "max_rtt", "min_rtt", "mean_rtt"} {
		if v, ok := d.End.Streams[0].Sender[k]; !ok || (k != "retransmits" && v != 0.0) {
			t.Errorf("sender.%s = %v (present %v), want 0", k, v, ok)
		}
	}
}

// TestClientFlowLabel: -L puts the flow label on every packet of the data
// streams (captured on lo), towards iperf3 on ::1.
func TestClientFlowLabel(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (packet capture)")
	}
	if ln, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		t.Skip("no IPv6 loopback")
	} else {
		ln.Close()
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, int(netOrder(unix.ETH_P_IPV6)))
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	lo, _ := net.InterfaceByName("lo")
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: netOrder(unix.ETH_P_IPV6), Ifindex: lo.Index}); err != nil {
		t.Fatal(err)
	}
	tv := unix.NsecToTimeval(int64(100 * time.Millisecond))
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	port, _ := iperf3ServerArgs(t, "::1")
	const label = 0x2bead
	type pkt struct {
		src   uint16
		label uint32
	}
	var (
		mu   sync.Mutex
		seen []pkt
		stop = make(chan struct{})
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		buf := make([]byte, 65536)
		for {
			select {
			case <-stop:
				return
			default:
			}
			n, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil || n < 44 || buf[6] != unix.IPPROTO_TCP || binary.BigEndian.Uint16(buf[42:44]) != uint16(port) {
				continue
			}
			mu.Lock()
			seen = append(seen, pkt{binary.BigEndian.Uint16(buf[40:42]), binary.BigEndian.Uint32(buf[0:4]) & engine.MaxFlowLabel})
			mu.Unlock()
		}
	}()
	r, err := runClientErr(t, Config{Host: "::1", Family: "6", Port: port, Duration: time.Second, FlowLabel: label})
	close(stop)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	data := r.Streams[0].Local.Port()
	n := 0
	mu.Lock()
	defer mu.Unlock()
	for _, p := range seen {
		if p.src != data {
			continue
		}
		n++
		if p.label != label {
			t.Fatalf("a data packet carries flow label %#x, want %#x", p.label, label)
		}
	}
	if n == 0 {
		t.Fatalf("captured no data packet of port %d (%d packets to the server)", data, len(seen))
	}
}

func netOrder(v uint16) uint16 { return v<<8 | v>>8 }

// TestClientFlowLabelIPv4: -L towards an IPv4 server stops before the
// test starts, in iperf3's words.
func TestClientFlowLabelIPv4(t *testing.T) {
	_, port, log := blastServer(t, ServerConfig{})
	_, err := runClientErr(t, Config{Port: port, Duration: time.Second, FlowLabel: 7})
	if err == nil || !strings.Contains(err.Error(), "unable to set IPv6 flow label: the server's address 127.0.0.1 is IPv4") {
		t.Fatalf("err %v", err)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.res) != 0 {
		t.Errorf("the server ran %d tests", len(log.res))
	}
}
