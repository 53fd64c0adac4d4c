package uring

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Opcodes (enum io_uring_op) blast uses.
const (
	OpNop            = 0
	OpPollAdd        = 6
	OpAsyncCancel    = 14
	OpSend           = 26
	OpRecv           = 27
	OpProvideBuffers = 31
	OpSendZC         = 47 // Linux 6.0
)

// Features (io_uring_params.features) blast looks at.
const (
	FeatSingleMmap = 1 << 0
	FeatNoDrop     = 1 << 1
	FeatExtArg     = 1 << 8 // Linux 5.11: a timeout on io_uring_enter
)

// SQE flags (io_uring_sqe.flags).
const (
	SqeIOLink       = 1 << 2 // the next SQE starts once this one succeeded
	SqeBufferSelect = 1 << 5 // take the buffer from a provided group
)

// CQE flags (io_uring_cqe.flags).
const (
	CqeFBuffer     = 1 << 0 // the upper 16 bits are the buffer id
	CqeFMore       = 1 << 1 // more CQEs will come for this request
	CqeFNotif      = 1 << 3 // a zero-copy send's buffer notification
	CqeBufferShift = 16
)

// Operation flags that live in io_uring_sqe.ioprio, and what a zero-copy
// notification's res carries.
const (
	RecvMultishot      = 1 << 1 // IORING_RECV_MULTISHOT
	SendZCReportUsage  = 1 << 3 // IORING_SEND_ZC_REPORT_USAGE
	NotifUsageZCCopied = 1 << 31
)

// Cancel flags (io_uring_sqe.cancel_flags).
const (
	AsyncCancelAll = 1 << 0
	AsyncCancelFD  = 1 << 1
)

const (
	offSQRing = 0
	offCQRing = 0x8000000
	offSQEs   = 0x10000000

	setupCQSize = 1 << 3

	enterGetEvents = 1 << 0
	enterExtArg    = 1 << 3

	registerProbe = 8
	opSupported   = 1 << 0

	getEventsArgSize = 24
	paramsSize       = 120
	sqeSize          = 64
	cqeSize          = 16
	probeOps         = 64
	probeHeaderSize  = 16
	probeOpSize      = 8
)

type sqOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqOffsets
	cqOff                                                                  cqOffsets
}

// SQE is struct io_uring_sqe, its unions named for the fields blast uses.
type SQE struct {
	Opcode      uint8
	Flags       uint8
	Ioprio      uint16
	FD          int32
	Off         uint64
	Addr        uint64
	Len         uint32
	OpFlags     uint32 // msg_flags, cancel_flags, ...
	UserData    uint64
	BufGroup    uint16
	Personality uint16
	SpliceFDIn  int32
	Addr3       uint64
	_           uint64
}

// CQE is struct io_uring_cqe.
type CQE struct {
	UserData uint64
	Res      int32
	Flags    uint32
}

type getEventsArg struct {
	sigmask   uint64
	sigmaskSz uint32
	minWait   uint32
	ts        uint64
}

var (
	_ [paramsSize]byte       = [unsafe.Sizeof(params{})]byte{}
	_ [sqeSize]byte          = [unsafe.Sizeof(SQE{})]byte{}
	_ [cqeSize]byte          = [unsafe.Sizeof(CQE{})]byte{}
	_ [getEventsArgSize]byte = [unsafe.Sizeof(getEventsArg{})]byte{}
)

// Ring is one io_uring instance: its descriptor, the mapped queues and the
// SQE array.
type Ring struct {
	fd       int
	features uint32
	maps     [][]byte // the SQ and CQ rings (one or two mappings) and the SQEs

	sqHead, sqTail *uint32
	sqMask         uint32
	sqArray        []uint32
	sqes           []SQE
	sqLocal        uint32 // our tail: SQEs written, not yet published
	toSubmit       uint32

	cqHead, cqTail *uint32
	cqMask         uint32
	cqes           []CQE

	// The wait argument and its timeout live here, on the heap, where the
	// pointer the kernel is given stays valid for the call.
	arg getEventsArg
	ts  unix.Timespec

	enters *atomic.Int64 // counts io_uring_enter calls (nil: not counted)
}

// New sets up a ring of entries SQEs and at least cqEntries CQEs (0: the
// kernel's default of twice entries). Its errors say why io_uring cannot
// run here, wrapping errors.ErrUnsupported, when that is the reason.
func New(entries, cqEntries uint32) (*Ring, error) {
	var p params
	if cqEntries > 0 {
		p.flags |= setupCQSize
		p.cqEntries = cqEntries
	}
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, SetupError(errno)
	}
	r := &Ring{fd: int(fd), features: p.features}
	if err := r.mapRings(&p); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *Ring) mapRings(p *params) error {
	sqSize := int(p.sqOff.array) + int(p.sqEntries)*4
	cqSize := int(p.cqOff.cqes) + int(p.cqEntries)*cqeSize
	single := p.features&FeatSingleMmap != 0
	if single {
		sqSize = max(sqSize, cqSize)
	}
	mmap := func(off int64, size int) ([]byte, error) {
		b, err := unix.Mmap(r.fd, off, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			return nil, os.NewSyscallError("mmap io_uring", err)
		}
		r.maps = append(r.maps, b)
		return b, nil
	}
	sq, err := mmap(offSQRing, sqSize)
	if err != nil {
		return err
	}
	cq := sq
	if !single {
		if cq, err = mmap(offCQRing, cqSize); err != nil {
			return err
		}
	}
	sqeMem, err := mmap(offSQEs, int(p.sqEntries)*sqeSize)
	if err != nil {
		return err
	}
	u32 := func(b []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&b[off])) }
	r.sqHead, r.sqTail = u32(sq, p.sqOff.head), u32(sq, p.sqOff.tail)
	r.sqMask = *u32(sq, p.sqOff.ringMask)
	r.sqArray = unsafe.Slice(u32(sq, p.sqOff.array), p.sqEntries)
	r.sqes = unsafe.Slice((*SQE)(unsafe.Pointer(&sqeMem[0])), p.sqEntries)
	r.cqHead, r.cqTail = u32(cq, p.cqOff.head), u32(cq, p.cqOff.tail)
	r.cqMask = *u32(cq, p.cqOff.ringMask)
	r.cqes = unsafe.Slice((*CQE)(unsafe.Pointer(&cq[p.cqOff.cqes])), p.cqEntries)
	r.sqLocal = atomic.LoadUint32(r.sqTail)
	return nil
}

// Close unmaps the queues and closes the ring; the kernel cancels what is
// still in flight. It is safe to call twice.
func (r *Ring) Close() error {
	var errs []error
	for _, m := range r.maps {
		if err := unix.Munmap(m); err != nil {
			errs = append(errs, os.NewSyscallError("munmap io_uring", err))
		}
	}
	r.maps = nil
	r.sqes, r.cqes, r.sqArray = nil, nil, nil
	r.sqHead, r.sqTail, r.cqHead, r.cqTail = nil, nil, nil, nil
	if r.fd >= 0 {
		if err := unix.Close(r.fd); err != nil {
			errs = append(errs, os.NewSyscallError("close io_uring", err))
		}
		r.fd = -1
	}
	return errors.Join(errs...)
}

// FD is the ring's descriptor.
func (r *Ring) FD() int { return r.fd }

// Features are the features the kernel reported at setup (Feat*).
func (r *Ring) Features() uint32 { return r.features }

// CountEnters makes every later io_uring_enter call add 1 to c.
func (r *Ring) CountEnters(c *atomic.Int64) { r.enters = c }

// SQE returns the next free SQE, zeroed, or nil when the submission queue
// is full (Submit, then ask again). It is queued with the next Submit or
// Wait.
func (r *Ring) SQE() *SQE {
	head := atomic.LoadUint32(r.sqHead)
	if r.sqLocal-head >= uint32(len(r.sqes)) {
		return nil
	}
	i := r.sqLocal & r.sqMask
	e := &r.sqes[i]
	*e = SQE{}
	r.sqArray[i] = i
	r.sqLocal++
	r.toSubmit++
	return e
}

// Pending is the number of SQEs written and not yet taken by the kernel.
func (r *Ring) Pending() int { return int(r.toSubmit) }

// ErrTimedOut is what Wait returns when no completion came in time.
var ErrTimedOut = errors.New("io_uring: no completion within the timeout")

// Submit hands the SQEs written so far to the kernel without waiting (no
// system call when there are none).
func (r *Ring) Submit() error {
	if r.toSubmit == 0 {
		return nil
	}
	_, err := r.enter(0, nil)
	return err
}

// Wait submits the SQEs written so far and blocks in io_uring_enter until
// at least one completion is in the queue, or timeout has passed
// (ErrTimedOut; timeout < 0 waits without bound). A signal may end the
// wait early with nothing to reap and no error: the caller reaps what
// there is and waits again.
func (r *Ring) Wait(timeout time.Duration) error {
	if r.Ready() {
		return r.Submit()
	}
	if timeout < 0 {
		_, err := r.enter(1, nil)
		return err
	}
	deadline := time.Now().Add(timeout)
	r.ts = unix.NsecToTimespec(int64(timeout))
	r.arg = getEventsArg{ts: uint64(uintptr(unsafe.Pointer(&r.ts)))}
	errno, err := r.enter(1, &r.arg)
	if err != nil {
		return err
	}
	// With SQEs submitted, the kernel returns their number and hides the
	// wait's ETIME: nothing to reap once the time is up says it as well.
	if errno == unix.ETIME || (!r.Ready() && !time.Now().Before(deadline)) {
		return ErrTimedOut
	}
	return nil
}

// enter calls io_uring_enter with what is queued, waiting for wait
// completions (0 or 1) with arg's timeout when arg is not nil. It returns
// the errnos that are not errors (a timeout, a signal, a full CQ the
// caller must reap first) apart from the others.
func (r *Ring) enter(wait uint32, arg *getEventsArg) (unix.Errno, error) {
	atomic.StoreUint32(r.sqTail, r.sqLocal)
	flags := uintptr(0)
	if wait > 0 {
		flags |= enterGetEvents
	}
	argsz := uintptr(0)
	if arg != nil {
		flags |= enterExtArg
		argsz = getEventsArgSize
	}
	if r.enters != nil {
		r.enters.Add(1)
	}
	n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(r.toSubmit), uintptr(wait), flags, uintptr(unsafe.Pointer(arg)), argsz)
	switch errno {
	case 0:
		r.toSubmit -= uint32(n)
		return 0, nil
	case unix.ETIME, unix.EINTR, unix.EBUSY, unix.EAGAIN:
		// ETIME: the wait's timeout; EINTR: a signal; EBUSY and EAGAIN:
		// the CQ is full or the kernel short of memory, reap and retry.
		return errno, nil
	}
	return errno, os.NewSyscallError("io_uring_enter", errno)
}

// Ready reports whether a completion is waiting in the queue.
func (r *Ring) Ready() bool {
	return atomic.LoadUint32(r.cqHead) != atomic.LoadUint32(r.cqTail)
}

// CQE takes the next completion off the queue without waiting.
func (r *Ring) CQE() (CQE, bool) {
	head := atomic.LoadUint32(r.cqHead)
	if head == atomic.LoadUint32(r.cqTail) {
		return CQE{}, false
	}
	c := r.cqes[head&r.cqMask]
	atomic.StoreUint32(r.cqHead, head+1)
	return c, true
}

// Supported reports which opcodes the kernel has (IORING_REGISTER_PROBE).
func (r *Ring) Supported() (map[uint8]bool, error) {
	buf := make([]byte, probeHeaderSize+probeOps*probeOpSize)
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), registerProbe, uintptr(unsafe.Pointer(&buf[0])), probeOps, 0, 0)
	if errno != 0 {
		return nil, os.NewSyscallError("io_uring_register probe", errno)
	}
	ops := map[uint8]bool{}
	n := int(buf[1]) // ops_len
	for i := 0; i < n && i < probeOps; i++ {
		o := buf[probeHeaderSize+i*probeOpSize:]
		if o[2]&opSupported != 0 { // the low byte of the u16 flags
			ops[o[0]] = true
		}
	}
	return ops, nil
}

// SetupError says why io_uring_setup failed, in words; refusals wrap
// errors.ErrUnsupported.
func SetupError(errno unix.Errno) error {
	switch errno {
	case unix.ENOSYS:
		return fmt.Errorf("io_uring_setup: the kernel has no io_uring (older than 5.1 or built without it): %w", errors.ErrUnsupported)
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
		return fmt.Errorf("io_uring is not allowed here: %s: %w", why, errors.ErrUnsupported)
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

// addr is the address of p's first byte, for an SQE. p must be memory the
// Go heap does not manage (an mmap'd arena), or be kept alive and unmoved
// until the operation completes.
func addr(p []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(p)))) }

// PrepNop makes e a no-op.
func (e *SQE) PrepNop(userData uint64) {
	e.Opcode = OpNop
	e.UserData = userData
}

// PrepPollAdd makes e a one-shot poll of fd for events (POLLIN, ...;
// POLLERR and POLLHUP are always reported): it completes with the events
// that were raised.
func (e *SQE) PrepPollAdd(fd int, events uint32, userData uint64) {
	e.Opcode = OpPollAdd
	e.FD = int32(fd)
	if bigEndian {
		events = events<<16 | events>>16 // the kernel reads poll32_events halfword-swapped there
	}
	e.OpFlags = events
	e.UserData = userData
}

var bigEndian = binary.NativeEndian.Uint16([]byte{0, 1}) == 1

// PrepSend makes e a send of p on fd with msg flags (IORING_OP_SEND), or
// a zero-copy send (IORING_OP_SEND_ZC, which reports in its notification
// whether the kernel copied after all) when zc.
func (e *SQE) PrepSend(fd int, p []byte, msgFlags uint32, zc bool, userData uint64) {
	e.Opcode = OpSend
	if zc {
		e.Opcode = OpSendZC
		e.Ioprio = SendZCReportUsage
	}
	e.FD = int32(fd)
	e.Addr = addr(p)
	e.Len = uint32(len(p))
	e.OpFlags = msgFlags
	e.UserData = userData
}

// PrepRecv makes e a receive into p on fd (IORING_OP_RECV).
func (e *SQE) PrepRecv(fd int, p []byte, userData uint64) {
	e.Opcode = OpRecv
	e.FD = int32(fd)
	e.Addr = addr(p)
	e.Len = uint32(len(p))
	e.UserData = userData
}

// PrepRecvMultishot makes e a multishot receive on fd into the buffers of
// group: one CQE per receive, each naming its buffer, until the group runs
// dry or the socket ends (a CQE without CqeFMore).
func (e *SQE) PrepRecvMultishot(fd int, group uint16, userData uint64) {
	e.Opcode = OpRecv
	e.Ioprio = RecvMultishot
	e.Flags = SqeBufferSelect
	e.FD = int32(fd)
	e.BufGroup = group
	e.UserData = userData
}

// PrepProvideBuffers makes e hand the kernel n buffers of size bytes,
// laid out one after another from mem's start, as ids firstID.. of group.
func (e *SQE) PrepProvideBuffers(mem []byte, n, size int, firstID int, group uint16, userData uint64) {
	e.Opcode = OpProvideBuffers
	e.FD = int32(n)
	e.Addr = addr(mem)
	e.Len = uint32(size)
	e.Off = uint64(firstID)
	e.BufGroup = group
	e.UserData = userData
}

// PrepCancelFD makes e cancel every request on fd (Linux 5.19).
func (e *SQE) PrepCancelFD(fd int, userData uint64) {
	e.Opcode = OpAsyncCancel
	e.FD = int32(fd)
	e.OpFlags = AsyncCancelAll | AsyncCancelFD
	e.UserData = userData
}
