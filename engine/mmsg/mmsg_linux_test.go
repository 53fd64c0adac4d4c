package mmsg_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/engine/enginetest"
	"github.com/blastnet/blast/engine/mmsg"
	"github.com/blastnet/blast/internal/testkit"
)

// hang bounds every wait of these tests: a backend that hangs fails them
// instead of hanging them. It is a hang detector, not a timing assertion.
const hang = 20 * time.Second

// The suite runs mmsg with its default batches of 64 messages per call,
// with GSO and GRO, and with batches of 8.
func TestConformance(t *testing.T) {
	for _, opts := range []string{"", "gso,gro", "batch=8"} {
		t.Run("options="+opts, func(t *testing.T) {
			batch := 64
			switch opts {
			case "gso,gro":
				batch = 8 * 64 // trains of up to 64 datagrams
			case "batch=8":
				batch = 8
			}
			enginetest.Run(t, mmsg.Backend{}, enginetest.Caps{
				UDPSend: true, UDPRecv: true, Source: true, Sink: true,
				Batch: batch, Timeout: true, Options: opts,
				FramingSend: true, FramingRecv: true,
			})
		})
	}
}

// configured returns mmsg with the options s.
func configured(t testing.TB, s string) engine.Backend {
	t.Helper()
	b, _, err := engine.Configure(mmsg.Backend{}, s)
	if err != nil {
		t.Fatalf("options %q: %v", s, err)
	}
	return b
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		opts    string
		wantErr string // "" for none
	}{
		{"batch=1024", ""},
		{"batch=1025", "at most 1024"},
		{"gso,gro,batch=3", ""},
		{"gso=1", "takes no value"},
	} {
		_, _, err := engine.Configure(mmsg.Backend{}, tc.opts)
		if got := fmt.Sprint(err); tc.wantErr == "" && err != nil || tc.wantErr != "" && !strings.Contains(got, tc.wantErr) {
			t.Errorf("options %q: got %v, want %q", tc.opts, err, tc.wantErr)
		}
	}
}

// udpPair returns two engine UDP sockets over loopback connected to each
// other; rx has a receive buffer large enough for a test's datagrams.
func udpPair(t testing.TB) (tx, rx *engine.Socket) {
	t.Helper()
	ctx := context.Background()
	rx, err := engine.ListenUDP(ctx, "udp4", "127.0.0.1:0", engine.SockOpts{TOS: engine.NoTOS})
	if err != nil {
		t.Fatal(err)
	}
	rx.Control(func(fd int) error {
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 32<<20) != nil {
			unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 32<<20)
		}
		return nil
	})
	tx, err = engine.Dial(ctx, "udp4", rx.LocalAddr().String(), engine.SockOpts{TOS: engine.NoTOS})
	if err != nil {
		rx.Close()
		t.Fatal(err)
	}
	if err := rx.Connect(tx.LocalAddr()); err != nil {
		rx.Close()
		tx.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Close(); rx.Close() })
	return tx, rx
}

func newFlow(s *engine.Socket, spec *engine.Spec) *engine.Flow {
	return &engine.Flow{Sock: s, Spec: spec, Stats: &engine.Counters{}}
}

// transfer runs the send of sent (tx's flow) and the receive of got (rx's
// flow) through engine.Run, then sends the 4-byte sentinel until the
// receiver ends. The receiver's flow must take SentinelMax 4. It returns
// how long the send took.
func transfer(t testing.TB, tx, rx engine.Backend, sent, got *engine.Flow) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- engine.Run(ctx, rx, got, false) }()
	// The receive is set up (UDP_GRO on, which a GSO train must find to
	// arrive whole) once it waits in its first recvmmsg.
	blockedIn(t, unix.SYS_RECVMMSG, got.Sock.FD())
	start := time.Now()
	if err := engine.Run(ctx, tx, sent, true); err != nil {
		t.Fatalf("send: %v", err)
	}
	took := time.Since(start)
	// The sentinel, again while the receiver has not ended: one may be
	// dropped when the receiver is behind.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := sent.Sock.Write([]byte("end!")); err != nil && !errors.Is(err, unix.ECONNREFUSED) {
			t.Fatalf("send the sentinel: %v", err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("recv: %v", err)
			}
			return took
		case <-tick.C:
		}
	}
}

// counts is what a test compares of a Sample.
type counts struct{ Datagrams, Bytes int64 }

func countsOf(f *engine.Flow) counts {
	s := f.Stats.Snapshot()
	return counts{s.Datagrams, s.Bytes}
}

func TestBatches(t *testing.T) {
	const count, size = 2000, 1200
	for _, tc := range []struct {
		name   string
		tx, rx string
	}{
		{"batch 64", "batch=64", "batch=64"},
		{"batch 7", "batch=7", "batch=5"},
		{"gso", "gso", "batch=64"},
		{"gso gro", "gso", "gro"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := udpPair(t)
			sent := newFlow(a, &engine.Spec{Protocol: engine.UDP, BufLen: size, Bytes: count * size, Rate: 400e6})
			got := newFlow(b, &engine.Spec{Protocol: engine.UDP, BufLen: size, SentinelMax: 4})
			transfer(t, configured(t, tc.tx), configured(t, tc.rx), sent, got)
			want := counts{count, count * size}
			if diff := cmp.Diff(want, countsOf(sent)); diff != "" {
				t.Errorf("sender counters (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, countsOf(got)); diff != "" {
				t.Errorf("receiver counters (-want +got):\n%s", diff)
			}
			s := sent.Stats.Snapshot()
			if s.DataCalls() >= count/2 {
				t.Errorf("sender made %d calls for %d datagrams: not batching", s.DataCalls(), count)
			}
			sf, rf := sent.Facts.Snapshot(), got.Facts.Snapshot()
			if strings.Contains(tc.tx, "gso") {
				// 2000 datagrams in trains of at most 54 (65507/1200).
				if n := sf.Counts["gso_messages"]; n < count/54 || n > count/2 {
					t.Errorf("gso_messages = %d, want about %d (%v)", n, count/54+1, sf.Lines())
				}
			}
			if strings.Contains(tc.rx, "gro") && rf.Counts["gro_messages"] == 0 {
				t.Errorf("GRO receiver got no multi-datagram message (%v)", rf.Lines())
			}
			for _, fs := range []engine.FactSample{sf, rf} {
				if fs.Counts[engine.FactSyscalls] < 1 {
					t.Errorf("no %s fact: %v", engine.FactSyscalls, fs.Lines())
				}
			}
			t.Logf("tx %+v %v", s, sf.Lines())
			t.Logf("rx %+v %v", got.Stats.Snapshot(), rf.Lines())
		})
	}
}

// TestFramedTrains sends framed datagrams in GSO trains to a GRO receiver:
// every datagram of a train is stamped on its own, and the receiver hands
// each datagram of a coalesced message to the Framing on its own.
func TestFramedTrains(t *testing.T) {
	for _, tc := range []struct{ tx, rx string }{
		{"gso", "gro"},
		{"gso,batch=3", "gro,batch=2"},
		{"", "gro"},
		{"gso", ""},
	} {
		t.Run(tc.tx+"/"+tc.rx, func(t *testing.T) {
			sent, got := enginetest.FramedTransfer(t, configured(t, tc.tx), configured(t, tc.rx), 2000, false)
			sf, rf := sent.Facts.Snapshot(), got.Facts.Snapshot()
			if strings.Contains(tc.tx, "gso") && sf.Counts["gso_messages"] == 0 {
				t.Errorf("GSO sender sent no train (%v)", sf.Lines())
			}
			if strings.Contains(tc.tx, "gso") && strings.Contains(tc.rx, "gro") && rf.Counts["gro_messages"] == 0 {
				t.Errorf("GRO receiver got no multi-datagram message (%v)", rf.Lines())
			}
			t.Logf("tx %v", sf.Lines())
			t.Logf("rx %v", rf.Lines())
		})
	}
}

func TestTCPRefused(t *testing.T) {
	ctx := context.Background()
	ln, err := engine.Listen(ctx, "tcp4", "127.0.0.1:0", engine.SockOpts{TOS: engine.NoTOS})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := engine.Dial(ctx, "tcp4", ln.Addr().String(), engine.SockOpts{TOS: engine.NoTOS})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, send := range []bool{true, false} {
		f := newFlow(c, &engine.Spec{Protocol: engine.TCP, BufLen: 100})
		if err := engine.Run(ctx, mmsg.Backend{}, f, send); !errors.Is(err, engine.ErrNotSupported) {
			t.Errorf("send %v over TCP: got %v, want an error wrapping engine.ErrNotSupported", send, err)
		}
	}
}

// blockedIn waits until one of this process's threads is blocked in the
// system call nr on fd (as /proc/self/task/*/syscall shows), or hang
// passes.
func blockedIn(t testing.TB, nr uintptr, fd int) {
	t.Helper()
	prefix := fmt.Sprintf("%d 0x%x ", nr, fd)
	testkit.WaitFor(t, hang, fmt.Sprintf("a thread blocked in system call %d on fd %d", nr, fd), func() bool {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/syscall")
			if err == nil && strings.HasPrefix(string(b), prefix) {
				return true
			}
		}
		return false
	})
}

// TestCancelRecv cancels a receive blocked in recvmmsg (the suite cancels
// TCP flows only): the shutdown wakes it, and Run returns the context's
// error without the receive counting an error.
func TestCancelRecv(t *testing.T) {
	for _, opts := range []string{"", "gro"} {
		t.Run("options="+opts, func(t *testing.T) {
			_, rx := udpPair(t)
			f := newFlow(rx, &engine.Spec{Protocol: engine.UDP, BufLen: 1500, SentinelMax: 4})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- engine.Run(ctx, configured(t, opts), f, false) }()
			blockedIn(t, unix.SYS_RECVMMSG, rx.FD())
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("got %v, want an error wrapping context.Canceled", err)
				}
			case <-time.After(hang):
				t.Fatalf("receiver still blocked %v after the cancel", hang)
			}
			if s := f.Stats.Snapshot(); s.Errors != 0 || s.Bytes != 0 {
				t.Errorf("counters after a cancelled idle receive: %+v", s)
			}
		})
	}
}

// TestRecvTimeout gives the socket a receive timeout and sends nothing:
// the receive fails with engine.ErrTimeout.
func TestRecvTimeout(t *testing.T) {
	_, rx := udpPair(t)
	if err := rx.SetTimeout(100 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	f := newFlow(rx, &engine.Spec{Protocol: engine.UDP, BufLen: 1500, SentinelMax: 4})
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	if err := engine.Run(ctx, mmsg.Backend{}, f, false); !errors.Is(err, engine.ErrTimeout) {
		t.Errorf("recv past the socket's timeout: got %v, want an error wrapping engine.ErrTimeout", err)
	}
}

// TestTimedSend sends paced batches for a while: the time limit ends the
// send with success, and the receiver counts every datagram sent.
func TestTimedSend(t *testing.T) {
	for _, opts := range []string{"", "gso"} {
		t.Run("options="+opts, func(t *testing.T) {
			a, b := udpPair(t)
			sent := newFlow(a, &engine.Spec{Protocol: engine.UDP, BufLen: 64, Duration: 200 * time.Millisecond, Rate: 50e6})
			got := newFlow(b, &engine.Spec{Protocol: engine.UDP, BufLen: 64, SentinelMax: 4})
			transfer(t, configured(t, opts), mmsg.Backend{}, sent, got)
			if s := countsOf(sent); s.Datagrams == 0 || countsOf(got) != s {
				t.Errorf("sent %+v, received %+v", s, countsOf(got))
			}
		})
	}
}

// BenchmarkLoopback sends b.N 64-byte datagrams over loopback through
// engine.Run to a recvmmsg receiver (mmsg without options), plain and with
// GSO, with the pattern alone and with a Framing that stamps a sequence
// number into each datagram (framed). pps is the send rate; rx% the share
// that arrived; ns/op includes the wait for the receiver to end.
func BenchmarkLoopback(b *testing.B) {
	const size = 64
	for _, tc := range []struct {
		opts   string
		framed bool
	}{{"", false}, {"gso", false}, {"", true}, {"gso", true}} {
		name := "tx=" + strconv.Quote(tc.opts)
		if tc.framed {
			name += ",framed"
		}
		b.Run(name, func(b *testing.B) {
			tx, rx := udpPair(b)
			sent := newFlow(tx, &engine.Spec{Protocol: engine.UDP, BufLen: size, Bytes: int64(b.N) * size})
			if tc.framed {
				sent.Spec.Framing = &counter{}
			}
			got := newFlow(rx, &engine.Spec{Protocol: engine.UDP, BufLen: size, SentinelMax: 4})
			b.SetBytes(size)
			b.ResetTimer()
			took := transfer(b, configured(b, tc.opts), mmsg.Backend{}, sent, got)
			s, r := sent.Stats.Snapshot(), got.Stats.Snapshot()
			b.ReportMetric(float64(s.Datagrams)/took.Seconds(), "pps")
			b.ReportMetric(100*float64(r.Datagrams)/float64(max(s.Datagrams, 1)), "rx%")
		})
	}
}

// counter is a Framing that numbers the datagrams it stamps, as iperf3's
// header does, and ignores those it receives.
type counter struct{ n uint64 }

func (c *counter) Stamp(p []byte, _ time.Duration) {
	c.n++
	binary.BigEndian.PutUint64(p, c.n)
}

func (c *counter) Receive([]byte, time.Duration) {}
