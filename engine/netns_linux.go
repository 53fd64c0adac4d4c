package engine

import (
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// NetNS is a network namespace that sockets can be made in later, from any
// goroutine: a server captures the namespace it listens in, and makes the
// data sockets of its tests there (a socket lives in the namespace of the
// thread that made it, and a server's goroutines run on any thread).
type NetNS struct {
	fd  int
	ino uint64
}

// CurrentNetNS captures the calling thread's network namespace. Call it
// on the thread that made the listener (lock it, or call it right after).
func CurrentNetNS() (*NetNS, error) {
	fd, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("open /proc/thread-self/ns/net", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("fstat", err)
	}
	return &NetNS{fd: fd, ino: st.Ino}, nil
}

// Do runs fn in the namespace. When the calling thread is already there it
// runs fn directly; otherwise on a locked thread that enters the
// namespace and goes back when fn returns (entering needs CAP_SYS_ADMIN).
func (n *NetNS) Do(fn func() error) error {
	var st unix.Stat_t
	if unix.Stat("/proc/thread-self/ns/net", &st) == nil && st.Ino == n.ino {
		return fn()
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			done <- os.NewSyscallError("open /proc/thread-self/ns/net", err)
			return
		}
		defer unix.Close(home)
		if err := unix.Setns(n.fd, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- os.NewSyscallError("setns", err)
			return
		}
		ferr := fn()
		// Back home, the thread may run other goroutines again. If it
		// cannot go back it stays locked and ends with this goroutine
		// (the process's main thread is parked for good instead: it
		// must never run the rest of the process in another namespace).
		if unix.Setns(home, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		done <- ferr
	}()
	return <-done
}

// Close releases the namespace.
func (n *NetNS) Close() error {
	if n == nil || n.fd < 0 {
		return nil
	}
	err := unix.Close(n.fd)
	n.fd = -1
	return os.NewSyscallError("close", err)
}
