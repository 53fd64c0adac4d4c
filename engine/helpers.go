package engine

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"
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

// WatchContext makes blocking I/O on conn return as soon as ctx is done by
// moving conn's deadline into the past. Call the returned stop function
// when the I/O is over; it reports whether the context fired.
func WatchContext(ctx context.Context, conn net.Conn) (stop func() bool) {
	return context.AfterFunc(ctx, func() {
		conn.SetDeadline(time.Unix(1, 0))
	})
}

// Pacer spaces sends so that the bytes sent follow a rate in bits per
// second. The zero rate never waits.
type Pacer struct {
	bytesPerSec float64
	start       time.Time
	sent        float64
}

// NewPacer returns a pacer for rate bits per second starting now.
func NewPacer(rate float64) *Pacer {
	return &Pacer{bytesPerSec: rate / 8, start: time.Now()}
}

// Wait blocks until n more bytes may be sent, or ctx is done.
func (p *Pacer) Wait(ctx context.Context, n int) error {
	if p.bytesPerSec <= 0 {
		return nil
	}
	due := p.start.Add(time.Duration(p.sent / p.bytesPerSec * float64(time.Second)))
	p.sent += float64(n)
	d := time.Until(due)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// touchSum keeps the compiler from dropping the reads of Deliver's touch.
var touchSum atomic.Uint32

// Deliver accounts for p, received by one I/O call (one datagram when
// dgram), reads every byte when the Spec asks to touch the data, and hands
// p to the Spec's Sink.
func Deliver(f *Flow, p []byte, dgram bool) error {
	dg := 0
	if dgram {
		dg = 1
	}
	f.Stats.AddIO(len(p), dg)
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
