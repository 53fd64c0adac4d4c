package sockets

import (
	"context"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

// udpPeer returns a connected UDP socket and a peer that counts what
// arrives: datagrams and bytes, until quiet for a while.
func udpPeer(t *testing.T) (*net.UDPConn, func() (int, int)) {
	t.Helper()
	peer, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := peer.SyscallConn()
	rc.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 32<<20) })
	c, err := net.DialUDP("udp4", nil, peer.LocalAddr().(*net.UDPAddr))
	if err != nil {
		peer.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); peer.Close() })
	return c, func() (int, int) {
		buf := make([]byte, 65536)
		var dg, by int
		for {
			peer.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			n, err := peer.Read(buf)
			if err != nil {
				return dg, by
			}
			dg++
			by += n
		}
	}
}

// TestMMsgPartialBatch has the kernel take at most three messages per
// call: the sender must go on from the first message not sent, and count
// each call with what it really moved.
func TestMMsgPartialBatch(t *testing.T) {
	c, received := udpPeer(t)
	const count, size = 100, 500
	f := &engine.Flow{Conn: c, Spec: &engine.Spec{Protocol: engine.UDP, BufLen: size, Bytes: count*size - 123}, Stats: &engine.Counters{}}
	m := &mmsgSender{f: f, facts: engine.FactsOf(f), batch: 16}
	m.sendmmsg = func(fd int, msgs []unix.Mmsghdr) (int, error) {
		return sendmmsg(fd, msgs[:min(3, len(msgs))])
	}
	err := runSend(context.Background(), f, func(rc syscall.RawConn) error { return m.loop(context.Background(), rc) })
	if err != nil {
		t.Fatal(err)
	}
	s := f.Stats.Snapshot()
	if s.Datagrams != count || s.Bytes != count*size-123 {
		t.Errorf("counters %+v, want %d datagrams, %d bytes", s, count, count*size-123)
	}
	// 100 datagrams: six batches of 16 (six calls each: 3+3+3+3+3+1) and
	// one of 4 (two calls).
	if want := int64(6*6 + 2); s.Calls != want {
		t.Errorf("%d calls, want %d", s.Calls, want)
	}
	if s.MaxIO != 3*size || s.MinIO != size-123 {
		t.Errorf("bytes per call %d..%d, want %d..%d", s.MinIO, s.MaxIO, size-123, 3*size)
	}
	if dg, by := received(); dg != count || by != count*size-123 {
		t.Errorf("peer received %d datagrams, %d bytes; want %d, %d", dg, by, count, count*size-123)
	}
}

// TestMMsgGSORefused makes the kernel refuse a GSO message (more segments
// than UDP_MAX_SEGMENTS): the sender must fall back, say so, and lose
// nothing.
func TestMMsgGSORefused(t *testing.T) {
	defer func(n int) { maxGSOSegments = n }(maxGSOSegments)
	maxGSOSegments = 600
	c, received := udpPeer(t)
	const count, size = 1000, 100
	f := &engine.Flow{Conn: c, Spec: &engine.Spec{Protocol: engine.UDP, BufLen: size, Bytes: count * size}, Stats: &engine.Counters{}}
	if err := (MMsg{opts: engine.Options{GSO: true, Batch: 2}}).Send(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	facts, _ := engine.FlowFacts(f)
	if facts.Counts["gso_fallbacks"] != 1 || !strings.Contains(strings.Join(facts.Notes, "\n"), "GSO refused by the kernel on this path") {
		t.Errorf("no fallback noted: %v", facts.Lines())
	}
	if s := f.Stats.Snapshot(); s.Datagrams != count || s.Bytes != count*size {
		t.Errorf("counters %+v, want %d datagrams", s, count)
	}
	if dg, by := received(); dg != count || by != count*size {
		t.Errorf("peer received %d datagrams, %d bytes; want %d, %d", dg, by, count, count*size)
	}
	t.Log(facts.Lines())
}

// TestQuietNetpoll takes a socket out of the runtime's poller and puts it
// back: afterwards a read that parks in the poller must still be woken by
// a datagram that arrives later.
func TestQuietNetpoll(t *testing.T) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	peer, err := net.DialUDP("udp4", nil, c.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // twice: the restored entry must be found again
		restore, err := quietNetpoll(rc)
		if err != nil {
			t.Fatal(err)
		}
		rc.Control(func(fd uintptr) {
			if _, ev, _, err := findEpollEntry(int(fd)); err != nil || ev&^(unix.EPOLLERR|unix.EPOLLHUP) != unix.EPOLLET {
				t.Errorf("while quiet: events %#x, %v; want EPOLLET and the errors the kernel always adds", ev, err)
			}
		})
		restore()
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		peer.Write([]byte("hello"))
	}()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 100)
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("read after restore: %q, %v", buf[:n], err)
	}
}
