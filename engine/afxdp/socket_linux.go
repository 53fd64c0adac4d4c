package afxdp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

// SocketConfig shapes one AF_XDP socket.
type SocketConfig struct {
	Ifindex int
	Iface   string // for messages
	Queue   int
	// RX and TX say which rings the socket gets (at least one).
	RX, TX bool
	// FrameSize is the UMEM chunk size: 2048 or 4096 (0: 2048).
	FrameSize int
	// RingSize is the size of the RX, TX and completion rings, a power of
	// two (0: 2048); the fill ring is twice as big and all RX frames fit in
	// it, so it is kept full.
	RingSize int
	// ZeroCopy asks the kernel for zero-copy and fails where the driver
	// cannot; without it the socket binds in copy mode.
	ZeroCopy bool
	// TxBudget raises the number of descriptors the kernel sends per kick
	// in copy mode (XDP_MAX_TX_SKB_BUDGET, Linux 6.17); 0: 256.
	TxBudget int
}

func (c *SocketConfig) defaults() {
	if c.FrameSize == 0 {
		c.FrameSize = 2048
	}
	if c.RingSize == 0 {
		c.RingSize = 2048
	}
	if c.TxBudget == 0 {
		c.TxBudget = 256
	}
}

// Socket is one AF_XDP socket bound to one queue, with its own UMEM. The
// UMEM's frames are split into two disjoint pools: RX frames live in the
// fill and RX rings, TX frames in the TX and completion rings and the
// sender's free list, so a receiver and a sender need no lock.
type Socket struct {
	fd   int
	cfg  SocketConfig
	umem []byte // mmap'd, off the Go heap
	maps [][]byte
	fill ring[uint64]
	comp ring[uint64]
	rx   ring[unix.XDPDesc]
	tx   ring[unix.XDPDesc]
	rxN  int // RX frames: [0, rxN)
	txN  int // TX frames: [rxN, rxN+txN)
	// owner is the socket whose UMEM, fill and completion rings this one
	// shares (OpenShared), or nil.
	owner *Socket
	ZC    bool
	Notes []string // what the kernel granted or refused
}

// Open creates, maps and binds an AF_XDP socket as c says. It must be
// called inside the network namespace of the interface; the socket then
// works from any thread. ctx bounds the wait for a busy queue (bindRetry).
func Open(ctx context.Context, c SocketConfig) (_ *Socket, err error) {
	c.defaults()
	if c.FrameSize != 2048 && c.FrameSize != 4096 {
		return nil, fmt.Errorf("afxdp: frame size %d: must be 2048 or 4096", c.FrameSize)
	}
	if c.RingSize < 64 || c.RingSize&(c.RingSize-1) != 0 {
		return nil, fmt.Errorf("afxdp: ring size %d: must be a power of two of at least 64", c.RingSize)
	}
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("afxdp: socket: %w", privilege(err))
	}
	s := &Socket{fd: fd, cfg: c}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	ring := c.RingSize
	fillN := 2 * ring
	if c.RX {
		s.rxN = fillN
	}
	if c.TX {
		s.txN = ring
	}
	frames := max(s.rxN+s.txN, 1)
	s.umem, err = unix.Mmap(-1, 0, frames*c.FrameSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("afxdp: mmap UMEM of %d bytes: %w", frames*c.FrameSize, err)
	}
	liveMaps.Add(1)
	reg := unix.XDPUmemReg{Addr: uint64(uintptr(unsafe.Pointer(&s.umem[0]))), Len: uint64(len(s.umem)), Size: uint32(c.FrameSize)}
	if err := setsockopt(fd, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg)); err != nil {
		return nil, fmt.Errorf("afxdp: register UMEM: %w", privilege(err))
	}
	// bind needs a fill and a completion ring even on a one-way socket.
	if err := unix.SetsockoptInt(fd, unix.SOL_XDP, unix.XDP_UMEM_FILL_RING, fillN); err != nil {
		return nil, fmt.Errorf("afxdp: fill ring: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_XDP, unix.XDP_UMEM_COMPLETION_RING, ring); err != nil {
		return nil, fmt.Errorf("afxdp: completion ring: %w", err)
	}
	if c.RX {
		if err := unix.SetsockoptInt(fd, unix.SOL_XDP, unix.XDP_RX_RING, ring); err != nil {
			return nil, fmt.Errorf("afxdp: RX ring: %w", err)
		}
	}
	if c.TX {
		if err := unix.SetsockoptInt(fd, unix.SOL_XDP, unix.XDP_TX_RING, ring); err != nil {
			return nil, fmt.Errorf("afxdp: TX ring: %w", err)
		}
	}
	var off unix.XDPMmapOffsets
	olen := uint32(unsafe.Sizeof(off))
	if err := getsockopt(fd, unix.XDP_MMAP_OFFSETS, unsafe.Pointer(&off), &olen); err != nil {
		return nil, fmt.Errorf("afxdp: ring offsets: %w", err)
	}
	if olen < uint32(unsafe.Sizeof(off)) {
		return nil, fmt.Errorf("afxdp: the kernel gave %d bytes of ring offsets (Linux 5.4 or newer needed): %w", olen, engine.ErrNotSupported)
	}
	mapRing := func(name string, o unix.XDPRingOffset, pgoff int64, n int, entry uintptr) ([]byte, error) {
		m, err := unix.Mmap(fd, pgoff, int(o.Desc)+n*int(entry), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			return nil, fmt.Errorf("afxdp: mmap %s ring: %w", name, err)
		}
		s.maps = append(s.maps, m)
		liveMaps.Add(1)
		return m, nil
	}
	m, err := mapRing("fill", off.Fr, unix.XDP_UMEM_PGOFF_FILL_RING, fillN, 8)
	if err != nil {
		return nil, err
	}
	s.fill = newRing[uint64](m, off.Fr, uint32(fillN))
	if m, err = mapRing("completion", off.Cr, unix.XDP_UMEM_PGOFF_COMPLETION_RING, ring, 8); err != nil {
		return nil, err
	}
	s.comp = newRing[uint64](m, off.Cr, uint32(ring))
	descSize := unsafe.Sizeof(unix.XDPDesc{})
	if c.RX {
		if m, err = mapRing("RX", off.Rx, unix.XDP_PGOFF_RX_RING, ring, descSize); err != nil {
			return nil, err
		}
		s.rx = newRing[unix.XDPDesc](m, off.Rx, uint32(ring))
	}
	if c.TX {
		if m, err = mapRing("TX", off.Tx, unix.XDP_PGOFF_TX_RING, ring, descSize); err != nil {
			return nil, err
		}
		s.tx = newRing[unix.XDPDesc](m, off.Tx, uint32(ring))
		s.tx.initProducer()
	}
	// Every RX frame goes into the fill ring before bind.
	s.fill.initProducer()
	if c.RX {
		idx, got := s.fill.reserve(uint32(s.rxN))
		for i := range got {
			*s.fill.at(idx + i) = uint64(int(i) * c.FrameSize)
		}
		s.fill.submit()
	}
	s.comp.cachedProd, s.comp.cachedCons = 0, 0
	if c.TX && !c.ZeroCopy {
		err := unix.SetsockoptInt(fd, unix.SOL_XDP, unix.XDP_MAX_TX_SKB_BUDGET, c.TxBudget)
		switch {
		case err == nil:
			s.Notes = append(s.Notes, fmt.Sprintf("TX budget %d descriptors per kick", c.TxBudget))
		case errors.Is(err, unix.ENOPROTOOPT) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EACCES):
			s.Notes = append(s.Notes, fmt.Sprintf("TX budget left at the kernel's 32 per kick (XDP_MAX_TX_SKB_BUDGET %d: %v; needs Linux 6.17)", c.TxBudget, err))
		default:
			return nil, fmt.Errorf("afxdp: set XDP_MAX_TX_SKB_BUDGET %d: %w", c.TxBudget, err)
		}
	}
	flags := uint16(unix.XDP_USE_NEED_WAKEUP | unix.XDP_COPY)
	if c.ZeroCopy {
		flags = unix.XDP_USE_NEED_WAKEUP | unix.XDP_ZEROCOPY
	}
	if err := bindRetry(ctx, fd, &unix.SockaddrXDP{Flags: flags, Ifindex: uint32(c.Ifindex), QueueID: uint32(c.Queue)}); err != nil {
		return nil, bindError(c, err)
	}
	var opts uint32
	olen = 4
	if err := getsockopt(fd, unix.XDP_OPTIONS, unsafe.Pointer(&opts), &olen); err == nil {
		s.ZC = opts&unix.XDP_OPTIONS_ZEROCOPY != 0
	}
	return s, nil
}

// bindRetry binds fd, waiting out EBUSY for up to 2 s (or until ctx is
// done): the kernel releases a closed socket's hold on its queue in a
// deferred work item, so a socket that follows another on the same queue
// (back-to-back runs) may find it still taken for a few milliseconds,
// and on a host whose CPUs are all busy for more than the 500 ms this
// waited before (make test-stress, with a second suite running).
func bindRetry(ctx context.Context, fd int, sa *unix.SockaddrXDP) error {
	var err error
	for range 400 {
		if err = unix.Bind(fd, sa); !errors.Is(err, unix.EBUSY) {
			return err
		}
		if serr := sleepCtx(ctx, 5*time.Millisecond); serr != nil {
			return serr
		}
	}
	return err
}

// sleepCtx waits d, or until ctx is done (its error): the pause of a
// setup retry, which may run before the flow's thread exists.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// OpenShared opens another transmit socket on owner's queue that shares
// owner's UMEM, TX frames and completion ring (XDP_SHARED_UMEM), so that
// a second thread can send on a queue: in copy mode each kick runs the
// transmit path on the caller's CPU. It has a TX ring of its own and no
// fill, completion or RX ring; the caller serializes access to the
// completion ring. Close it before owner.
func OpenShared(ctx context.Context, owner *Socket) (_ *Socket, err error) {
	c := owner.cfg
	if !c.TX {
		return nil, errors.New("afxdp: a shared socket needs an owner with a TX ring")
	}
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("afxdp: socket: %w", privilege(err))
	}
	s := &Socket{fd: fd, cfg: c, umem: owner.umem, rxN: owner.rxN, txN: owner.txN, owner: owner, ZC: owner.ZC}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	ring := c.RingSize
	if err := unix.SetsockoptInt(fd, unix.SOL_XDP, unix.XDP_TX_RING, ring); err != nil {
		return nil, fmt.Errorf("afxdp: TX ring: %w", err)
	}
	var off unix.XDPMmapOffsets
	olen := uint32(unsafe.Sizeof(off))
	if err := getsockopt(fd, unix.XDP_MMAP_OFFSETS, unsafe.Pointer(&off), &olen); err != nil {
		return nil, fmt.Errorf("afxdp: ring offsets: %w", err)
	}
	m, err := unix.Mmap(fd, unix.XDP_PGOFF_TX_RING, int(off.Tx.Desc)+ring*int(unsafe.Sizeof(unix.XDPDesc{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("afxdp: mmap TX ring: %w", err)
	}
	s.maps = append(s.maps, m)
	liveMaps.Add(1)
	s.tx = newRing[unix.XDPDesc](m, off.Tx, uint32(ring))
	s.tx.initProducer()
	if !c.ZeroCopy {
		// Best effort: Open has reported what the kernel does with it.
		unix.SetsockoptInt(fd, unix.SOL_XDP, unix.XDP_MAX_TX_SKB_BUDGET, c.TxBudget)
	}
	// Flags other than XDP_SHARED_UMEM are the owner's and refused here.
	sa := &unix.SockaddrXDP{Flags: unix.XDP_SHARED_UMEM, Ifindex: uint32(c.Ifindex), QueueID: uint32(c.Queue), SharedUmemFD: uint32(owner.fd)}
	if err := bindRetry(ctx, fd, sa); err != nil {
		return nil, fmt.Errorf("afxdp: bind a second socket to %s queue %d (shared UMEM): %w", c.Iface, c.Queue, privilege(err))
	}
	return s, nil
}

func bindError(c SocketConfig, err error) error {
	op := fmt.Sprintf("afxdp: bind %s queue %d", c.Iface, c.Queue)
	switch {
	case c.ZeroCopy && (errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EPROTONOSUPPORT)):
		return fmt.Errorf("%s in zero-copy mode: the driver cannot (veth and other virtual devices have copy mode only; drop zc): %w", op, engine.ErrNotSupported)
	case errors.Is(err, unix.EINVAL):
		return fmt.Errorf("%s: %w (is the queue out of range? see `ethtool -l %s`)", op, err, c.Iface)
	case errors.Is(err, unix.ENODEV) || errors.Is(err, unix.ENXIO):
		return fmt.Errorf("%s: no such interface: %w", op, err)
	case errors.Is(err, unix.EBUSY):
		return fmt.Errorf("%s: another AF_XDP socket is bound to that queue: %w", op, err)
	}
	return fmt.Errorf("%s: %w", op, privilege(err))
}

// liveMaps counts the mappings (UMEMs and rings) not yet unmapped, so
// tests can tell that nothing leaks.
var liveMaps atomic.Int64

// FD is the socket's file descriptor, for the XSKMAP.
func (s *Socket) FD() int { return s.fd }

// Stats reads XDP_STATISTICS.
func (s *Socket) Stats() (unix.XDPStatistics, error) {
	var st unix.XDPStatistics
	n := uint32(unsafe.Sizeof(st))
	err := getsockopt(s.fd, unix.XDP_STATISTICS, unsafe.Pointer(&st), &n)
	return st, err
}

// frame returns the UMEM bytes at addr.
func (s *Socket) frame(addr uint64, n int) []byte { return s.umem[addr : addr+uint64(n)] }

// Close closes the socket (which unbinds it and removes it from any
// XSKMAP), then unmaps its rings and UMEM.
func (s *Socket) Close() error {
	var errs []error
	if s.fd >= 0 {
		errs = append(errs, unix.Close(s.fd))
		s.fd = -1
	}
	for _, m := range s.maps {
		errs = append(errs, unix.Munmap(m))
		liveMaps.Add(-1)
	}
	s.maps = nil
	if s.owner != nil { // the UMEM is the owner's
		s.umem = nil
	}
	if s.umem != nil {
		errs = append(errs, unix.Munmap(s.umem))
		liveMaps.Add(-1)
		s.umem = nil
	}
	return errors.Join(errs...)
}

// txQueued is the number of descriptors in the TX ring the kernel has not
// taken yet.
func (s *Socket) txQueued() uint32 { return s.tx.cachedProd - atomic.LoadUint32(s.tx.consumer) }

// kick asks the kernel to send what the TX ring holds. EAGAIN (budget used
// up), EBUSY, ENOBUFS and ENETDOWN are not failures: the caller goes on.
func (s *Socket) kick() error {
	_, _, errno := unix.Syscall6(unix.SYS_SENDTO, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	switch errno {
	case 0, unix.EAGAIN, unix.EBUSY, unix.ENOBUFS, unix.ENETDOWN, unix.EINTR:
		return nil
	}
	return os.NewSyscallError("sendto", errno)
}

// wakeRX asks the kernel to look at the fill ring again.
func (s *Socket) wakeRX() {
	unix.Syscall6(unix.SYS_RECVFROM, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
}

func setsockopt(fd, opt int, p unsafe.Pointer, n uintptr) error {
	_, _, errno := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt), uintptr(p), n, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

func getsockopt(fd, opt int, p unsafe.Pointer, n *uint32) error {
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt), uintptr(p), uintptr(unsafe.Pointer(n)), 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// privilege turns EPERM into what to do about it.
func privilege(err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return fmt.Errorf("%w: %w", errNeedPriv, err)
	}
	return err
}

var errNeedPriv = fmt.Errorf("needs CAP_NET_ADMIN and CAP_BPF — run as root or use --backend mmsg: %w", engine.ErrNotSupported)
