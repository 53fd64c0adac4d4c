package sockets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/blastnet/blast/engine"
)

// runSend runs a send loop the way ReadWrite.Send does: the context
// cancels it through the conn's deadline, Spec.Duration is a write
// deadline, and a deadline that ends the timed send is success.
func runSend(ctx context.Context, f *engine.Flow, loop func(rc syscall.RawConn) error) error {
	rc, err := rawConn(f)
	if err != nil {
		return err
	}
	stop := engine.WatchContext(ctx, f.Conn)
	defer stop()
	if f.Spec.Duration > 0 {
		f.Conn.SetWriteDeadline(time.Now().Add(f.Spec.Duration))
		defer f.Conn.SetWriteDeadline(time.Time{})
	}
	err = loop(rc)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if f.Spec.Duration > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
		return nil
	}
	return err
}

// runRecv runs a receive loop with cancellation through the deadline.
func runRecv(ctx context.Context, f *engine.Flow, loop func(rc syscall.RawConn) error) error {
	rc, err := rawConn(f)
	if err != nil {
		return err
	}
	stop := engine.WatchContext(ctx, f.Conn)
	defer stop()
	err = loop(rc)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// touched keeps the compiler from dropping the reads of consume's touch.
var touched atomic.Uint32

// consume does what engine.Deliver does apart from counting (the caller
// counted the I/O call that brought p): touch every byte if asked, and
// hand p to the Sink.
func consume(f *engine.Flow, p []byte) error {
	if f.Spec.Touch {
		var sum byte
		for _, c := range p {
			sum += c
		}
		touched.Add(uint32(sum))
	}
	if f.Spec.Sink != nil {
		if _, err := f.Spec.Sink.Write(p); err != nil {
			return fmt.Errorf("write received data: %w", err)
		}
	}
	return nil
}

// sendOnly is the Recv of a backend that only sends.
func sendOnly(name string) error {
	return fmt.Errorf("%s only sends: receive with another backend (--rx-backend readwrite, splice or trunc): %w", name, engine.ErrNotSupported)
}

// tcpOnly refuses a UDP flow for a backend that moves a TCP stream.
func tcpOnly(name string, f *engine.Flow) error {
	if f.Spec.Protocol != engine.TCP {
		return fmt.Errorf("%s moves TCP streams only (UDP: use mmsg, iouring or readwrite): %w", name, engine.ErrNotSupported)
	}
	return nil
}

// chunk is the size of the next I/O: the buffer length, or what is left of
// a byte limit (left < 0: no limit).
func chunk(bufLen int, left int64) int {
	if left >= 0 && left < int64(bufLen) {
		return int(left)
	}
	return bufLen
}

// limit returns the byte budget of a Spec: -1 when unlimited.
func limit(s *engine.Spec) int64 {
	if s.Bytes > 0 {
		return s.Bytes
	}
	return -1
}
