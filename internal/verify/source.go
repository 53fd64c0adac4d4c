package verify

import "sync/atomic"

// Source generates a flow's blocks in sequence from 0, without end: it is
// an engine.Spec.Source that the engine's byte or time limit ends (a
// Sender with a Source stops at the limit, and would stop at an EOF that
// never comes).
//
// On a stream a Read fills p with whole blocks and begins the next one
// if p ends within it; the next Read goes on where p ended. With
// datagrams each Read is one block (one datagram), the block's prefix
// when p is shorter (the last datagram of a byte count).
//
// Read is for one goroutine (the flow's thread); Sent may be called from
// any.
type Source struct {
	g         *gen
	datagrams bool
	seq       uint64 // the block being handed out
	off       int    // bytes of block seq handed out (stream)
	scratch   []byte // block seq, when it is handed out in pieces
	sent      atomic.Int64
}

// NewSource returns the Source of blocks of f, one per datagram if
// datagrams, else a stream of them.
func NewSource(f Format, datagrams bool) (*Source, error) {
	g, err := newGen(f)
	if err != nil {
		return nil, err
	}
	return &Source{g: g, datagrams: datagrams}, nil
}

// Read implements io.Reader; it never fails.
func (s *Source) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	L := s.g.Len
	if s.datagrams {
		n := L
		if len(p) >= L {
			s.g.fill(p, s.seq)
		} else {
			s.piece()
			n = copy(p, s.scratch)
		}
		s.seq++
		s.sent.Store(int64(s.seq))
		return n, nil
	}
	n := 0
	if s.off > 0 {
		k := copy(p, s.scratch[s.off:])
		s.off += k
		n = k
		if s.off == L {
			s.off = 0
			s.seq++
		}
	}
	for s.off == 0 && len(p)-n >= L {
		s.g.fill(p[n:n+L], s.seq)
		s.seq++
		n += L
	}
	if n < len(p) { // p ends within block seq
		s.piece()
		s.off = copy(p[n:], s.scratch)
		n = len(p)
	}
	begun := s.seq
	if s.off > 0 {
		begun++
	}
	s.sent.Store(int64(begun))
	return n, nil
}

// piece generates block seq into scratch.
func (s *Source) piece() {
	if s.scratch == nil {
		s.scratch = make([]byte, s.g.Len)
	}
	s.g.fill(s.scratch, s.seq)
}

// Sent is how many blocks the Source has begun to hand out: numbered 0
// to Sent-1, the last possibly cut short by the byte limit (or, at a
// time limit, handed to a send that never happened).
func (s *Source) Sent() int64 { return s.sent.Load() }

// Format is the shape of the blocks.
func (s *Source) Format() Format { return s.g.Format }
