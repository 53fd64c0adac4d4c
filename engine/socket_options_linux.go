package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The IPv6 flow label manager (linux/in6.h), which x/sys/unix lacks.
const (
	ipv6FlowlabelMgr = 32  // IPV6_FLOWLABEL_MGR
	ipv6FlowinfoSend = 33  // IPV6_FLOWINFO_SEND
	ipv6FlAGet       = 0   // IPV6_FL_A_GET
	ipv6FlFCreate    = 1   // IPV6_FL_F_CREATE
	ipv6FlSAny       = 255 // IPV6_FL_S_ANY
)

// flowLabelConnect readies fd to send with the IPv6 flow label label, as
// iperf3's -L does: it asks the kernel for the label towards to
// (IPV6_FLOWLABEL_MGR), turns on sending the flow information
// (IPV6_FLOWINFO_SEND) and returns the connect(2) that carries the label
// in sin6_flowinfo, which x/sys/unix's Sockaddr cannot.
func flowLabelConnect(fd, family int, to netip.AddrPort, label uint32) (func() error, error) {
	if label > MaxFlowLabel {
		return nil, fmt.Errorf("flow label %#x: must be 1 to %#x (20 bits)", label, MaxFlowLabel)
	}
	if family != unix.AF_INET6 {
		return nil, fmt.Errorf("flow label %#x: the flow label is IPv6's, and %s is an IPv4 peer: connect over IPv6 (-6, or an IPv6 address)", label, to.Addr())
	}
	// struct in6_flowlabel_req: flr_dst, flr_label (big-endian), action,
	// share, flags, expires, linger, padding.
	var req [32]byte
	dst := to.Addr().As16()
	copy(req[0:16], dst[:])
	binary.BigEndian.PutUint32(req[16:20], label)
	req[20] = ipv6FlAGet
	req[21] = ipv6FlSAny
	binary.NativeEndian.PutUint16(req[22:24], ipv6FlFCreate)
	if err := unix.SetsockoptString(fd, unix.IPPROTO_IPV6, ipv6FlowlabelMgr, string(req[:])); err != nil {
		if errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("flow label %#x: the kernel has it in use for another owner (EPERM): choose another label", label)
		}
		return nil, fmt.Errorf("flow label %#x: %w", label, os.NewSyscallError("setsockopt IPV6_FLOWLABEL_MGR", err))
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, ipv6FlowinfoSend, 1); err != nil {
		return nil, fmt.Errorf("flow label %#x: %w", label, os.NewSyscallError("setsockopt IPV6_FLOWINFO_SEND", err))
	}
	var sa unix.RawSockaddrInet6
	sa.Family = unix.AF_INET6
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], to.Port())
	binary.BigEndian.PutUint32((*[4]byte)(unsafe.Pointer(&sa.Flowinfo))[:], label)
	sa.Addr = dst
	if z := to.Addr().Zone(); z != "" {
		if ifi, err := net.InterfaceByName(z); err == nil {
			sa.Scope_id = uint32(ifi.Index)
		} else if n, err := strconv.Atoi(z); err == nil {
			sa.Scope_id = uint32(n)
		}
	}
	return func() error {
		_, _, errno := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&sa)), unsafe.Sizeof(sa))
		if errno != 0 {
			return errno
		}
		return nil
	}, nil
}

// mptcpError says why an MPTCP socket could not be made: the kernel has
// no MPTCP (EPROTONOSUPPORT, EINVAL on older kernels) or it is switched
// off (ENOPROTOOPT: net.mptcp.enabled = 0).
func mptcpError(err error) error {
	switch {
	case errors.Is(err, unix.ENOPROTOOPT):
		return fmt.Errorf("MPTCP is switched off on this host (sysctl net.mptcp.enabled=1 turns it on): %w (%w)", ErrNotSupported, err)
	case errors.Is(err, unix.EPROTONOSUPPORT), errors.Is(err, unix.EINVAL), errors.Is(err, unix.EAFNOSUPPORT):
		return fmt.Errorf("this kernel has no Multipath TCP (CONFIG_MPTCP, Linux 5.6 or later): %w (%w)", ErrNotSupported, err)
	}
	return os.NewSyscallError("socket IPPROTO_MPTCP", err)
}

// ProbeMPTCP reports whether this host can make Multipath TCP sockets
// (SockOpts.MPTCP): nil, or an error wrapping ErrNotSupported that says
// why not.
func ProbeMPTCP() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_MPTCP)
	if err != nil {
		return mptcpError(err)
	}
	unix.Close(fd)
	return nil
}
