package enginetest

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ioCalls are the system calls a backend's flow thread blocks in: on its
// socket, a pipe, a file, an io_uring or a ppoll on AF_XDP rings.
var ioCalls = []uintptr{
	unix.SYS_READ, unix.SYS_WRITE, unix.SYS_RECVFROM, unix.SYS_SENDTO,
	unix.SYS_RECVMSG, unix.SYS_SENDMSG, unix.SYS_RECVMMSG, unix.SYS_SENDMMSG,
	unix.SYS_SPLICE, unix.SYS_VMSPLICE, unix.SYS_SENDFILE,
	unix.SYS_IO_URING_ENTER, unix.SYS_PPOLL,
}

// blockedInIO reports whether a thread of this process is blocked in one
// of ioCalls (/proc/self/task/*/syscall: a thread that runs says
// "running"). The Go runtime's own threads wait in futex, epoll_pwait and
// nanosleep, and the suite's plain peers read through the runtime's
// poller, which never blocks in read: such a thread is a flow's.
func blockedInIO() bool {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return false
	}
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/syscall")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		nr, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			continue
		}
		for _, c := range ioCalls {
			if uintptr(nr) == c {
				return true
			}
		}
	}
	return false
}
