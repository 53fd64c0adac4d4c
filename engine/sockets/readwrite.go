package sockets

import (
	"context"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

// ReadWrite moves bytes with one write(2) per buffer and one read(2) per
// receive call, blocking on the flow's own thread: the classic path every
// other backend is compared with. It runs free (engine.Free).
type ReadWrite struct{}

var _ engine.Backend = ReadWrite{}

// Name implements engine.Backend.
func (ReadWrite) Name() string { return "readwrite" }

// Probe implements engine.Backend: read and write are always there.
func (ReadWrite) Probe() error { return nil }

// RunsFree implements engine.Free: every call goes through the flow.
func (ReadWrite) RunsFree(bool) bool { return true }

// Send implements engine.Backend: one buffer from the Sender per
// WriteAll, which counts its calls in FactSyscalls.
func (ReadWrite) Send(ctx context.Context, f *engine.Flow) error {
	s := engine.NewSender(f)
	buf := engine.Buffer(f.Spec)
	fd := f.Sock.FD()
	for {
		p, err := s.Next(buf)
		if err != nil || len(p) == 0 {
			return err
		}
		if err := engine.WriteAll(s, fd, p); err != nil {
			return err
		}
	}
}

// Recv implements engine.Backend.
func (ReadWrite) Recv(ctx context.Context, f *engine.Flow) error {
	s := f.Spec
	buf := engine.Buffer(s)
	udp := s.Protocol == engine.UDP
	fd := f.Sock.FD()
	syscalls := f.Facts.Counter(engine.FactSyscalls)
	var left int64 = -1
	if s.Bytes > 0 && !udp {
		left = s.Bytes
	}
	for left != 0 {
		p := buf
		if left > 0 && left < int64(len(p)) {
			p = p[:left]
		}
		n, err := f.Read(fd, p)
		syscalls.Add(1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			f.Stats.AddError()
			return engine.IOErr("read", err)
		}
		if n == 0 && !udp || f.Cancelled() {
			f.Stats.AddCall() // the read that saw EOF (or the shutdown)
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
			left -= int64(n)
		}
	}
	return nil
}
