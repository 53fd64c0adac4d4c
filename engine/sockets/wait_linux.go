package sockets

import (
	"context"
	"encoding/binary"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// waitSlice bounds one wait in the kernel, so that a deadline set on the
// conn (which only the runtime poller sees) is noticed this late at most.
// The context wakes a wait at once.
const waitSlice = 50 * time.Millisecond

// fdWaiter waits for a socket to become ready inside the kernel, in
// ppoll(2) on the calling thread, instead of parking the goroutine in the
// runtime poller.
//
// A flow that moves small datagrams waits for its socket tens of thousands
// of times a second. Each park in the runtime poller costs a hop through
// another thread (the one blocked in epoll_wait wakes, finds the goroutine
// and hands it on), and three when the goroutine is locked to its thread
// (runtime.LockOSThread, as blast compare does to measure each end's CPU):
// at 64-byte datagrams those wakeups cost more CPU than recvmmsg itself.
// ppoll is woken by the socket directly, on the thread that then reads.
//
// Cancellation stays prompt: the context writes to an eventfd that every
// wait also polls. Conn deadlines are honoured because the caller goes
// back through RawConn.Read/Write (which check them) after every wait,
// and no wait lasts longer than waitSlice.
type fdWaiter struct {
	efd  int
	fds  [2]unix.PollFd
	stop func() bool

	mu     sync.Mutex // guards closed against the context's write
	closed bool
}

func newWaiter(ctx context.Context) (*fdWaiter, error) {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, os.NewSyscallError("eventfd", err)
	}
	w := &fdWaiter{efd: efd}
	w.fds[1] = unix.PollFd{Fd: int32(efd), Events: unix.POLLIN}
	w.stop = context.AfterFunc(ctx, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if !w.closed {
			var one [8]byte
			binary.NativeEndian.PutUint64(one[:], 1)
			unix.Write(w.efd, one[:])
		}
	})
	return w, nil
}

// wait blocks until fd has one of events, the context is done, or
// waitSlice passed. The caller retries its I/O either way.
func (w *fdWaiter) wait(fd int, events int16) error {
	w.fds[0] = unix.PollFd{Fd: int32(fd), Events: events}
	ts := unix.NsecToTimespec(int64(waitSlice))
	_, err := unix.Ppoll(w.fds[:], &ts, nil)
	if err != nil && err != unix.EINTR {
		return os.NewSyscallError("ppoll", err)
	}
	return nil
}

// close releases the eventfd.
func (w *fdWaiter) close() error {
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	return unix.Close(w.efd)
}
