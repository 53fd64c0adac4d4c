package engine

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Buffer returns n bytes for I/O, placed as spec's BufAlign/BufOffset ask
// and filled with ttcp's printable pattern.
func Buffer(s *Spec) []byte {
	n := s.BufLen
	align := s.BufAlign
	if align <= 1 {
		b := make([]byte, n)
		Pattern(b)
		return b
	}
	raw := make([]byte, n+align+s.BufOffset)
	addr := uintptr(unsafe.Pointer(&raw[0]))
	skip := (align - int(addr%uintptr(align)) + s.BufOffset) % align
	b := raw[skip : skip+n : skip+n]
	Pattern(b)
	return b
}

// Pattern fills b with ttcp's source pattern: the printable ASCII
// characters, repeating.
func Pattern(b []byte) {
	c := byte(0)
	for i := range b {
		for !isPrint(c & 0x7f) {
			c++
		}
		b[i] = c & 0x7f
		c++
	}
}

func isPrint(c byte) bool { return c >= 0x20 && c < 0x7f }

// touchSum keeps the compiler from dropping the reads of Deliver's touch.
var touchSum atomic.Uint32

// Deliver accounts for p, received by one I/O call (one datagram when
// dgram), and consumes it (Consume).
func Deliver(f *Flow, p []byte, dgram bool) error {
	dg := 0
	if dgram {
		dg = 1
	}
	f.Stats.AddIO(len(p), dg)
	return Consume(f, p)
}

// Consume does what Deliver does apart from counting (the caller counted
// the I/O call that brought p): on a UDP flow with a Framing, hand p, one
// datagram, to Framing.Receive; touch every byte if asked; hand p to the
// Sink.
func Consume(f *Flow, p []byte) error { return ConsumeTrain(f, p, 0) }

// ConsumeTrain is Consume for a message that carries a train of UDP
// datagrams of seg bytes each, the last one possibly shorter (UDP GRO):
// Framing.Receive gets each datagram of the train on its own, in order;
// the touch and the Sink take p whole. seg 0 means that p is one
// datagram.
func ConsumeTrain(f *Flow, p []byte, seg int) error {
	if fr := f.Spec.Framing; fr != nil && f.Spec.Protocol == UDP {
		at := Mono()
		if seg <= 0 || len(p) <= seg {
			fr.Receive(p, at)
		} else {
			for d := p; len(d) > 0; {
				k := min(seg, len(d))
				fr.Receive(d[:k:k], at)
				d = d[k:]
			}
		}
	}
	if f.Spec.Touch {
		var sum byte
		for _, c := range p {
			sum += c
		}
		touchSum.Add(uint32(sum))
	}
	if f.Spec.Sink != nil {
		if _, err := f.Spec.Sink.Write(p); err != nil {
			return fmt.Errorf("write received data: %w", err)
		}
	}
	return nil
}

// SendOnly is the Recv error of a backend that only sends.
func SendOnly(name string) error {
	return fmt.Errorf("%s only sends: receive with another backend (--rx-backend readwrite, splice or trunc): %w", name, ErrNotSupported)
}

// TCPOnly refuses a UDP flow for a backend that moves a TCP stream.
func TCPOnly(name string, f *Flow) error {
	if f.Spec.Protocol != TCP {
		return fmt.Errorf("%s moves TCP streams only (UDP: use mmsg, iouring or readwrite): %w", name, ErrNotSupported)
	}
	return nil
}
