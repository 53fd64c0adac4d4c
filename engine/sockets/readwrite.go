package sockets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

func init() { engine.Register(ReadWrite{}) }

// ReadWrite moves bytes with one write(2) per buffer and one read(2) per
// receive call: the classic path every other backend is compared with.
type ReadWrite struct{}

var _ engine.Backend = ReadWrite{}

// Name implements engine.Backend.
func (ReadWrite) Name() string { return "readwrite" }

// Probe implements engine.Backend: read and write are always there.
func (ReadWrite) Probe() error { return nil }

// Send implements engine.Backend.
func (ReadWrite) Send(ctx context.Context, f *engine.Flow) error {
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
	err = sendLoop(ctx, rc, f)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if f.Spec.Duration > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
		return nil // the time limit ended the send
	}
	return err
}

func sendLoop(ctx context.Context, rc syscall.RawConn, f *engine.Flow) error {
	s := f.Spec
	buf := engine.Buffer(s)
	pacer := engine.NewPacer(s.Rate)
	udp := s.Protocol == engine.UDP
	left := s.Bytes
	for {
		n := len(buf)
		if s.Bytes > 0 {
			if left == 0 {
				return nil
			}
			if left < int64(n) {
				n = int(left)
			}
		}
		if s.Source != nil {
			var err error
			n, err = s.Source.Read(buf[:n])
			if n == 0 {
				if err == nil {
					continue
				}
				if errors.Is(err, io.EOF) {
					return nil
				}
				return fmt.Errorf("read source: %w", err)
			}
		}
		if err := pacer.Wait(ctx, n); err != nil {
			return err
		}
		if err := writeAll(rc, f.Stats, buf[:n], udp); err != nil {
			return err
		}
		left -= int64(n)
	}
}

// writeAll writes p with as many write(2) calls as the kernel needs,
// counting each one. A UDP write is one datagram.
func writeAll(rc syscall.RawConn, c *engine.Counters, p []byte, udp bool) error {
	for len(p) > 0 {
		var n int
		var werr error
		err := rc.Write(func(fd uintptr) bool {
			n, werr = unix.Write(int(fd), p)
			return werr != unix.EAGAIN
		})
		if err != nil {
			return err
		}
		if werr == unix.ENOBUFS && udp {
			c.AddError()
			time.Sleep(18 * time.Millisecond) // ttcp's pause for a full queue
			continue
		}
		if werr != nil {
			c.AddError()
			return os.NewSyscallError("write", werr)
		}
		dg := 0
		if udp {
			dg = 1
		}
		c.AddIO(n, dg)
		p = p[n:]
	}
	return nil
}

// Recv implements engine.Backend.
func (ReadWrite) Recv(ctx context.Context, f *engine.Flow) error {
	rc, err := rawConn(f)
	if err != nil {
		return err
	}
	stop := engine.WatchContext(ctx, f.Conn)
	defer stop()
	err = recvLoop(rc, f)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

func recvLoop(rc syscall.RawConn, f *engine.Flow) error {
	s := f.Spec
	buf := engine.Buffer(s)
	udp := s.Protocol == engine.UDP
	var left int64 = -1
	if s.Bytes > 0 {
		left = s.Bytes
	}
	for left != 0 {
		p := buf
		if left > 0 && left < int64(len(p)) && !udp {
			p = p[:left]
		}
		var n int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			n, rerr = unix.Read(int(fd), p)
			return rerr != unix.EAGAIN
		})
		if err != nil {
			return err
		}
		if rerr != nil {
			f.Stats.AddError()
			return os.NewSyscallError("read", rerr)
		}
		if n == 0 && !udp {
			f.Stats.AddCall() // the read that saw EOF
			return nil
		}
		if udp && n <= s.SentinelMax {
			f.Stats.AddCall()
			return nil
		}
		if err := engine.Deliver(f, p[:n], udp); err != nil {
			return err
		}
		if left > 0 {
			left = max(left-int64(n), 0)
		}
	}
	return nil
}

func rawConn(f *engine.Flow) (syscall.RawConn, error) {
	sc, ok := f.Conn.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("sockets: %T has no file descriptor", f.Conn)
	}
	return sc.SyscallConn()
}
