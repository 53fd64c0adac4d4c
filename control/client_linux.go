package control

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

// ctrlControl readies the control connection's socket before it
// connects, as iperf3 does its own: bound to the interface dev (if any),
// TCP_NODELAY, and TCP_USER_TIMEOUT userTimeout (if any).
func ctrlControl(dev string, userTimeout time.Duration) func(network, address string, c syscall.RawConn) error {
	opts := engine.SockOpts{TOS: engine.NoTOS, Device: dev}.Control()
	return func(network, address string, c syscall.RawConn) error {
		if err := opts(network, address, c); err != nil {
			return err
		}
		if userTimeout <= 0 {
			return nil
		}
		var serr error
		err := c.Control(func(fd uintptr) { serr = setUserTimeout(int(fd), userTimeout) })
		return errors.Join(err, serr)
	}
}

// setUserTimeout sets TCP_USER_TIMEOUT: how long sent data may stay
// unacknowledged before the kernel fails the connection (--snd-timeout).
func setUserTimeout(fd int, d time.Duration) error {
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds())); err != nil {
		return fmt.Errorf("--snd-timeout: unable to set TCP USER_TIMEOUT: %w", os.NewSyscallError("setsockopt", err))
	}
	return nil
}
