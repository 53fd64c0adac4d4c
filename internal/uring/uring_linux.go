package sockets

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

// The io_uring ABI (include/uapi/linux/io_uring.h): x/sys/unix has the
// system call numbers and nothing else.
const (
	uringOffSQRing = 0
	uringOffCQRing = 0x8000000
	uringOffSQEs   = 0x10000000

	uringFeatSingleMmap = 1 << 0
	uringFeatNoDrop     = 1 << 1
	uringFeatExtArg     = 1 << 8

	uringSetupCQSize = 1 << 3

	uringEnterGetEvents = 1 << 0
	uringEnterExtArg    = 1 << 3

	uringOpAsyncCancel    = 14
	uringOpSend           = 26
	uringOpRecv           = 27
	uringOpProvideBuffers = 31
	uringOpSendZC         = 47

	uringSqeIOLink       = 1 << 2
	uringSqeBufferSelect = 1 << 5

	uringCqeFBuffer = 1 << 0
	uringCqeFMore   = 1 << 1
	uringCqeFNotif  = 1 << 3
	uringBufShift   = 16

	uringRecvMultishot       = 1 << 1
	uringSendZCReportUsage   = 1 << 3
	uringNotifUsageZCCopied  = 1 << 31
	uringAsyncCancelAll      = 1 << 0
	uringAsyncCancelFD       = 1 << 1
	uringRegisterProbe       = 8
	uringOpSupported         = 1 << 0
	uringGetEventsArgSize    = 24
	uringParamsSize          = 120
	uringSQESize             = 64
	uringCQESize             = 16
	uringProbeOps            = 64
	uringProbeHeaderSize     = 16
	uringProbeOpSize         = 8
	uringDefaultWaitInterval = 50 * time.Millisecond
)

type uringSQOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type uringCQOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  uringSQOffsets
	cqOff                                                                  uringCQOffsets
}

// uringSQE is struct io_uring_sqe, with the unions named for the fields
// blast uses.
type uringSQE struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	opFlags     uint32 // msg_flags, cancel_flags, ...
	userData    uint64
	bufGroup    uint16
	personality uint16
	spliceFDIn  int32
	addr3       uint64
	_           uint64
}

type uringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

type uringGetEventsArg struct {
	sigmask   uint64
	sigmaskSz uint32
	minWait   uint32
	ts        uint64
}

var (
	_ [uringParamsSize]byte       = [unsafe.Sizeof(uringParams{})]byte{}
	_ [uringSQESize]byte          = [unsafe.Sizeof(uringSQE{})]byte{}
	_ [uringCQESize]byte          = [unsafe.Sizeof(uringCQE{})]byte{}
	_ [uringGetEventsArgSize]byte = [unsafe.Sizeof(uringGetEventsArg{})]byte{}
)

// uring is one io_uring instance: its fd, the mapped rings and the SQE
// array. One goroutine owns it. Head and tail indexes shared with the
// kernel are read and written with sync/atomic, which in Go is at least
// as strong as the acquire/release the kernel expects.
type uring struct {
	fd       int
	features uint32
	rings    [][]byte // one or two mappings for the SQ and CQ rings
	sqeMem   []byte

	sqHead, sqTail *uint32
	sqMask         uint32
	sqArray        []uint32
	sqes           []uringSQE
	sqLocal        uint32 // our tail: SQEs written, not yet published
	toSubmit       uint32

	cqHead, cqTail *uint32
	cqMask         uint32
	cqes           []uringCQE

	// The wait argument and its timeout live here, on the heap, where
	// the pointer the kernel is given stays valid.
	arg uringGetEventsArg
	ts  unix.Timespec

	enters int64 // io_uring_enter calls
}

// newURing sets up a ring of entries SQEs and cqEntries CQEs.
func newURing(entries, cqEntries uint32) (*uring, error) {
	var p uringParams
	if cqEntries > 0 {
		p.flags |= uringSetupCQSize
		p.cqEntries = cqEntries
	}
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, uringSetupError(errno)
	}
	r := &uring{fd: int(fd), features: p.features}
	if err := r.mapRings(&p); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

func (r *uring) mapRings(p *uringParams) error {
	sqSize := int(p.sqOff.array) + int(p.sqEntries)*4
	cqSize := int(p.cqOff.cqes) + int(p.cqEntries)*uringCQESize
	single := p.features&uringFeatSingleMmap != 0
	if single {
		sqSize = max(sqSize, cqSize)
	}
	mmap := func(off int64, size int) ([]byte, error) {
		b, err := unix.Mmap(r.fd, off, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			return nil, os.NewSyscallError("mmap io_uring", err)
		}
		return b, nil
	}
	sq, err := mmap(uringOffSQRing, sqSize)
	if err != nil {
		return err
	}
	r.rings = append(r.rings, sq)
	cq := sq
	if !single {
		if cq, err = mmap(uringOffCQRing, cqSize); err != nil {
			return err
		}
		r.rings = append(r.rings, cq)
	}
	if r.sqeMem, err = mmap(uringOffSQEs, int(p.sqEntries)*uringSQESize); err != nil {
		return err
	}
	u32 := func(b []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&b[off])) }
	r.sqHead, r.sqTail = u32(sq, p.sqOff.head), u32(sq, p.sqOff.tail)
	r.sqMask = *u32(sq, p.sqOff.ringMask)
	r.sqArray = unsafe.Slice(u32(sq, p.sqOff.array), p.sqEntries)
	r.sqes = unsafe.Slice((*uringSQE)(unsafe.Pointer(&r.sqeMem[0])), p.sqEntries)
	r.cqHead, r.cqTail = u32(cq, p.cqOff.head), u32(cq, p.cqOff.tail)
	r.cqMask = *u32(cq, p.cqOff.ringMask)
	r.cqes = unsafe.Slice((*uringCQE)(unsafe.Pointer(&cq[p.cqOff.cqes])), p.cqEntries)
	r.sqLocal = atomic.LoadUint32(r.sqTail)
	return nil
}

// close unmaps the rings and closes the ring; the kernel cancels what is
// still in flight.
func (r *uring) close() error {
	var errs []error
	for _, m := range append(r.rings, r.sqeMem) {
		if m != nil {
			errs = append(errs, unix.Munmap(m))
		}
	}
	r.rings, r.sqeMem = nil, nil
	if r.fd >= 0 {
		errs = append(errs, unix.Close(r.fd))
		r.fd = -1
	}
	return errors.Join(errs...)
}

// sqe returns the next free SQE, zeroed, or nil when the SQ is full.
func (r *uring) sqe() *uringSQE {
	head := atomic.LoadUint32(r.sqHead)
	if r.sqLocal-head >= uint32(len(r.sqes)) {
		return nil
	}
	i := r.sqLocal & r.sqMask
	e := &r.sqes[i]
	*e = uringSQE{}
	r.sqArray[i] = i
	r.sqLocal++
	r.toSubmit++
	return e
}

// enter publishes the SQEs written so far, submits them and, when wait >
// 0, waits up to timeout for wait completions. A timeout or a signal is
// not an error: the caller looks at the CQ either way.
func (r *uring) enter(wait uint32, timeout time.Duration) error {
	atomic.StoreUint32(r.sqTail, r.sqLocal)
	flags := uintptr(0)
	var argp unsafe.Pointer
	argsz := uintptr(0)
	if wait > 0 {
		flags |= uringEnterGetEvents
		if timeout > 0 {
			r.ts = unix.NsecToTimespec(int64(timeout))
			r.arg = uringGetEventsArg{ts: uint64(uintptr(unsafe.Pointer(&r.ts)))}
			argp, argsz = unsafe.Pointer(&r.arg), uringGetEventsArgSize
			flags |= uringEnterExtArg
		}
	}
	r.enters++
	n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(r.toSubmit), uintptr(wait), flags, uintptr(argp), argsz)
	if errno == 0 {
		r.toSubmit -= uint32(n)
		return nil
	}
	switch errno {
	case unix.ETIME, unix.EINTR:
		return nil
	case unix.EBUSY, unix.EAGAIN:
		// The CQ is full (overflowed): reap, then submit again.
		return nil
	}
	return os.NewSyscallError("io_uring_enter", errno)
}

// cqe returns the next completion without waiting.
func (r *uring) cqe() (uringCQE, bool) {
	head := atomic.LoadUint32(r.cqHead)
	if head == atomic.LoadUint32(r.cqTail) {
		return uringCQE{}, false
	}
	c := r.cqes[head&r.cqMask]
	atomic.StoreUint32(r.cqHead, head+1)
	return c, true
}

// uringSetupError says why io_uring_setup failed, in words.
func uringSetupError(errno unix.Errno) error {
	switch errno {
	case unix.ENOSYS:
		return fmt.Errorf("io_uring_setup: the kernel has no io_uring (older than 5.1 or built without it): %w", engine.ErrNotSupported)
	case unix.EPERM, unix.EACCES:
		why := "a seccomp filter refuses it (Docker's default profile does)"
		if b, err := os.ReadFile("/proc/sys/kernel/io_uring_disabled"); err == nil {
			switch strings.TrimSpace(string(b)) {
			case "2":
				why = "disabled by sysctl kernel.io_uring_disabled=2"
			case "1":
				why = "restricted by sysctl kernel.io_uring_disabled=1 to the group in kernel.io_uring_group"
			}
		}
		if strings.HasPrefix(why, "a seccomp") && !seccompFiltered() {
			why = "the kernel refuses it (" + errno.Error() + ")"
		}
		return fmt.Errorf("io_uring is not allowed here: %s: %w", why, engine.ErrNotSupported)
	case unix.ENOMEM:
		return fmt.Errorf("io_uring_setup: out of locked memory (raise RLIMIT_MEMLOCK): %w", errno)
	}
	return os.NewSyscallError("io_uring_setup", errno)
}

func seccompFiltered() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Seccomp:"); ok {
			return strings.TrimSpace(v) == "2"
		}
	}
	return false
}

// uringOps reports which opcodes the kernel supports (IORING_REGISTER_PROBE).
func (r *uring) ops() (map[uint8]bool, error) {
	buf := make([]byte, uringProbeHeaderSize+uringProbeOps*uringProbeOpSize)
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), uringRegisterProbe, uintptr(unsafe.Pointer(&buf[0])), uringProbeOps, 0, 0)
	if errno != 0 {
		return nil, os.NewSyscallError("io_uring_register probe", errno)
	}
	ops := map[uint8]bool{}
	n := int(buf[1]) // ops_len
	for i := 0; i < n && i < uringProbeOps; i++ {
		o := buf[uringProbeHeaderSize+i*uringProbeOpSize:]
		if o[2]&uringOpSupported != 0 {
			ops[o[0]] = true
		}
	}
	return ops, nil
}

// uintptrOf is the address of p's first byte, for an SQE. p must be memory
// the Go heap does not manage (an mmap'd arena), or be kept alive and
// unmoved until the operation completes.
func uintptrOf(p []byte) uintptr { return uintptr(unsafe.Pointer(&p[0])) }
