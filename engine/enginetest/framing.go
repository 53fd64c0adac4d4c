package enginetest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/testkit"
)

// The framed transfers: framedCount datagrams of framedSize bytes, paced
// at framedRate so that a plain peer keeps up and nothing is lost on
// loopback (a GSO batch of 8 trains is about 0.5 MB, well inside the
// receivers' 8 MB buffers).
const (
	framedCount = 2000
	framedSize  = 1000
	framedRate  = 100e6
)

// seqFraming is the suite's Framing. Stamp writes 1, 2, 3, ... as a
// big-endian uint64 into the first 8 bytes of each datagram; Receive
// records the number each datagram carries and checks that the rest of
// it is the pattern. Its fields are read once Run has returned.
type seqFraming struct {
	pattern []byte // a datagram of the pattern, framedSize bytes

	stamped int   // datagrams stamped, numbered 1..stamped
	shortTx []int // lengths of stamped datagrams other than framedSize
	seqs    []uint64
	lens    []int
	bad     []string // what was wrong with received datagrams
}

func newSeqFraming() *seqFraming {
	p := make([]byte, framedSize)
	engine.Pattern(p)
	return &seqFraming{pattern: p}
}

func (s *seqFraming) Stamp(p []byte, _ time.Duration) {
	s.stamped++
	if len(p) != framedSize {
		s.shortTx = append(s.shortTx, len(p))
	}
	if len(p) >= 8 {
		binary.BigEndian.PutUint64(p, uint64(s.stamped))
	}
}

func (s *seqFraming) Receive(p []byte, _ time.Duration) {
	if len(p) < 8 {
		s.bad = append(s.bad, fmt.Sprintf("a datagram of %d bytes, too short for its number", len(p)))
		return
	}
	seq := binary.BigEndian.Uint64(p)
	s.seqs = append(s.seqs, seq)
	s.lens = append(s.lens, len(p))
	if len(p) > framedSize || !bytes.Equal(p[8:], s.pattern[8:len(p)]) {
		s.bad = append(s.bad, fmt.Sprintf("datagram %d: %d bytes, not the pattern after its number", seq, len(p)))
	}
}

// checkSeqs wants seqs to hold 1..count, each once, in any order.
func checkSeqs(t *testing.T, who string, seqs []uint64, count int) {
	t.Helper()
	sorted := slices.Sorted(slices.Values(seqs))
	var dups, missing []uint64
	next := uint64(1)
	for i, v := range sorted {
		if i > 0 && v == sorted[i-1] {
			dups = append(dups, v)
			continue
		}
		for ; next < v && next <= uint64(count); next++ {
			missing = append(missing, next)
		}
		next = max(next, v+1)
	}
	for ; next <= uint64(count); next++ {
		missing = append(missing, next)
	}
	out := slices.DeleteFunc(slices.Clone(sorted), func(v uint64) bool { return v >= 1 && v <= uint64(count) })
	if len(seqs) != count || len(dups)+len(missing)+len(out) > 0 {
		t.Errorf("%s %d datagrams, want %d numbered 1..%d once each; duplicates %v, missing %v, out of range %v",
			who, len(seqs), count, count, first(dups), first(missing), first(out))
	}
}

// first returns at most the first 10 of v, for a message.
func first(v []uint64) []uint64 { return v[:min(len(v), 10)] }

// checkStamps wants f to have stamped count full datagrams.
func checkStamps(t *testing.T, f *seqFraming, count int) {
	t.Helper()
	if f.stamped != count || len(f.shortTx) > 0 {
		t.Errorf("Stamp called %d times (lengths other than %d: %v), want %d full datagrams", f.stamped, framedSize, f.shortTx, count)
	}
}

// checkReceived wants fr to have seen count datagrams numbered 1..count,
// each of framedSize bytes (peek: the first engine.HeaderPeek only), the
// pattern after the number, and got's counters to say as much.
func checkReceived(t *testing.T, got *engine.Flow, fr *seqFraming, count int, peek bool) {
	t.Helper()
	checkSeqs(t, "Framing.Receive saw", fr.seqs, count)
	want := framedSize
	if peek {
		want = min(framedSize, engine.HeaderPeek)
	}
	if i := slices.IndexFunc(fr.lens, func(n int) bool { return n != want }); i >= 0 {
		t.Errorf("Framing.Receive got %d bytes of datagram %d, want %d (one datagram a call)", fr.lens[i], fr.seqs[i], want)
	}
	if len(fr.bad) > 0 {
		t.Errorf("%d datagrams received wrong, first: %s", len(fr.bad), fr.bad[0])
	}
	if s := got.Stats.Snapshot(); s.Datagrams != int64(count) || s.Bytes != int64(count*framedSize) {
		t.Errorf("receiver's counters say %d datagrams, %d bytes; want %d, %d", s.Datagrams, s.Bytes, count, count*framedSize)
	}
}

// testFramingSend sends framed datagrams to a plain peer, which wants
// them numbered 1..count and otherwise the pattern; a backend without
// framing must refuse.
func testFramingSend(t *testing.T, b engine.Backend, caps Caps, pair func(*testing.T) (*engine.Socket, *net.UDPConn)) {
	mine, peer := pair(t)
	fr := newSeqFraming()
	f := flow(mine, &engine.Spec{Protocol: engine.UDP, BufLen: framedSize, Bytes: framedCount * framedSize, Rate: framedRate, Framing: fr})
	if !caps.FramingSend {
		err := run(t, "framed udp send", b, f, true)
		if !errors.Is(err, engine.ErrNotSupported) || fr.stamped > 0 || f.Stats.Snapshot().Bytes > 0 {
			t.Errorf("framed send by a backend without framing: got %v after %d stamps, want it refused (engine.ErrNotSupported) before any", err, fr.stamped)
		}
		return
	}
	peerFr := newSeqFraming()
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 65536)
		for len(peerFr.seqs)+len(peerFr.bad) < framedCount {
			peer.SetReadDeadline(time.Now().Add(hang))
			n, err := peer.Read(buf)
			if err != nil {
				return
			}
			peerFr.Receive(buf[:n], engine.Mono())
		}
	}()
	if err := run(t, "framed udp send", b, f, true); err != nil {
		t.Fatalf("framed udp send: %v", err)
	}
	<-done
	checkStamps(t, fr, framedCount)
	checkSeqs(t, "the peer received", peerFr.seqs, framedCount)
	if len(peerFr.bad) > 0 {
		t.Errorf("%d datagrams arrived wrong, first: %s", len(peerFr.bad), peerFr.bad[0])
	}
	if s := f.Stats.Snapshot(); s.Datagrams != framedCount || s.Bytes != framedCount*framedSize {
		t.Errorf("sender's counters say %d datagrams, %d bytes; want %d, %d", s.Datagrams, s.Bytes, framedCount, framedCount*framedSize)
	}
}

// testFramingRecv has a plain peer send numbered datagrams and wants the
// backend's receive to hand each to the Framing once; a backend without
// framing must refuse.
func testFramingRecv(t *testing.T, b engine.Backend, caps Caps, pair func(*testing.T) (*engine.Socket, *net.UDPConn)) {
	mine, peer := pair(t)
	fr := newSeqFraming()
	f := flow(mine, &engine.Spec{Protocol: engine.UDP, BufLen: 65536, SentinelMax: 4, Framing: fr})
	go func() {
		p := newSeqFraming().pattern
		to := net.UDPAddrFromAddrPort(mine.LocalAddr())
		// A backend that refuses framing counts nothing: it sends no
		// more than window before the sentinel.
		for i := 1; i <= framedCount && (caps.FramingRecv || i <= window) && keepUp(f, i-1); i++ {
			binary.BigEndian.PutUint64(p, uint64(i))
			peer.WriteTo(p, to)
		}
		peer.WriteTo(p[:4], to) // end sentinel
	}()
	err := run(t, "framed udp recv", b, f, false)
	if !caps.FramingRecv {
		if !errors.Is(err, engine.ErrNotSupported) {
			t.Errorf("framed receive by a backend without framing: got %v, want it refused (engine.ErrNotSupported)", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("framed udp recv: %v", err)
	}
	checkReceived(t, f, fr, framedCount, caps.HeaderPeek)
}

// FramedTransfer sends count framed datagrams of the suite's size with
// tx's Send to rx's Recv over loopback, both with the suite's Framing,
// and checks what both ends did with it: Stamp numbered every datagram,
// Receive saw each number once, in datagrams of the full size with the
// pattern after the number, and the counters agree. It returns the two
// flows, for a backend's own checks (facts). peek: rx reads only the first
// engine.HeaderPeek bytes of each datagram.
func FramedTransfer(t *testing.T, tx, rx engine.Backend, count int, peek bool) (sent, got *engine.Flow) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	rs, err := engine.ListenUDP(ctx, "udp4", "127.0.0.1:0", engine.SockOpts{TOS: engine.NoTOS, RcvBuf: 16 << 20, ForceBuf: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	ts, err := engine.Dial(ctx, "udp4", rs.LocalAddr().String(), engine.SockOpts{TOS: engine.NoTOS})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	if err := rs.Connect(ts.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	txFr, rxFr := newSeqFraming(), newSeqFraming()
	sent = flow(ts, &engine.Spec{Protocol: engine.UDP, BufLen: framedSize, Bytes: int64(count * framedSize), Rate: framedRate, Framing: txFr})
	got = flow(rs, &engine.Spec{Protocol: engine.UDP, BufLen: framedSize, SentinelMax: 4, Framing: rxFr})
	done := make(chan error, 1)
	go func() { done <- engine.Run(ctx, rx, got, false) }()
	// The receive is set up (its socket options on: UDP_GRO, which a GSO
	// train must find to arrive whole) once it waits for its first
	// datagram.
	testkit.WaitFor(t, hang, "the receive to block in its first wait", blockedInIO)
	if err := engine.Run(ctx, tx, sent, true); err != nil {
		cancel()
		<-done
		t.Fatalf("framed send: %v", err)
	}
	// The sentinel, again until the receiver ends: one may be dropped
	// when the receiver is behind.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for end := false; !end; {
		ts.Write([]byte("end!"))
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("framed recv: %v", err)
			}
			end = true
		case <-tick.C:
		}
	}
	checkStamps(t, txFr, count)
	checkReceived(t, got, rxFr, count, peek)
	return sent, got
}
