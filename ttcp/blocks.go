package ttcp

import (
	"io"
	"unsafe"
)

// blockWriter is the receiver's -B: it writes received data on in whole
// blocks of n bytes (-l), one write each, for readers such as tar that
// need complete blocks from a pipe. A short read is held until later
// reads complete its block; Flush writes what is left at the end as it
// is, as ttcp's mread hands back a short last block at EOF.
type blockWriter struct {
	w    io.Writer
	n    int
	held []byte
	// addr is the address of the first buffer handed in: the data
	// path's own, for -v.
	addr uintptr
}

// Write takes p whole; it writes each block completed, and holds the
// rest.
func (b *blockWriter) Write(p []byte) (int, error) {
	total := len(p)
	if len(p) > 0 && b.addr == 0 {
		b.addr = uintptr(unsafe.Pointer(&p[0]))
	}
	if len(b.held) > 0 {
		k := min(b.n-len(b.held), len(p))
		b.held = append(b.held, p[:k]...)
		p = p[k:]
		if len(b.held) < b.n {
			return total, nil
		}
		if err := b.write(b.held); err != nil {
			return 0, err
		}
		b.held = b.held[:0]
	}
	for len(p) >= b.n {
		if err := b.write(p[:b.n]); err != nil {
			return 0, err
		}
		p = p[b.n:]
	}
	if len(p) > 0 {
		if b.held == nil {
			b.held = make([]byte, 0, b.n)
		}
		b.held = append(b.held, p...)
	}
	return total, nil
}

// Flush writes the partial block held, if any.
func (b *blockWriter) Flush() error {
	if len(b.held) == 0 {
		return nil
	}
	err := b.write(b.held)
	b.held = b.held[:0]
	return err
}

func (b *blockWriter) write(p []byte) error {
	n, err := b.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	return err
}
