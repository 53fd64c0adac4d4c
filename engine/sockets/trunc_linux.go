package sockets

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

// Trunc receives with recv(2) and MSG_TRUNC: the kernel discards the data
// without copying it to user memory and says how much there was. TCP
// discards up to BufLen bytes per call; UDP discards one datagram per call
// and learns its real length. Each call blocks on the flow's thread and
// honours the socket's timeout (SO_RCVTIMEO). It only receives, and only
// in sink mode: there are no bytes to write to an output or to touch.
// With a Framing (iperf3's UDP header) it copies the first
// engine.HeaderPeek bytes of each datagram, for Framing.Receive, and
// discards the rest, as iperf3 --skip-rx-copy does.
type Trunc struct{}

var _ engine.Backend = Trunc{}

// ErrTruncData is returned when a trunc receive is asked to deliver data.
var ErrTruncData = errors.New("the trunc backend discards received data without reading it, so it cannot write it to an output or touch it: receive in sink mode (-s), or use the readwrite or splice backend")

// Name implements engine.Backend.
func (Trunc) Name() string { return "trunc" }

// Probe implements engine.Backend: MSG_TRUNC discards TCP data since Linux
// 2.6; nothing to ask the kernel.
func (Trunc) Probe() error { return nil }

// RunsFree implements engine.Free: its receives go through the flow.
func (Trunc) RunsFree(send bool) bool { return !send }

// Send implements engine.Backend: trunc only receives.
func (Trunc) Send(context.Context, *engine.Flow) error {
	return fmt.Errorf("trunc only receives: send with another backend: %w", engine.ErrNotSupported)
}

// Recv implements engine.Backend.
func (Trunc) Recv(ctx context.Context, f *engine.Flow) error {
	s := f.Spec
	if s.Sink != nil || s.Touch {
		return ErrTruncData
	}
	fd := f.Sock.FD()
	syscalls := f.Facts.Counter(engine.FactSyscalls)
	notCopied := f.Facts.Counter(engine.FactBytesNotCopied)
	udp := s.Protocol == engine.UDP
	var hdr []byte // the start of each datagram, for the Framing
	if udp && s.Framing != nil {
		hdr = make([]byte, engine.HeaderPeek)
		f.Facts.Notef("received data discarded in the kernel (MSG_TRUNC), all but the first %d bytes of each datagram (its header)", len(hdr))
	} else {
		f.Facts.Notef("received data discarded in the kernel (MSG_TRUNC)")
	}
	left := int64(-1)
	if s.Bytes > 0 && !udp {
		left = s.Bytes
	}
	for left != 0 {
		n := s.BufLen
		switch {
		case udp:
			n = 0 // the datagram's length comes back all the same
		case left > 0 && left < int64(n):
			n = int(left)
		}
		k, err := recvTrunc(f, fd, hdr, n)
		syscalls.Add(1)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil && f.Cancelled():
			return engine.ErrCancelled
		case err != nil:
			f.Stats.AddError()
			return engine.IOErr("recv", err)
		case k == 0 && !udp || f.Cancelled():
			f.Stats.AddCall() // the call that saw EOF (or the shutdown)
			return nil
		case udp && k <= s.SentinelMax:
			f.Stats.AddCall()
			return nil
		}
		dg, copied := 0, 0
		if udp {
			dg = 1
		}
		if hdr != nil {
			copied = min(k, len(hdr))
			s.Framing.Receive(hdr[:copied], engine.Mono())
		}
		f.Stats.AddIO(k, dg)
		notCopied.Add(int64(k - copied))
		if left > 0 {
			left -= int64(k)
		}
	}
	return nil
}

// recvTrunc is recv(fd, NULL, n, MSG_TRUNC): no buffer at all; or, with
// buf, recv(fd, buf, len(buf), MSG_TRUNC), which copies the start of a
// datagram and still returns its whole length. Both are the flow's
// blocking receives (free or locked, see engine.Free).
func recvTrunc(f *engine.Flow, fd int, buf []byte, n int) (int, error) {
	if len(buf) > 0 {
		return f.Recv(fd, buf, unix.MSG_TRUNC)
	}
	return f.Discard(fd, n, unix.MSG_TRUNC)
}
