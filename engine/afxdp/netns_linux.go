package afxdp

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// inConnNetns runs fn on a thread inside the network namespace of c's
// socket, so that the interface lookups, neighbour and route queries
// (netlink), AF_XDP binds and XDP attach fn makes see the interfaces the
// flow's socket sees, whichever goroutine or thread called. The AF_XDP
// sockets fn creates then belong to that namespace and work from any
// thread: the sending and receiving threads need not enter it.
//
// The namespace comes from the socket (ioctl SIOCGSKNS). Where the calling
// thread is already in it, or where the kernel cannot tell (no socket,
// SIOCGSKNS refused), fn runs on the calling thread as before.
func inConnNetns(c net.Conn, fn func() error) error {
	nsfd, err := connNetns(c)
	if err != nil {
		return lockedHere(fn)
	}
	defer unix.Close(nsfd)
	runtime.LockOSThread()
	same := sameNetns(nsfd)
	if same {
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

func lockedHere(fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return fn()
}

// connNetns is a file descriptor of c's socket's network namespace.
func connNetns(c net.Conn) (int, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return -1, errors.New("no file descriptor")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	nsfd, ierr := -1, error(nil)
	if err := rc.Control(func(fd uintptr) {
		r, _, e := unix.Syscall(unix.SYS_IOCTL, fd, unix.SIOCGSKNS, 0)
		if e != 0 {
			ierr = e
			return
		}
		nsfd = int(r)
		unix.CloseOnExec(nsfd)
	}); err != nil {
		return -1, err
	}
	return nsfd, ierr
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
