package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// waker is a flow's eventfd: written when the flow is cancelled, polled by
// every Flow.Wait and by the pacer's sleeps.
type waker struct {
	mu        sync.Mutex // guards efd against the cancel's write after close
	efd       int
	cancelled atomic.Bool
}

func (w *waker) open() error {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return os.NewSyscallError("eventfd", err)
	}
	w.efd = efd
	return nil
}

func (w *waker) fire() {
	w.cancelled.Store(true)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.efd > 0 {
		var one [8]byte
		binary.NativeEndian.PutUint64(one[:], 1)
		unix.Write(w.efd, one[:])
	}
}

func (w *waker) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.efd > 0 {
		unix.Close(w.efd)
		w.efd = 0
	}
}

// Run runs b's Send (send true) or Recv on f and returns what it
// returned. A flow of a Free backend, unpaced and without Spec.Affinity,
// runs free (see Free: an unlocked goroutine in raw calls on a socket
// whose blocking Run bounds). Any other runs on a goroutine locked to an
// OS thread of its own, which ends with the flow (the goroutine exits
// locked), so nothing a backend changed on it (priority, affinity,
// namespace) outlives the flow. With Spec.Affinity the thread is pinned
// to those CPUs before the backend runs; a pin the kernel refuses fails
// the flow before it moves a byte.
//
// When ctx is done Run cancels the flow: it shuts f.Sock down and wakes
// Flow.Wait, and returns ctx's error once the backend has returned. A
// time-limited sender's socket gets a short send timeout, so that a write
// blocked on a closed window sees the time limit promptly.
func Run(ctx context.Context, b Backend, f *Flow, send bool) error {
	if f.Spec == nil || f.Stats == nil {
		return errors.New("engine: a Flow needs a Spec and Counters")
	}
	if err := f.wake.open(); err != nil {
		return err
	}
	defer f.wake.close()
	freeRun := runsFree(b, f, send)
	f.Free = freeRun
	if freeRun {
		if err := f.startFree(send); err != nil {
			return err
		}
		defer f.endFree()
		holdP()
		defer releaseP()
	} else if send && f.Spec.Duration > 0 && f.Sock != nil {
		if err := f.Sock.sendTimeout(sendSlice); err != nil {
			return err
		}
		defer f.Sock.sendTimeout(0) // the socket is the mode's again
	}
	if send && f.Spec.Protocol == UDP && f.Sock != nil && f.Sock.proto == UDP {
		// A datagram the host's own queue drops fails its send, and
		// the Sender waits for the queue and sends it again (Retry).
		if err := f.Sock.reportQueueDrops(true); err != nil {
			f.Facts.Notef("drops in the host's own queue go unseen (%v): they count as loss on the path", err)
		} else {
			defer f.Sock.reportQueueDrops(false)
		}
	}
	stop := context.AfterFunc(ctx, func() {
		f.wake.fire()
		if f.Sock != nil {
			f.Sock.Shutdown()
		}
	})
	done := make(chan error, 1)
	go func() {
		if freeRun {
			done <- f.runFree(ctx, b, send)
			return
		}
		runtime.LockOSThread() // never unlocked: the thread exits with us
		if len(f.Spec.Affinity) > 0 {
			if err := pin(f.Spec.Affinity); err != nil {
				done <- err
				return
			}
		}
		if send && f.Spec.Rate > 0 {
			// A paced sender sleeps between buffers: the default 50 µs
			// timer slack would late every wakeup by up to that (a
			// datagram's time at 1 Gbit/s is 11 µs). The slack is the
			// thread's own, and the thread ends with the flow.
			unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
		}
		t0, v0, i0 := threadUsage()
		w0, start := ThreadRunWait(), time.Now()
		var err error
		if send {
			err = b.Send(ctx, f)
		} else {
			err = b.Recv(ctx, f)
		}
		t1, v1, i1 := threadUsage()
		f.CPU = f.CPU.Add(t1.Sub(t0))
		f.Switches.Voluntary += v1 - v0
		f.Switches.Involuntary += i1 - i0
		f.RunWait += max(ThreadRunWait()-w0, 0)
		f.Wall += time.Since(start)
		done <- err
	}()
	err := <-done
	if !stop() && f.wake.cancelled.Load() {
		return ctx.Err()
	}
	return err
}

// Cancelled reports whether the flow was cancelled.
func (f *Flow) Cancelled() bool { return f.wake.cancelled.Load() }

// errNotRunning is what Wait and Sleep return outside Run.
var errNotRunning = errors.New("engine: Flow.Wait and Flow.Sleep work only inside engine.Run")

// ErrCancelled is what Wait and Sleep return when the flow was cancelled;
// Run turns it into the context's error.
var ErrCancelled = errors.New("engine: flow cancelled")

// Wait blocks the flow's thread in ppoll until fd has one of events (it
// returns them), the flow is cancelled (ErrCancelled), or timeout passes
// (0 revents; timeout < 0 waits without bound). It is for backends that
// have no blocking call to wait in (AF_XDP) or that wait on more than
// their socket.
func (f *Flow) Wait(fd int, events int16, timeout time.Duration) (int16, error) {
	if f.wake.efd <= 0 {
		return 0, errNotRunning
	}
	fds := [2]unix.PollFd{{Fd: int32(fd), Events: events}, {Fd: int32(f.wake.efd), Events: unix.POLLIN}}
	var ts *unix.Timespec
	if timeout >= 0 {
		t := unix.NsecToTimespec(int64(timeout))
		ts = &t
	}
	for {
		_, err := unix.Ppoll(fds[:], ts, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, os.NewSyscallError("ppoll", err)
		}
		if fds[1].Revents != 0 || f.wake.cancelled.Load() {
			return 0, ErrCancelled
		}
		return fds[0].Revents, nil
	}
}

// Sleep blocks the flow's thread for d, or until it is cancelled
// (ErrCancelled). It sleeps in the kernel (ppoll on the flow's eventfd),
// to the microsecond, without the runtime's timers.
func (f *Flow) Sleep(d time.Duration) error {
	if d <= 0 {
		return nil
	}
	if f.wake.efd <= 0 {
		return errNotRunning
	}
	fds := [1]unix.PollFd{{Fd: int32(f.wake.efd), Events: unix.POLLIN}}
	deadline := time.Now().Add(d)
	for {
		ts := unix.NsecToTimespec(int64(d))
		_, err := unix.Ppoll(fds[:], &ts, nil)
		if err != nil && err != unix.EINTR {
			return os.NewSyscallError("ppoll", err)
		}
		if fds[0].Revents != 0 || f.wake.cancelled.Load() {
			return ErrCancelled
		}
		if d = time.Until(deadline); d <= 0 {
			return nil
		}
	}
}

// pin restricts the calling thread to cpus.
func pin(cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		if errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("pin the flow's thread to CPU %v: none of them is online and allowed to this process (see nproc and taskset -p %d): %w", cpus, os.Getpid(), err)
		}
		return fmt.Errorf("pin the flow's thread to CPU %v: %w", cpus, os.NewSyscallError("sched_setaffinity", err))
	}
	return nil
}
