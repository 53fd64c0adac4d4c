package mmsg

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

// got is what the peer of a test received.
type got struct{ Datagrams, Bytes int }

// udpPeer returns an engine UDP socket connected to a peer, and a function
// that returns what the peer received once want datagrams arrived (or
// nothing more came for a few seconds).
func udpPeer(t *testing.T, want int) (*engine.Socket, func() got) {
	t.Helper()
	ctx := context.Background()
	peer, err := engine.ListenUDP(ctx, "udp4", "127.0.0.1:0", engine.SockOpts{TOS: engine.NoTOS})
	if err != nil {
		t.Fatal(err)
	}
	peer.Control(func(fd int) error { return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 32<<20) })
	if err := peer.SetTimeout(3 * time.Second); err != nil {
		t.Fatal(err)
	}
	c, err := engine.Dial(ctx, "udp4", peer.LocalAddr().String(), engine.SockOpts{TOS: engine.NoTOS})
	if err != nil {
		peer.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); peer.Close() })
	res := make(chan got, 1)
	go func() {
		buf := make([]byte, 65536)
		var g got
		for g.Datagrams < want {
			n, err := peer.Read(buf)
			if err != nil {
				break
			}
			g.Datagrams++
			g.Bytes += n
		}
		res <- g
	}()
	return c, func() got { return <-res }
}

func run(t *testing.T, b engine.Backend, f *engine.Flow) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := engine.Run(ctx, b, f, true); err != nil {
		t.Fatalf("send: %v", err)
	}
}

// TestPartialBatch has the kernel take at most three messages per call:
// the sender must go on from the first message not sent, and count each
// call with what it really moved.
func TestPartialBatch(t *testing.T) {
	defer func(f func(*engine.Flow, int, []unix.Mmsghdr) (int, error)) { sendmmsgCall = f }(sendmmsgCall)
	sendmmsgCall = func(f *engine.Flow, fd int, msgs []unix.Mmsghdr) (int, error) {
		return sendmmsg(f, fd, msgs[:min(3, len(msgs))])
	}
	const count, size = 100, 500
	c, received := udpPeer(t, count)
	f := &engine.Flow{Sock: c, Spec: &engine.Spec{Protocol: engine.UDP, BufLen: size, Bytes: count*size - 123}, Stats: &engine.Counters{}}
	run(t, Backend{batch: 16}, f)
	// 100 datagrams: six batches of 16 (six calls each: 3+3+3+3+3+1) and
	// one of 4 (two calls).
	want := engine.Sample{
		Bytes: count*size - 123, Datagrams: count, Calls: 6*6 + 2,
		MinIO: size - 123, MaxIO: 3 * size,
	}
	if diff := cmp.Diff(want, f.Stats.Snapshot()); diff != "" {
		t.Errorf("counters (-want +got):\n%s", diff)
	}
	if n := f.Facts.Count(engine.FactSyscalls); n != 6*6+2 {
		t.Errorf("%d syscalls counted, want %d", n, 6*6+2)
	}
	if diff := cmp.Diff(got{count, count*size - 123}, received()); diff != "" {
		t.Errorf("peer received (-want +got):\n%s", diff)
	}
}

// TestGSORefused makes the kernel refuse a GSO message (more segments
// than UDP_MAX_SEGMENTS): the sender must fall back, say so, and lose
// nothing.
func TestGSORefused(t *testing.T) {
	defer func(n, s int) { maxGSOSegments, stepGSOSegments = n, s }(maxGSOSegments, stepGSOSegments)
	maxGSOSegments, stepGSOSegments = 600, 600
	const count, size = 1000, 100
	c, received := udpPeer(t, count)
	f := &engine.Flow{Sock: c, Spec: &engine.Spec{Protocol: engine.UDP, BufLen: size, Bytes: count * size}, Stats: &engine.Counters{}}
	run(t, Backend{gso: true, batch: 2}, f)
	facts := f.Facts.Snapshot()
	if facts.Counts["gso_fallbacks"] != 1 || !strings.Contains(strings.Join(facts.Notes, "\n"), "GSO refused by the kernel on this path") {
		t.Errorf("no fallback noted: %v", facts.Lines())
	}
	if s := f.Stats.Snapshot(); s.Datagrams != count || s.Bytes != count*size || s.Errors != 1 {
		t.Errorf("counters %+v, want %d datagrams, %d bytes, the refused call as the one error", s, count, count*size)
	}
	if diff := cmp.Diff(got{count, count * size}, received()); diff != "" {
		t.Errorf("peer received (-want +got):\n%s", diff)
	}
	t.Log(facts.Lines())
}

// TestGSOStepDown makes the kernel refuse trains longer than it takes:
// the sender steps down to shorter ones, says so, keeps GSO and loses
// nothing.
func TestGSOStepDown(t *testing.T) {
	defer func(n int) { maxGSOSegments = n }(maxGSOSegments)
	maxGSOSegments = 600
	const count, size = 1000, 100
	c, received := udpPeer(t, count)
	f := &engine.Flow{Sock: c, Spec: &engine.Spec{Protocol: engine.UDP, BufLen: size, Bytes: count * size}, Stats: &engine.Counters{}}
	run(t, Backend{gso: true, batch: 2}, f)
	facts := f.Facts.Snapshot()
	if facts.Counts["gso_stepdowns"] != 1 || facts.Counts["gso_fallbacks"] != 0 || !strings.Contains(strings.Join(facts.Notes, "\n"), "the kernel refused trains of 600 datagrams") {
		t.Errorf("no step down noted: %v", facts.Lines())
	}
	if facts.Counts["gso_messages"] == 0 {
		t.Errorf("GSO given up after the step down: %v", facts.Lines())
	}
	if s := f.Stats.Snapshot(); s.Datagrams != count || s.Bytes != count*size || s.Errors != 1 {
		t.Errorf("counters %+v, want %d datagrams, %d bytes, the refused call as the one error", s, count, count*size)
	}
	if diff := cmp.Diff(got{count, count * size}, received()); diff != "" {
		t.Errorf("peer received (-want +got):\n%s", diff)
	}
}

// TestGSONotUsed: datagrams too long to put two in one message go one per
// message, with a note.
func TestGSONotUsed(t *testing.T) {
	const count, size = 10, 40000
	c, received := udpPeer(t, count)
	f := &engine.Flow{Sock: c, Spec: &engine.Spec{Protocol: engine.UDP, BufLen: size, Bytes: count * size}, Stats: &engine.Counters{}}
	run(t, Backend{gso: true}, f)
	if facts := f.Facts.Snapshot(); !strings.Contains(strings.Join(facts.Notes, "\n"), "GSO not used") {
		t.Errorf("no note that GSO was not used: %v", facts.Lines())
	}
	if diff := cmp.Diff(got{count, count * size}, received()); diff != "" {
		t.Errorf("peer received (-want +got):\n%s", diff)
	}
}

func TestGROSize(t *testing.T) {
	for _, tc := range []struct {
		name string
		oob  []byte
		want int
	}{
		{"none", nil, 0},
		{"other cmsg", unix.UnixRights(0), 0},
		{"gro 1200", groCmsg(1200), 1200},
	} {
		if got := groSize(tc.oob); got != tc.want {
			t.Errorf("%s: groSize = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// groCmsg is a UDP_GRO control message carrying seg as an int, as the
// kernel writes it.
func groCmsg(seg int) []byte {
	b := make([]byte, unix.CmsgSpace(4))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level = unix.SOL_UDP
	h.Type = unix.UDP_GRO
	h.SetLen(unix.CmsgLen(4))
	binary.NativeEndian.PutUint32(b[unix.CmsgLen(0):], uint32(seg))
	return b
}
