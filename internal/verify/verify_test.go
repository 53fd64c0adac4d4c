package verify

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// blocks returns n blocks of f from a Source, one slice each (datagrams).
func blocks(t *testing.T, f Format, n int) [][]byte {
	t.Helper()
	src, err := NewSource(f, true)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]byte, n)
	for i := range out {
		out[i] = make([]byte, f.Len)
		if k, err := src.Read(out[i]); k != f.Len || err != nil {
			t.Fatalf("Read = %d, %v", k, err)
		}
	}
	if got := src.Sent(); got != int64(n) {
		t.Errorf("Sent = %d, want %d", got, n)
	}
	return out
}

// stream reads total bytes from a stream Source in reads of the sizes
// next gives.
func stream(t *testing.T, f Format, total int, next func() int) []byte {
	t.Helper()
	src, err := NewSource(f, false)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for len(out) < total {
		n := min(next(), total-len(out))
		p := make([]byte, n)
		k, err := src.Read(p)
		if k != n || err != nil {
			t.Fatalf("Read(%d) = %d, %v", n, k, err)
		}
		out = append(out, p...)
	}
	return out
}

func sink(t *testing.T, f Format, datagrams bool) *Sink {
	t.Helper()
	s, err := NewSink(f, datagrams)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// writeSplit writes b to w in pieces of the sizes next gives.
func writeSplit(w io.Writer, b []byte, next func() int) {
	for len(b) > 0 {
		n := min(max(next(), 1), len(b))
		w.Write(b[:n])
		b = b[n:]
	}
}

func fixed(n int) func() int { return func() int { return n } }

func TestVerifyStreamClean(t *testing.T) {
	f := Format{Len: 8192, Flow: 5}
	const n = 300
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name        string
		read, write func() int
	}{
		{"aligned", fixed(f.Len), fixed(f.Len)},
		{"one byte writes", fixed(f.Len), fixed(1)},
		{"prime reads and writes", fixed(7919), fixed(4099)},
		{"random", func() int { return 1 + rng.IntN(3*f.Len) }, func() int { return 1 + rng.IntN(3*f.Len) }},
		{"big", fixed(5 * f.Len), fixed(64 << 10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := stream(t, f, n*f.Len, tc.read)
			s := sink(t, f, false)
			writeSplit(s, data, tc.write)
			s.Close()
			want := Counts{Blocks: n, BlockLen: f.Len, Stream: true}
			if diff := cmp.Diff(want, s.Counts()); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
			if err := s.Counts().Err(); err != nil {
				t.Errorf("Err = %v", err)
			}
		})
	}
}

// The last block of a byte count that is no multiple of the block length
// is short, and checked byte for byte.
func TestVerifyShortTail(t *testing.T) {
	f := Format{Len: 1000}
	data := stream(t, f, 10*f.Len+123, fixed(f.Len))
	s := sink(t, f, false)
	writeSplit(s, data, fixed(333))
	s.Close()
	s.Close() // twice is harmless
	if diff := cmp.Diff(Counts{Blocks: 11, Short: 1, BlockLen: f.Len, Stream: true}, s.Counts()); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}

	data[10*f.Len+100] ^= 0x20
	s = sink(t, f, false)
	s.Write(data)
	s.Close()
	c := s.Counts()
	if c.Corrupt != 1 || c.Blocks != 10 || !cmp.Equal(c.Faults, []Fault{{Block: 10, Offset: 100}}) {
		t.Errorf("corrupt short tail: %+v", c)
	}

	// A datagram cut short: the last of a byte count.
	d := blocks(t, f, 3)
	s = sink(t, f, true)
	s.Write(d[0])
	s.Write(d[1])
	s.Write(d[2][:500])
	if diff := cmp.Diff(Counts{Blocks: 3, Short: 1, BlockLen: f.Len}, s.Counts()); diff != "" {
		t.Errorf("short datagram counts (-want +got):\n%s", diff)
	}
}

func TestVerifyFlippedByte(t *testing.T) {
	f := Format{Len: 4096, Flow: 3}
	const n = 100
	for _, tc := range []struct {
		name      string
		block, at int
		split     func() int
	}{
		{"payload", 37, 1000, fixed(1500)},
		{"first byte", 0, 0, fixed(4096)},
		{"last byte", 99, 4095, fixed(1)},
		{"checksum", 50, 13, fixed(4097)},
		{"sequence number", 42, 23, fixed(999)},
		{"flow id", 7, 11, fixed(64 << 10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := stream(t, f, n*f.Len, fixed(f.Len))
			data[tc.block*f.Len+tc.at] ^= 0x01
			s := sink(t, f, false)
			writeSplit(s, data, tc.split)
			s.Close()
			want := Counts{Blocks: n - 1, Corrupt: 1, BlockLen: f.Len, Stream: true,
				Faults: []Fault{{Block: int64(tc.block), Offset: tc.at}}}
			if tc.at < 4 {
				want.Unframed = 1 // the magic is gone
			}
			if diff := cmp.Diff(want, s.Counts()); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
			err := s.Counts().Err()
			if want := "verify: 100 blocks received: 1 corrupt (block " + strconv.Itoa(tc.block) + " at byte " + strconv.Itoa(tc.at) + ")"; err == nil || err.Error() != want {
				t.Errorf("Err = %v, want %q", err, want)
			}
		})
	}
	// The same for datagrams, where the block is told by its header.
	for _, at := range []int{0, 9, 13, 17, 24, 3000} {
		d := blocks(t, f, n)
		d[37][at] ^= 0x80
		s := sink(t, f, true)
		for _, b := range d {
			s.Write(b)
		}
		want := Counts{Blocks: n - 1, Corrupt: 1, BlockLen: f.Len, Faults: []Fault{{Block: 37, Offset: at}}}
		if at < 4 {
			want.Unframed = 1
		}
		if diff := cmp.Diff(want, s.Counts()); diff != "" {
			t.Errorf("datagram flipped at %d: counts (-want +got):\n%s", at, diff)
		}
	}
}

func TestVerifyDatagrams(t *testing.T) {
	f := Format{Len: 1400, Flow: 1}
	const n = 50
	for _, tc := range []struct {
		name  string
		order func([][]byte) [][]byte
		want  Counts
	}{
		{"clean", func(d [][]byte) [][]byte { return d }, Counts{Blocks: n}},
		{"dropped", func(d [][]byte) [][]byte { return append(d[:10:10], d[11:]...) }, Counts{Blocks: n - 1, Missing: 1}},
		{"dropped three", func(d [][]byte) [][]byte {
			return append(append(d[:10:10], d[11:20]...), d[22:]...)
		}, Counts{Blocks: n - 3, Missing: 3}},
		{"duplicated", func(d [][]byte) [][]byte {
			return append(append(d[:21:21], d[20]), d[21:]...)
		}, Counts{Blocks: n, Duplicate: 1}},
		{"swapped", func(d [][]byte) [][]byte {
			d[30], d[31] = d[31], d[30]
			return d
		}, Counts{Blocks: n, Reordered: 1}},
		{"late by ten", func(d [][]byte) [][]byte {
			late := d[5]
			return append(append(d[:5:5], d[6:16]...), append([][]byte{late}, d[16:]...)...)
		}, Counts{Blocks: n, Reordered: 1}},
		{"duplicated, swapped and dropped", func(d [][]byte) [][]byte {
			d[30], d[31] = d[31], d[30]
			out := append(d[:3:3], d[2])
			out = append(out, d[3:40]...)
			return append(out, d[41:]...)
		}, Counts{Blocks: n - 1, Duplicate: 1, Reordered: 1, Missing: 1}},
		{"first lost", func(d [][]byte) [][]byte { return d[1:] }, Counts{Blocks: n - 1, Missing: 1}},
		{"last lost (not seen)", func(d [][]byte) [][]byte { return d[:n-1] }, Counts{Blocks: n - 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sink(t, f, true)
			for _, b := range tc.order(blocks(t, f, n)) {
				s.Write(b)
			}
			want := tc.want
			want.BlockLen = f.Len
			if diff := cmp.Diff(want, s.Counts()); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
			if (want.Missing > 0) != (s.Counts().Err() != nil) {
				t.Errorf("Err = %v with %d missing", s.Counts().Err(), want.Missing)
			}
		})
	}
}

// On a stream, a gap or a repeat is an error, not only a corrupt block.
func TestVerifyStreamGapIsError(t *testing.T) {
	f := Format{Len: 512}
	d := blocks(t, f, 10)
	s := sink(t, f, false)
	for i, b := range d {
		if i != 4 {
			s.Write(b)
		}
	}
	s.Write(d[2])
	s.Close()
	c := s.Counts()
	if diff := cmp.Diff(Counts{Blocks: 9, Missing: 1, Duplicate: 1, BlockLen: f.Len, Stream: true}, c); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if err := c.Err(); err == nil || err.Error() != "verify: 10 blocks received: 1 missing, 1 duplicate" {
		t.Errorf("Err = %v", err)
	}
}

// A GRO train comes in one write: the Sink checks it datagram by
// datagram, the last one possibly shorter.
func TestVerifyGROTrain(t *testing.T) {
	f := Format{Len: 1000}
	d := blocks(t, f, 20)
	var train []byte
	for _, b := range d[:19] {
		train = append(train, b...)
	}
	train = append(train, d[19][:300]...)
	train[5*f.Len+700] ^= 0xff
	s := sink(t, f, true)
	s.Write(train[:10*f.Len])
	s.Write(train[10*f.Len:])
	want := Counts{Blocks: 19, Corrupt: 1, Short: 1, BlockLen: f.Len, Faults: []Fault{{Block: 5, Offset: 700}}}
	if diff := cmp.Diff(want, s.Counts()); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

// Framing puts the block after another Framing's header, and checks it
// there; offsets count from the datagram's start.
func TestVerifyFraming(t *testing.T) {
	const off, dgram = 16, 1200
	inner := &countFraming{}
	fr, err := NewFraming(inner, off, Format{Len: dgram - off, Flow: 9})
	if err != nil {
		t.Fatal(err)
	}
	rx, err := NewFraming(&countFraming{}, off, Format{Len: dgram - off, Flow: 9})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		p := bytes.Repeat([]byte{'x'}, dgram)
		fr.Stamp(p, time.Duration(i))
		if string(p[:4]) != "HDR!" {
			t.Fatalf("inner header overwritten: %q", p[:16])
		}
		switch i {
		case 10:
			continue // lost
		case 20:
			p[off+100] ^= 1
		case 30:
			p[3] ^= 1 // the inner header: not verified
		}
		rx.Receive(p, 0)
	}
	want := Counts{Blocks: 98, Corrupt: 1, Missing: 1, BlockLen: dgram - off, Faults: []Fault{{Block: 20, Offset: off + 100}}}
	if diff := cmp.Diff(want, rx.Sink().Counts()); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if inner.stamped != 100 || rx.Inner.(*countFraming).received != 99 {
		t.Errorf("inner framing stamped %d, received %d", inner.stamped, rx.Inner.(*countFraming).received)
	}
	if fr.Source().Sent() != 100 {
		t.Errorf("Sent = %d", fr.Source().Sent())
	}
}

type countFraming struct{ stamped, received int }

func (c *countFraming) Stamp(p []byte, _ time.Duration) { copy(p, "HDR!"); c.stamped++ }
func (c *countFraming) Receive([]byte, time.Duration)   { c.received++ }

func TestVerifyErrWords(t *testing.T) {
	f := Format{Len: 2048}
	// A sender without --verify: blast's pattern.
	s := sink(t, f, false)
	s.Write(bytes.Repeat([]byte("0123456789"), 1000))
	s.Close()
	if err := s.Counts().Err(); err == nil || !strings.Contains(err.Error(), "does the sender run with --verify?") {
		t.Errorf("pattern: Err = %v", err)
	}
	// Blocks of another length.
	d := blocks(t, Format{Len: 4096}, 4)
	s = sink(t, f, true)
	for _, b := range d {
		s.Write(b[:2048]) // truncated to the receiver's buffer
	}
	if err := s.Counts().Err(); err == nil || !strings.Contains(err.Error(), "the sender's blocks are 4096 bytes and this end expects 2048") {
		t.Errorf("length mismatch: Err = %v", err)
	}
	// Another flow's blocks.
	d = blocks(t, Format{Len: 2048, Flow: 1}, 2)
	s = sink(t, f, true)
	s.Write(d[0])
	s.Write(d[1])
	if c := s.Counts(); c.Corrupt != 2 || c.Blocks != 0 {
		t.Errorf("another flow's blocks: %+v", c)
	}
	if got := (Counts{Blocks: 1234567, Corrupt: 1, Faults: []Fault{{1234, 17}}}).String(); got != "1234567 blocks ok, 1 corrupt (block 1234 at byte 17), 0 missing, 0 duplicate, 0 reordered" {
		t.Errorf("String = %q", got)
	}
	if _, err := NewSink(Format{Len: HeaderLen - 1}, false); err == nil {
		t.Error("a block shorter than the header was accepted")
	}
}

// Counts may be read while the flow's thread writes (go test -race).
func TestVerifyCountsConcurrent(t *testing.T) {
	f := Format{Len: 256}
	data := stream(t, f, 2000*f.Len, fixed(f.Len))
	s := sink(t, f, false)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				if c := s.Counts(); c.Corrupt != 0 {
					t.Errorf("corrupt while writing: %+v", c)
					return
				}
			}
		}
	})
	writeSplit(s, data, fixed(1000))
	close(stop)
	wg.Wait()
	s.Close()
	if got := s.Counts().Blocks; got != 2000 {
		t.Errorf("Blocks = %d", got)
	}
}

// Every block differs from every other, everywhere: no two blocks share
// a payload word at the same place.
func TestVerifyBlocksDiffer(t *testing.T) {
	d := blocks(t, Format{Len: 64}, 3)
	for i := HeaderLen; i < 64; i++ {
		if d[0][i] == d[1][i] && d[1][i] == d[2][i] {
			t.Errorf("byte %d is %#x in three blocks", i, d[0][i])
		}
	}
	if cmp.Equal(d[0][HeaderLen:], d[1][HeaderLen:], cmpopts.EquateEmpty()) {
		t.Error("two blocks have the same payload")
	}
}

func BenchmarkVerifySource(b *testing.B) {
	src, _ := NewSource(Format{Len: 128 << 10}, false)
	p := make([]byte, 128<<10)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		src.Read(p)
	}
}

func BenchmarkVerifySink(b *testing.B) {
	f := Format{Len: 128 << 10}
	src, _ := NewSource(f, false)
	s, _ := NewSink(f, false)
	p := make([]byte, f.Len)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		src.Read(p)
		s.Write(p)
	}
}

// A corrupted length field that no sender could have written (over the
// largest block) is a corrupt block, not a sender with another -l.
func TestVerifyCorruptLengthField(t *testing.T) {
	f := Format{Len: 2048}
	d := blocks(t, f, 4)
	binary.BigEndian.PutUint32(d[1][4:], 0xff00ff00)
	s := sink(t, f, true)
	for _, b := range d {
		s.Write(b)
	}
	s.Close()
	err := s.Counts().Err()
	if err == nil || !strings.HasPrefix(err.Error(), "verify: 4 blocks received: 1 corrupt (block 1 at byte 4") || strings.Contains(err.Error(), "the sender's blocks are") {
		t.Errorf("Err = %v, want the corrupt block named and no block-length advice", err)
	}
}
