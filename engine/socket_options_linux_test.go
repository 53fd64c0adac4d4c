package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// needRoot skips a test that needs CAP_NET_RAW or CAP_NET_ADMIN.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (raw packet capture)")
	}
}

// captureLo opens an AF_PACKET socket on lo that keeps the IPv6 TCP
// packets to port and nothing else, so that no other traffic on lo (a
// busy host's other tests) fills its buffer and crowds them out. read
// returns the IPv6 header and payload of the next one, waiting for it up
// to 30 s: a bound for a failure, not a timing.
func captureLo(t *testing.T, port uint16) (read func() ([]byte, error)) {
	t.Helper()
	// Protocol 0: the socket sees nothing until it is bound, after its
	// filter is on.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	// A SOCK_DGRAM packet socket's filter sees the packet from its IPv6
	// header on: next header at byte 6, the TCP destination port at 42.
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_B | unix.BPF_ABS, K: 6},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 3, K: unix.IPPROTO_TCP},
		{Code: unix.BPF_LD | unix.BPF_H | unix.BPF_ABS, K: 42},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: uint32(port)},
		{Code: unix.BPF_RET | unix.BPF_K, K: 1 << 16},
		{Code: unix.BPF_RET | unix.BPF_K, K: 0},
	}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}); err != nil {
		t.Fatal(err)
	}
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: netOrder16(unix.ETH_P_IPV6), Ifindex: lo.Index}); err != nil {
		t.Fatal(err)
	}
	tv := unix.NsecToTimeval(int64(30 * time.Second))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 65536)
	return func() ([]byte, error) {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		for err == unix.EINTR { // the runtime's preemption signal
			n, _, err = unix.Recvfrom(fd, buf, 0)
		}
		if errors.Is(err, unix.EAGAIN) {
			return nil, errors.New("no packet to the listener in 30 s")
		}
		if err != nil {
			return nil, err
		}
		return buf[:n], nil
	}
}

func netOrder16(v uint16) uint16 { return v<<8 | v>>8 }

// TestDialFlowLabel: every packet a flow-labelled TCP socket sends to a
// listener on ::1 carries the label in its IPv6 header, and the kernel
// lists the label it handed out.
func TestDialFlowLabel(t *testing.T) {
	needRoot(t)
	if _, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		t.Skip("no IPv6 loopback:", err)
	}
	ln, err := Listen(context.Background(), "tcp6", "[::1]:0", SockOpts{TOS: NoTOS})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	read := captureLo(t, ln.Addr().Port()) // on before the flow starts
	const label = 0x5b1a5
	s, err := Dial(context.Background(), "tcp6", net.JoinHostPort("::1", strconv.Itoa(int(ln.Addr().Port()))), SockOpts{TOS: NoTOS, FlowLabel: label})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Write([]byte("labelled")); err != nil {
		t.Fatal(err)
	}
	seen := 0
	// Reading stops at 30 s: a bound for a failure (the packets were
	// sent before, and the capture kept them), not a timing.
	for deadline := time.Now().Add(30 * time.Second); seen < 2 && time.Now().Before(deadline); {
		p, err := read()
		if err != nil {
			t.Fatalf("capture: %v (saw %d packets of the flow)", err, seen)
		}
		if len(p) < 44 || p[6] != unix.IPPROTO_TCP {
			continue
		}
		src := binary.BigEndian.Uint16(p[40:42])
		dst := binary.BigEndian.Uint16(p[42:44])
		if src != s.LocalAddr().Port() || dst != ln.Addr().Port() {
			continue
		}
		seen++
		if got := binary.BigEndian.Uint32(p[0:4]) & MaxFlowLabel; got != label {
			t.Errorf("packet %d of the flow has flow label %#x, want %#x", seen, got, label)
		}
	}
	if seen < 2 {
		t.Fatalf("captured %d packets of the flow", seen)
	}
	b, err := os.ReadFile("/proc/net/ip6_flowlabel")
	if err == nil && !strings.Contains(strings.ToLower(string(b)), "5b1a5") {
		t.Errorf("/proc/net/ip6_flowlabel does not list %#x:\n%s", label, b)
	}
}

func TestDialFlowLabelRefused(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = Dial(context.Background(), "tcp4", ln.Addr().String(), SockOpts{TOS: NoTOS, FlowLabel: 7})
	if err == nil || !strings.Contains(err.Error(), "IPv4 peer") {
		t.Errorf("flow label towards IPv4: %v, want the IPv4 refusal", err)
	}
	_, err = Dial(context.Background(), "tcp6", "[::1]:9", SockOpts{TOS: NoTOS, FlowLabel: MaxFlowLabel + 1})
	if err == nil || !strings.Contains(err.Error(), "20 bits") {
		t.Errorf("flow label %#x: %v, want the range error", MaxFlowLabel+1, err)
	}
}

// TestDialMPTCP: with MPTCP on, a dialled socket is IPPROTO_MPTCP; with it
// off, Dial says so with ErrNotSupported.
func TestDialMPTCP(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s, err := Dial(context.Background(), "tcp4", ln.Addr().String(), SockOpts{TOS: NoTOS, MPTCP: true})
	probe := ProbeMPTCP()
	enabled, _ := os.ReadFile("/proc/sys/net/mptcp/enabled")
	if strings.TrimSpace(string(enabled)) != "1" {
		if !errors.Is(err, ErrNotSupported) || !errors.Is(probe, ErrNotSupported) {
			t.Fatalf("MPTCP off or absent: Dial says %v, ProbeMPTCP %v, want ErrNotSupported", err, probe)
		}
		return
	}
	if probe != nil {
		t.Errorf("net.mptcp.enabled is 1, yet ProbeMPTCP says %v", probe)
	}
	if err != nil {
		t.Fatalf("net.mptcp.enabled is 1, yet: %v", err)
	}
	defer s.Close()
	var proto int
	s.Control(func(fd int) (err error) {
		proto, err = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PROTOCOL)
		return err
	})
	if proto != unix.IPPROTO_MPTCP {
		t.Errorf("SO_PROTOCOL %d, want IPPROTO_MPTCP (%d)", proto, unix.IPPROTO_MPTCP)
	}
}

// affinityProbe is a backend that records the CPUs its thread may run on.
type affinityProbe struct{ got chan unix.CPUSet }

func (affinityProbe) Name() string                        { return "affinity-probe" }
func (affinityProbe) Probe() error                        { return nil }
func (a affinityProbe) Send(context.Context, *Flow) error { return a.record() }
func (a affinityProbe) Recv(context.Context, *Flow) error { return a.record() }
func (a affinityProbe) record() error {
	var set unix.CPUSet
	err := unix.SchedGetaffinity(0, &set)
	a.got <- set
	return err
}

func TestRunAffinity(t *testing.T) {
	var mine unix.CPUSet
	if err := unix.SchedGetaffinity(0, &mine); err != nil {
		t.Fatal(err)
	}
	cpu := -1
	for c := range MaxCPU + 1 {
		if mine.IsSet(c) {
			cpu = c // the last CPU this process may use
		}
	}
	for _, send := range []bool{true, false} {
		p := affinityProbe{got: make(chan unix.CPUSet, 1)}
		f := &Flow{Spec: &Spec{Protocol: TCP, BufLen: 1, Affinity: []int{cpu}}, Stats: &Counters{}}
		if err := Run(context.Background(), p, f, send); err != nil {
			t.Fatal(err)
		}
		got := <-p.got
		if got.Count() != 1 || !got.IsSet(cpu) {
			t.Errorf("send %v: the flow's thread may run on %d CPUs (CPU %d: %v), want only CPU %d", send, got.Count(), cpu, got.IsSet(cpu), cpu)
		}
	}
	// Unpinned, the flow's thread has the process's CPUs.
	p := affinityProbe{got: make(chan unix.CPUSet, 1)}
	if err := Run(context.Background(), p, &Flow{Spec: &Spec{Protocol: TCP, BufLen: 1}, Stats: &Counters{}}, true); err != nil {
		t.Fatal(err)
	}
	if got := <-p.got; got != mine {
		t.Errorf("an unpinned flow's thread may run on %d CPUs, the process on %d", got.Count(), mine.Count())
	}
	// A CPU the process cannot have fails the flow before the backend runs.
	absent := -1
	for c := MaxCPU; c >= 0; c-- {
		if !mine.IsSet(c) {
			absent = c
			break
		}
	}
	p = affinityProbe{got: make(chan unix.CPUSet, 1)}
	err := Run(context.Background(), p, &Flow{Spec: &Spec{Protocol: TCP, BufLen: 1, Affinity: []int{absent}}, Stats: &Counters{}}, true)
	if err == nil || !strings.Contains(err.Error(), "none of them is online") {
		t.Errorf("pin to CPU %d: %v, want the refusal", absent, err)
	}
	if len(p.got) != 0 {
		t.Error("the backend ran although the pin failed")
	}
	if err := (&Spec{BufLen: 1, Affinity: []int{MaxCPU + 1}}).Validate(); err == nil {
		t.Errorf("Validate took CPU %d", MaxCPU+1)
	}
}
