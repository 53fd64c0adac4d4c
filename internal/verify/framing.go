package verify

import (
	"time"

	"github.com/blastnet/blast/engine"
)

// Framing carries blocks in the datagrams of a UDP flow whose first
// bytes belong to another engine.Framing (iperf3's header, in
// client/server mode): Stamp lets Inner stamp the datagram, then writes
// the next block after the first Offset bytes; Receive hands the datagram
// to Inner, then checks the block after Offset. A datagram of n bytes
// carries a block of n-Offset: the Format's Len is the datagram length
// less Offset. Fault offsets count from the start of the datagram.
//
// A receiver that hands Receive only the start of each datagram (trunc,
// engine.HeaderPeek bytes) cannot verify: the blocks would look short.
type Framing struct {
	Inner  engine.Framing
	Offset int

	src  *Source
	sink *Sink
}

var _ engine.Framing = (*Framing)(nil)

// NewFraming returns a Framing that puts blocks of f after offset bytes
// that inner (nil: none) stamps and reads.
func NewFraming(inner engine.Framing, offset int, f Format) (*Framing, error) {
	src, err := NewSource(f, true)
	if err != nil {
		return nil, err
	}
	sink, err := NewSink(f, true)
	if err != nil {
		return nil, err
	}
	sink.base = offset
	return &Framing{Inner: inner, Offset: offset, src: src, sink: sink}, nil
}

// Stamp implements engine.Framing.
func (fr *Framing) Stamp(p []byte, at time.Duration) {
	if fr.Inner != nil {
		fr.Inner.Stamp(p, at)
	}
	if len(p) > fr.Offset {
		fr.src.Read(p[fr.Offset:])
	}
}

// Receive implements engine.Framing.
func (fr *Framing) Receive(p []byte, at time.Duration) {
	if fr.Inner != nil {
		fr.Inner.Receive(p, at)
	}
	if len(p) > fr.Offset {
		fr.sink.Write(p[fr.Offset:])
	}
}

// Source is what the sending side stamps (Sent: blocks sent).
func (fr *Framing) Source() *Source { return fr.src }

// Sink is what the receiving side checks (Counts).
func (fr *Framing) Sink() *Sink { return fr.sink }
