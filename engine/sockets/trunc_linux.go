package sockets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

func init() { engine.Register(Trunc{}) }

// Trunc receives with recv(2) and MSG_TRUNC: the kernel discards the data
// without copying it to user memory and says how much there was. TCP
// discards up to BufLen bytes per call; UDP discards one datagram per call
// and learns its real length. It only receives, and only in sink mode:
// there are no bytes to write to an output or to touch.
type Trunc struct{}

var _ engine.Backend = Trunc{}

// ErrTruncData is returned when a trunc receive is asked to deliver data.
var ErrTruncData = errors.New("the trunc backend discards received data without reading it, so it cannot write it to an output or touch it: receive in sink mode (-s), or use the readwrite or splice backend")

// Name implements engine.Backend.
func (Trunc) Name() string { return "trunc" }

// Probe implements engine.Backend: MSG_TRUNC discards TCP data since Linux
// 2.6; nothing to ask the kernel.
func (Trunc) Probe() error { return nil }

// Send implements engine.Backend: trunc only receives.
func (Trunc) Send(context.Context, *engine.Flow) error {
	return fmt.Errorf("trunc only receives: send with another backend: %w", engine.ErrNotSupported)
}

// Recv implements engine.Backend.
func (Trunc) Recv(ctx context.Context, f *engine.Flow) error {
	if f.Spec.Sink != nil || f.Spec.Touch {
		return ErrTruncData
	}
	return runRecv(ctx, f, func(rc syscall.RawConn) error { return truncLoop(rc, f) })
}

func truncLoop(rc syscall.RawConn, f *engine.Flow) error {
	s := f.Spec
	facts := engine.FactsOf(f)
	facts.Notef("received data discarded in the kernel (MSG_TRUNC)")
	udp := s.Protocol == engine.UDP
	left := limit(s)
	for left > 0 || left < 0 {
		n := chunk(s.BufLen, left)
		if udp {
			n = 0 // the datagram's length comes back all the same
		}
		var k int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			k, rerr = recvTrunc(int(fd), n)
			facts.Add(engine.FactSyscalls, 1)
			return rerr != unix.EAGAIN
		})
		if err != nil {
			return err
		}
		if rerr != nil {
			f.Stats.AddError()
			return os.NewSyscallError("recv", rerr)
		}
		if k == 0 && !udp {
			f.Stats.AddCall() // the call that saw EOF
			return nil
		}
		if udp && k <= s.SentinelMax {
			f.Stats.AddCall()
			return nil
		}
		dg := 0
		if udp {
			dg = 1
		}
		f.Stats.AddIO(k, dg)
		facts.Add(engine.FactBytesNotCopied, int64(k))
		if left > 0 {
			left -= int64(k)
		}
	}
	return nil
}

// recvTrunc is recv(fd, NULL, n, MSG_TRUNC): no buffer at all.
func recvTrunc(fd, n int) (int, error) {
	r, _, errno := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), 0, uintptr(n), unix.MSG_TRUNC, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}
