package compare

import (
	"golang.org/x/sys/unix"
)

// threadCPU is the CPU time of the calling OS thread so far.
func threadCPU() CPU {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
		return CPU{}
	}
	return CPU{User: tv(ru.Utime), Sys: tv(ru.Stime)}
}

func tv(t unix.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// bigBuffers asks for a large receive buffer (beyond rmem_max as root),
// so a UDP comparison measures the backends, not the default queue.
func bigBuffers(c interface {
	SyscallConn() (syscallRawConn, error)
}) {
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 32<<20) != nil {
			unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 32<<20)
		}
	})
}
