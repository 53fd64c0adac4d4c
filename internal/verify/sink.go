package verify

import (
	"encoding/binary"
	"slices"
	"sync"
	"sync/atomic"
)

// Sink checks a flow's blocks: an engine.Spec.Sink (an io.Writer) that
// cuts what it is given into blocks and counts them (see the package
// doc). Write never fails: what is wrong is counted.
//
// Write and Close are for one goroutine (the flow's thread, or after it);
// Counts may be called from any, at any time.
type Sink struct {
	g         *gen
	datagrams bool
	// base is added to fault offsets (Framing: the header before the
	// block).
	base int

	// The flow thread's state.
	held    []byte // a block begun by one write (stream)
	next    uint64 // the lowest sequence number not yet passed
	seen    []uint64
	scratch []byte

	blocks, corrupt, missing, duplicate, reordered, short, unframed atomic.Int64

	mu      sync.Mutex
	faults  []Fault
	peerLen int
}

// NewSink returns the Sink for blocks of f: one per datagram if
// datagrams (a write may hold several, a GRO train), else a stream.
func NewSink(f Format, datagrams bool) (*Sink, error) {
	g, err := newGen(f)
	if err != nil {
		return nil, err
	}
	return &Sink{g: g, datagrams: datagrams, seen: make([]uint64, Window/64)}, nil
}

// Write implements io.Writer: on a stream p continues the byte stream; with
// datagrams p is one datagram or a train of datagrams of the block length
// (the last may be shorter).
func (s *Sink) Write(p []byte) (int, error) {
	n := len(p)
	L := s.g.Len
	if s.datagrams {
		for len(p) > 0 {
			k := min(L, len(p))
			s.check(p[:k])
			p = p[k:]
		}
		return n, nil
	}
	if len(s.held) > 0 {
		k := copy(s.held[len(s.held):L], p)
		s.held = s.held[:len(s.held)+k]
		p = p[k:]
		if len(s.held) < L {
			return n, nil
		}
		s.check(s.held)
		s.held = s.held[:0]
	}
	for len(p) >= L {
		s.check(p[:L])
		p = p[L:]
	}
	if len(p) > 0 {
		if s.held == nil {
			s.held = make([]byte, 0, L)
		}
		s.held = append(s.held, p...)
	}
	return n, nil
}

// Close checks the block a stream ended within (short). Call it once the
// flow is over; a second Close does nothing.
func (s *Sink) Close() error {
	if len(s.held) > 0 {
		s.check(s.held)
		s.held = s.held[:0]
	}
	return nil
}

// Counts are the counts so far: exact once the flow is over and the Sink
// closed.
func (s *Sink) Counts() Counts {
	c := Counts{Blocks: s.blocks.Load(), Corrupt: s.corrupt.Load(), Missing: s.missing.Load(),
		Duplicate: s.duplicate.Load(), Reordered: s.reordered.Load(), Short: s.short.Load(),
		Unframed: s.unframed.Load(), BlockLen: s.g.Len, Stream: !s.datagrams}
	s.mu.Lock()
	c.Faults = slices.Clone(s.faults)
	c.PeerBlockLen = s.peerLen
	s.mu.Unlock()
	return c
}

// Format is the shape of the blocks the Sink expects.
func (s *Sink) Format() Format { return s.g.Format }

// check takes one block, whole or (the last of a stream or a datagram)
// short.
func (s *Sink) check(b []byte) {
	if len(b) == s.g.Len {
		if s.g.intact(b) && binary.BigEndian.Uint32(b[8:]) == s.g.Flow {
			s.arrived(binary.BigEndian.Uint64(b[16:]), true)
			return
		}
		s.bad(b)
		return
	}
	// Short: the expected block's prefix, byte for byte.
	seq := s.next
	if s.datagrams && len(b) >= HeaderLen && binary.BigEndian.Uint32(b) == Magic {
		seq = binary.BigEndian.Uint64(b[16:])
	}
	if _, diffs := s.compare(b, seq); diffs == 0 {
		s.short.Add(1)
		s.arrived(seq, true)
		return
	}
	s.bad(b)
}

// arrived accounts for block seq, intact or corrupt (then it only fills
// its place in the sequence).
func (s *Sink) arrived(seq uint64, intact bool) {
	switch {
	case seq >= s.next:
		if seq > s.next {
			s.missing.Add(int64(seq - s.next))
			s.forget(s.next, seq)
		}
		s.mark(seq)
		s.next = seq + 1
		if intact {
			s.blocks.Add(1)
		}
	case s.next-seq <= Window && s.marked(seq):
		if intact {
			s.duplicate.Add(1)
		}
	default: // late: fills a gap
		if intact {
			s.reordered.Add(1)
			s.blocks.Add(1)
		}
		if s.missing.Load() > 0 {
			s.missing.Add(-1)
		}
		if s.next-seq <= Window {
			s.mark(seq)
		}
	}
}

// bad counts a corrupt block, attributes it to a sequence number where
// it can, and records where its first wrong byte is.
func (s *Sink) bad(b []byte) {
	s.corrupt.Add(1)
	framed := len(b) >= 8 && binary.BigEndian.Uint32(b) == Magic
	if !framed {
		s.unframed.Add(1)
	}
	if framed {
		if l := int(binary.BigEndian.Uint32(b[4:])); l != s.g.Len {
			// Another block length is believed when a sender could
			// have used it (a header up to the largest -l): a
			// corrupted length field mostly says something no
			// sender sends.
			if l >= HeaderLen && l <= MaxBlockLen {
				s.mu.Lock()
				if s.peerLen == 0 {
					s.peerLen = l
				}
				s.mu.Unlock()
			}
		}
	}
	seq, off := s.attribute(b, framed)
	if seq >= 0 {
		s.arrived(uint64(seq), false)
	}
	s.mu.Lock()
	if len(s.faults) < MaxFaults {
		s.faults = append(s.faults, Fault{Block: seq, Offset: off + s.base})
	}
	s.mu.Unlock()
}

// attribute tells which block b was meant to be (-1: it cannot tell) and
// the offset of its first wrong byte. On a stream that is the position;
// a datagram is the block its header names, or the next one expected,
// whichever it matches in at least three quarters of its bytes.
func (s *Sink) attribute(b []byte, framed bool) (seq int64, off int) {
	if !s.datagrams {
		off = -1
		if s.faultsFull() {
			return int64(s.next), off // the offset will not be shown
		}
		off, _ = s.compare(b, s.next)
		return int64(s.next), off
	}
	first, diffs := s.compare(b, s.next)
	best, bestOff, bestDiffs := int64(s.next), first, diffs
	if framed && len(b) >= HeaderLen {
		if h := binary.BigEndian.Uint64(b[16:]); h != s.next {
			if o, d := s.compare(b, h); d < bestDiffs {
				best, bestOff, bestDiffs = int64(h), o, d
			}
		}
	}
	if bestDiffs > len(b)/4 || best < 0 {
		return -1, first
	}
	return best, bestOff
}

func (s *Sink) faultsFull() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.faults) >= MaxFaults
}

// compare sets b beside the start of block seq: the offset of the first
// byte that differs (-1: none) and how many differ.
func (s *Sink) compare(b []byte, seq uint64) (first, diffs int) {
	if s.scratch == nil {
		s.scratch = make([]byte, s.g.Len)
	}
	s.g.fill(s.scratch, seq)
	want := s.scratch[:min(len(b), len(s.scratch))]
	first = -1
	for i, c := range want {
		if b[i] != c {
			if first < 0 {
				first = i
			}
			diffs++
		}
	}
	if len(b) > len(want) {
		if first < 0 {
			first = len(want)
		}
		diffs += len(b) - len(want)
	}
	return first, diffs
}

func (s *Sink) bit(seq uint64) (int, uint64) {
	i := seq % Window
	return int(i / 64), 1 << (i % 64)
}

func (s *Sink) mark(seq uint64) {
	w, b := s.bit(seq)
	s.seen[w] |= b
}

func (s *Sink) marked(seq uint64) bool {
	w, b := s.bit(seq)
	return s.seen[w]&b != 0
}

// forget clears the numbers from..to-1, skipped: not seen.
func (s *Sink) forget(from, to uint64) {
	if to-from >= Window {
		clear(s.seen)
		return
	}
	for n := from; n < to; n++ {
		w, b := s.bit(n)
		s.seen[w] &^= b
	}
}
