package sockets_test

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/engine/enginetest"
)

// The suite runs mmsg with its default batches of 64 datagrams per call
// and with batches of one.
func TestMMsgConformance(t *testing.T) {
	caps := enginetest.Caps{UDPSend: true, UDPRecv: true, Source: true, Sink: true}
	t.Run("batch=64", func(t *testing.T) {
		caps := caps
		caps.Batch = 64
		enginetest.Run(t, backend(t, "mmsg", engine.Options{}), caps)
	})
	t.Run("batch=1", func(t *testing.T) {
		enginetest.Run(t, backend(t, "mmsg", engine.Options{Batch: 1}), caps)
	})
}

// udpLoopback returns a connected pair with large receive buffers.
func udpLoopback(t testing.TB) (a, b *net.UDPConn) {
	t.Helper()
	a, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	b, err = net.DialUDP("udp4", nil, a.LocalAddr().(*net.UDPAddr))
	if err != nil {
		a.Close()
		t.Fatal(err)
	}
	// Connect a back to b so both are connected flows.
	a.Close()
	a, err = net.DialUDP("udp4", a.LocalAddr().(*net.UDPAddr), b.LocalAddr().(*net.UDPAddr))
	if err != nil {
		b.Close()
		t.Fatal(err)
	}
	for _, c := range []*net.UDPConn{a, b} {
		rc, _ := c.SyscallConn()
		rc.Control(func(fd uintptr) {
			if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 32<<20) != nil {
				unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 32<<20)
			}
		})
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// udpTransfer sends count datagrams of size bytes from tx to rx over
// loopback, then a 4-byte sentinel, and returns both flows.
func udpTransfer(t *testing.T, tx, rx engine.Backend, count, size int, rate float64) (sent, got *engine.Flow) {
	t.Helper()
	a, b := udpLoopback(t)
	sent = &engine.Flow{Conn: a, Spec: &engine.Spec{Protocol: engine.UDP, BufLen: size, Bytes: int64(count * size), Rate: rate}, Stats: &engine.Counters{}}
	got = &engine.Flow{Conn: b, Spec: &engine.Spec{Protocol: engine.UDP, BufLen: size, SentinelMax: 4}, Stats: &engine.Counters{}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- rx.Recv(ctx, got) }()
	if err := tx.Send(ctx, sent); err != nil {
		t.Fatalf("send: %v", err)
	}
	for range 3 { // the sentinel, a few times in case one is dropped
		a.Write([]byte("end!"))
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("recv: %v", err)
			}
			return sent, got
		case <-time.After(500 * time.Millisecond):
		}
	}
	t.Fatalf("receiver did not end; it counted %+v", got.Stats.Snapshot())
	return nil, nil
}

func TestMMsgBatches(t *testing.T) {
	const count, size = 2000, 1200
	for _, tc := range []struct {
		name   string
		tx, rx engine.Options
	}{
		{"batch 64", engine.Options{Batch: 64}, engine.Options{Batch: 64}},
		{"batch 7", engine.Options{Batch: 7}, engine.Options{Batch: 5}},
		{"gso", engine.Options{GSO: true}, engine.Options{Batch: 64}},
		{"gso gro", engine.Options{GSO: true}, engine.Options{GRO: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sent, got := udpTransfer(t, backend(t, "mmsg", tc.tx), backend(t, "mmsg", tc.rx), count, size, 400e6)
			s, r := sent.Stats.Snapshot(), got.Stats.Snapshot()
			if s.Datagrams != count || s.Bytes != count*size {
				t.Errorf("sender counted %d datagrams, %d bytes; want %d, %d", s.Datagrams, s.Bytes, count, count*size)
			}
			if r.Datagrams != count || r.Bytes != count*size {
				t.Errorf("receiver counted %d datagrams, %d bytes; want %d, %d", r.Datagrams, r.Bytes, count, count*size)
			}
			if s.DataCalls() >= count/2 {
				t.Errorf("sender made %d calls for %d datagrams: not batching", s.DataCalls(), count)
			}
			sf, _ := engine.FlowFacts(sent)
			rf, _ := engine.FlowFacts(got)
			if tc.tx.GSO {
				// 2000 datagrams in trains of at most 54 (65507/1200).
				if n := sf.Counts["gso_messages"]; n < count/54 || n > count/2 {
					t.Errorf("gso_messages = %d, want about %d (%v)", n, count/54+1, sf.Lines())
				}
			}
			if tc.rx.GRO && rf.Counts["gro_messages"] == 0 {
				t.Errorf("GRO receiver got no multi-datagram message (%v)", rf.Lines())
			}
			t.Logf("tx %+v %v", s, sf.Lines())
			t.Logf("rx %+v %v", r, rf.Lines())
		})
	}
}

func TestMMsgTCPRefused(t *testing.T) {
	mine, _ := loopbackTCP(t)
	f := &engine.Flow{Conn: mine, Spec: &engine.Spec{BufLen: 100}, Stats: &engine.Counters{}}
	if err := backend(t, "mmsg", engine.Options{}).Send(context.Background(), f); err == nil {
		t.Error("mmsg sent TCP")
	}
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	return len(ents)
}

// TestMMsgWaits covers the ways out of a receiver waiting in the kernel
// (ppoll, not the runtime poller) and of a timed send: a cancelled
// context ends the wait at once, a conn deadline within the wait slice,
// and neither leaves a descriptor behind.
func TestMMsgWaits(t *testing.T) {
	before := openFDs(t)
	t.Run("cancel recv", func(t *testing.T) {
		_, b := udpLoopback(t)
		f := &engine.Flow{Conn: b, Spec: &engine.Spec{Protocol: engine.UDP, BufLen: 64, SentinelMax: 4}, Stats: &engine.Counters{}}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- backend(t, "mmsg", engine.Options{}).Recv(ctx, f) }()
		time.Sleep(100 * time.Millisecond)
		start := time.Now()
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("got %v, want context.Canceled", err)
			}
			if d := time.Since(start); d > 20*time.Millisecond {
				t.Errorf("took %v to see the cancel", d)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("receiver still waiting 5s after cancel")
		}
	})
	t.Run("recv deadline", func(t *testing.T) {
		_, b := udpLoopback(t)
		f := &engine.Flow{Conn: b, Spec: &engine.Spec{Protocol: engine.UDP, BufLen: 64, SentinelMax: 4}, Stats: &engine.Counters{}}
		b.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		done := make(chan error, 1)
		go func() { done <- backend(t, "mmsg", engine.Options{}).Recv(context.Background(), f) }()
		select {
		case err := <-done:
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("got %v, want os.ErrDeadlineExceeded", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("receiver ignored the read deadline")
		}
	})
	t.Run("timed send", func(t *testing.T) {
		a, b := udpLoopback(t)
		tx := &engine.Flow{Conn: a, Spec: &engine.Spec{Protocol: engine.UDP, BufLen: 64, Duration: 200 * time.Millisecond, Rate: 50e6}, Stats: &engine.Counters{}}
		rx := &engine.Flow{Conn: b, Spec: &engine.Spec{Protocol: engine.UDP, BufLen: 64, SentinelMax: 4}, Stats: &engine.Counters{}}
		done := make(chan error, 1)
		go func() { done <- backend(t, "mmsg", engine.Options{}).Recv(context.Background(), rx) }()
		start := time.Now()
		if err := backend(t, "mmsg", engine.Options{}).Send(context.Background(), tx); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 150*time.Millisecond || d > 2*time.Second {
			t.Errorf("a 200ms send took %v", d)
		}
		for range 3 {
			a.Write([]byte("end!"))
			time.Sleep(50 * time.Millisecond)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if s, r := tx.Stats.Snapshot(), rx.Stats.Snapshot(); s.Datagrams == 0 || r.Datagrams != s.Datagrams {
			t.Errorf("sent %d datagrams, received %d", s.Datagrams, r.Datagrams)
		}
	})
	if after := openFDs(t); after != before {
		t.Errorf("%d descriptors open before, %d after", before, after)
	}
}
