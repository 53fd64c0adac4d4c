package sockets

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// Options are the socket options a mode sets on its sockets before they
// connect or listen (so that window scaling sees the buffer size).
type Options struct {
	// SndBuf and RcvBuf ask for SO_SNDBUF and SO_RCVBUF (0: leave the
	// kernel's default and autotuning alone).
	SndBuf, RcvBuf int
	// TOS is the IP TOS byte / IPv6 traffic class (-1: leave it).
	TOS int
	// NoDelay sets TCP_NODELAY.
	NoDelay bool
	// Device binds the socket to an interface (SO_BINDTODEVICE).
	Device string
}

// Control returns a function for net.Dialer.Control and
// net.ListenConfig.Control that applies o.
func (o Options) Control() func(network, address string, c syscall.RawConn) error {
	return func(network, address string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = o.apply(int(fd), network)
		})
		return errors.Join(err, serr)
	}
}

func (o Options) apply(fd int, network string) error {
	if o.SndBuf > 0 {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, o.SndBuf); err != nil {
			return fmt.Errorf("set SO_SNDBUF %d: %w", o.SndBuf, err)
		}
	}
	if o.RcvBuf > 0 {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, o.RcvBuf); err != nil {
			return fmt.Errorf("set SO_RCVBUF %d: %w", o.RcvBuf, err)
		}
	}
	if o.TOS >= 0 {
		if err := setTOS(fd, network, o.TOS); err != nil {
			return err
		}
	}
	if o.NoDelay && (network == "tcp" || network == "tcp4" || network == "tcp6") {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
			return fmt.Errorf("set TCP_NODELAY: %w", err)
		}
	}
	if o.Device != "" {
		if err := bindToDevice(fd, o.Device); err != nil {
			return err
		}
	}
	return nil
}

func setTOS(fd int, network string, tos int) error {
	// A dual-stack (or v6) socket carries its TOS as the traffic class;
	// setting IP_TOS too covers v4-mapped peers.
	v6 := network == "tcp6" || network == "udp6" || network == "tcp" || network == "udp"
	if v6 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_TCLASS, tos); err != nil && !errors.Is(err, unix.ENOPROTOOPT) && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("set IPV6_TCLASS %#x: %w", tos, err)
		}
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TOS, tos); err != nil && !(v6 && errors.Is(err, unix.ENOPROTOOPT)) {
		return fmt.Errorf("set IP_TOS %#x: %w", tos, err)
	}
	return nil
}

// BufSize reads back the socket buffer the kernel granted: SO_SNDBUF when
// send is true, SO_RCVBUF otherwise. Linux doubles what was asked to leave
// room for its bookkeeping, and this reports that real figure.
func BufSize(c syscall.Conn, send bool) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	opt, name := unix.SO_RCVBUF, "SO_RCVBUF"
	if send {
		opt, name = unix.SO_SNDBUF, "SO_SNDBUF"
	}
	var v int
	var gerr error
	if err := rc.Control(func(fd uintptr) { v, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, opt) }); err != nil {
		return 0, err
	}
	if gerr != nil {
		return 0, fmt.Errorf("get %s: %w", name, gerr)
	}
	return v, nil
}
