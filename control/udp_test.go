package control

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/blastnet/blast/control/wire"
)

// datagram builds an iperf3 datagram header: sent time and sequence
// number, 32- or 64-bit.
func datagram(sent time.Duration, seq uint64, wide bool) []byte {
	p := make([]byte, 64)
	binary.BigEndian.PutUint32(p[0:], uint32(sent/time.Second))
	binary.BigEndian.PutUint32(p[4:], uint32(sent%time.Second/time.Microsecond))
	if wide {
		binary.BigEndian.PutUint64(p[8:], seq)
	} else {
		binary.BigEndian.PutUint32(p[8:], uint32(seq))
	}
	return p
}

func TestUDPFramingStamp(t *testing.T) {
	for _, wide := range []bool{false, true} {
		u := newUDPFraming(wide)
		for want := uint64(1); want <= 5; want++ {
			p := make([]byte, 100)
			at := 1234*time.Second + time.Duration(want)*567891*time.Nanosecond
			u.Stamp(p, at)
			var got uint64
			if wide {
				got = binary.BigEndian.Uint64(p[8:])
			} else {
				got = uint64(binary.BigEndian.Uint32(p[8:]))
			}
			if got != want {
				t.Errorf("wide=%v: datagram %d stamped with sequence number %d", wide, want, got)
			}
			sec, usec := binary.BigEndian.Uint32(p[0:]), binary.BigEndian.Uint32(p[4:])
			if sec != 1234 || time.Duration(usec)*time.Microsecond != (at%time.Second).Truncate(time.Microsecond) {
				t.Errorf("wide=%v: stamp %d s %d us for %v", wide, sec, usec, at)
			}
			for i, c := range p[u.headerLen():] {
				if c != 0 {
					t.Fatalf("wide=%v: byte %d past the header written", wide, u.headerLen()+i)
				}
			}
		}
		// A tail too short for the header goes out as it is, uncounted.
		short := make([]byte, u.headerLen()-1)
		u.Stamp(short, time.Second)
		for i, c := range short {
			if c != 0 {
				t.Fatalf("wide=%v: a %d-byte tail was written at %d", wide, len(short), i)
			}
		}
		if u.seq != 5 {
			t.Errorf("wide=%v: %d sequence numbers used, want 5", wide, u.seq)
		}
	}
}

// The interval reporter sees the counts every publishEvery datagrams, and
// at once after publishAfter without a publication.
func TestUDPFramingPublishes(t *testing.T) {
	u := newUDPFraming(false)
	at := time.Hour
	u.Receive(datagram(at, 1, false), at)
	if got := u.stats(); got.Packets != 1 {
		t.Errorf("the first datagram: %d published, want 1", got.Packets)
	}
	for i := 2; i <= publishEvery; i++ {
		u.Receive(datagram(at, uint64(i), false), at)
	}
	if got := u.stats(); got.Packets != 1 {
		t.Errorf("%d more within a moment: %d published; want still 1", publishEvery-1, got.Packets)
	}
	u.Receive(datagram(at, publishEvery+1, false), at)
	if got := u.stats(); got.Packets != publishEvery+1 {
		t.Errorf("%d more: %d published, want %d", publishEvery, got.Packets, publishEvery+1)
	}
	u.Receive(datagram(at, publishEvery+2, false), at)
	if got := u.stats(); got.Packets != publishEvery+1 {
		t.Errorf("one more within a moment: %d published, want still %d", got.Packets, publishEvery+1)
	}
	later := at + publishAfter
	u.Receive(datagram(later, publishEvery+4, false), later)
	if got, fin := u.stats(), u.final(); got != fin || got.Packets != publishEvery+4 || got.Lost != 1 {
		t.Errorf("%v later: published %+v, exact %+v; want both at %d packets, 1 lost", publishAfter, got, fin, publishEvery+4)
	}
}

// Loss, reordering and duplicates from crafted sequence numbers, counted
// as iperf3 counts them (a late datagram takes one back from the loss),
// except that a datagram seen twice is a duplicate and not out of order;
// each gap the sequence jumps is a run of loss (blast's count).
func TestUDPFramingSequence(t *testing.T) {
	for _, wide := range []bool{false, true} {
		u := newUDPFraming(wide)
		type step struct {
			seq                        uint64
			high, lost, ooo, dup, runs int64
		}
		for i, s := range []step{
			{1, 1, 0, 0, 0, 0},
			{2, 2, 0, 0, 0, 0},
			{3, 3, 0, 0, 0, 0},
			{5, 5, 1, 0, 0, 1},            // 4 missing: a run of one
			{6, 6, 1, 0, 0, 1},            //
			{4, 6, 0, 1, 0, 1},            // 4 came late
			{4, 6, 0, 1, 1, 1},            // and again: a duplicate
			{8, 8, 1, 1, 1, 2},            // 7 missing
			{7, 8, 0, 2, 1, 2},            // 7 late
			{9, 9, 0, 2, 1, 2},            //
			{10000, 10000, 9990, 2, 1, 3}, // 10..9999 missing: one run
			{9999, 10000, 9989, 3, 1, 3},  // one of them late
			{9999, 10000, 9989, 3, 2, 3},  // twice
			{5, 10000, 9988, 4, 2, 3},     // beyond the window: out of order, as iperf3
		} {
			u.Receive(datagram(time.Duration(i)*time.Millisecond, s.seq, wide), time.Duration(i)*time.Millisecond)
			got := u.final()
			if got.Packets != s.high || got.Lost != s.lost || got.OutOfOrder != s.ooo || got.Duplicates != s.dup || got.LossRuns != s.runs {
				t.Fatalf("wide=%v: after #%d (seq %d): packets %d lost %d ooo %d dup %d runs %d; want %d %d %d %d %d",
					wide, i, s.seq, got.Packets, got.Lost, got.OutOfOrder, got.Duplicates, got.LossRuns, s.high, s.lost, s.ooo, s.dup, s.runs)
			}
		}
	}
	// Short datagrams (the hello, a tail) are not counted.
	u := newUDPFraming(false)
	u.Receive(udpHello[:], time.Second)
	if got := u.final(); got != (wire.UDPStats{}) {
		t.Errorf("a 4-byte datagram counted: %+v", got)
	}
}

// Jitter against a series computed by hand (RFC 3550 6.4.1, starting from
// the first datagram's transit time as iperf3 does): sent every 10 ms,
// transit 5, 6, 5 and 7 ms.
func TestUDPFramingJitter(t *testing.T) {
	ms := time.Millisecond
	sent := []time.Duration{0, 10 * ms, 20 * ms, 30 * ms}
	arrive := []time.Duration{5 * ms, 16 * ms, 25 * ms, 37 * ms}
	// J0 = 0; J1 = 1/16 ms; J2 = J1 + (1-J1)/16; J3 = J2 + (2-J2)/16.
	want := []float64{0, 0.0625e-3, 0.12109375e-3, 0.238525390625e-3}
	u := newUDPFraming(false)
	for i := range sent {
		// Any origin: only differences count.
		u.Receive(datagram(sent[i]+1000*time.Second, uint64(i+1), false), arrive[i]+1000*time.Second)
		if got := u.final().Jitter; math.Abs(got-want[i]) > 1e-12 {
			t.Errorf("after datagram %d: jitter %.12f s, want %.12f", i+1, got, want[i])
		}
	}
}
