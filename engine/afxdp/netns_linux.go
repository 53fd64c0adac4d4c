package afxdp

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// inSockNetns runs fn on a thread inside the network namespace of the
// socket fd (the flow's), so that the interface lookups, neighbour and
// route queries (netlink), AF_XDP binds and XDP attach fn makes see the
// interfaces the flow's socket sees, whichever thread called: a mode may
// have made the socket in another namespace than the one Run's thread or
// Prepare's caller is in. The AF_XDP sockets fn creates then belong to
// that namespace and work from any thread: the sending and receiving
// threads need not enter it.
//
// The namespace comes from the socket (ioctl SIOCGSKNS). Where the calling
// thread is already in it, or where the kernel cannot tell (SIOCGSKNS
// refused), fn runs on the calling thread.
func inSockNetns(fd int, fn func() error) error {
	nsfd, err := sockNetns(fd)
	if err != nil {
		return lockedHere(fn)
	}
	defer unix.Close(nsfd)
	runtime.LockOSThread()
	if sameNetns(nsfd) {
		defer runtime.UnlockOSThread()
		return fn()
	}
	runtime.UnlockOSThread()
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the runtime retires the thread with the
		// goroutine instead of reusing it in the other namespace.
		runtime.LockOSThread()
		if err := unix.Setns(nsfd, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("afxdp: enter the flow socket's network namespace: %w", err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// lockedHere runs fn without letting the goroutine change threads, so
// that every netlink socket fn opens is in one namespace.
func lockedHere(fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return fn()
}

// sockNetns is a file descriptor of the network namespace of socket fd.
func sockNetns(fd int) (int, error) {
	r, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCGSKNS, 0)
	if e != 0 {
		return -1, e
	}
	nsfd := int(r)
	unix.CloseOnExec(nsfd)
	return nsfd, nil
}

// sameNetns reports whether the calling (locked) thread is in the network
// namespace nsfd refers to.
func sameNetns(nsfd int) bool {
	var a, b unix.Stat_t
	if unix.Fstat(nsfd, &a) != nil || unix.Stat("/proc/thread-self/ns/net", &b) != nil {
		return false
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}
