package engine

import (
	"context"
	"os"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// How a flow's thread runs (engine v3; ARCHITECTURE.md "The data path").
//
// A flow of a Free backend without Spec.Affinity and without pacing, asked
// to (Spec.Free, or BLAST_THREADS=free), runs free: an unlocked goroutine that makes its blocking data calls through
// the raw system-call entry (unix.RawSyscall6), on a socket whose blocking
// Run bounds with SO_SNDTIMEO and SO_RCVTIMEO (freeBound). The runtime
// does not see those calls: the goroutine keeps its P while the kernel
// blocks it, so sysmon never hands the P off, never starts another thread
// for it, and never goes back to 20 µs wakeups for it (a locked thread
// in ordinary blocking calls had its P retaken every 10 ms: 3.5× the
// context switches of iperf3 at -P 4). The goroutine yields
// (runtime.Gosched) every yieldEvery, so sysmon never needs to preempt
// it, and Run raises GOMAXPROCS to the free flows plus one, so every flow
// has a P and the control plane a spare one.
//
// What the bound buys: a raw call the collector must stop is interrupted
// by the runtime's preemption signal, and a socket call with a timeout
// fails with EINTR instead of restarting, so a stop-the-world waits for a
// signal, not for the data (without a timeout the kernel restarts the
// call and the world waits for the peer). The bound also caps how long a
// free flow sits on its P without yielding. What it cannot buy: the world
// still waits for each free flow's thread to get a CPU to see the
// signal, where a thread in an ordinary call gives its P up and is not
// waited for. On a host with more flows than CPUs that made the pauses
// 2-4× longer (-P 8, 2 CPUs: p99 8-15 ms against 2-6 ms locked), for 3-4×
// fewer context switches and no throughput measured either way; so free
// is asked for, not the default.
//
// Every other flow runs on a locked thread in ordinary blocking calls, as
// in engine v2: affinity (-A) needs a thread to pin, a paced sender its
// thread's timer slack, AF_XDP and io_uring their own waits.
const (
	freeBound  = 2 * time.Millisecond
	yieldEvery = 2 * time.Millisecond
)

func (fr *free) now() time.Duration { return time.Since(fr.base) }

// runsFree says whether Run runs f free.
func runsFree(b Backend, f *Flow, send bool) bool {
	fb, ok := b.(Free)
	if !ok || !fb.RunsFree(send) || f.Sock == nil || len(f.Spec.Affinity) > 0 {
		return false
	}
	if send && f.Spec.Rate > 0 {
		return false
	}
	switch os.Getenv("BLAST_THREADS") {
	case "locked":
		return false
	case "free":
		return true
	}
	return f.Spec.Free
}

// startFree bounds the socket's blocking and records what the flow's
// calls must still honour: the mode's own timeouts, and the send slice a
// locked time-limited sender gets.
func (f *Flow) startFree(send bool) error {
	fr := &f.free
	fd := f.Sock.FD()
	snd, err := unix.GetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO)
	if err != nil {
		return IOErr("getsockopt SO_SNDTIMEO", err)
	}
	rcv, err := unix.GetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO)
	if err != nil {
		return IOErr("getsockopt SO_RCVTIMEO", err)
	}
	fr.prevSnd, fr.prevRcv = time.Duration(snd.Nano()), time.Duration(rcv.Nano())
	fr.sndLimit, fr.rcvLimit = fr.prevSnd, fr.prevRcv
	if send && f.Spec.Duration > 0 {
		fr.sndLimit = sendSlice
	}
	if err := f.Sock.SetTimeout(freeBound); err != nil {
		return err
	}
	fr.restoreFD = fd
	fr.on = true
	fr.base = time.Now()
	fr.yieldAt = yieldEvery
	return nil
}

// endFree gives the socket its timeouts back.
func (f *Flow) endFree() {
	fr := &f.free
	if fr.restoreFD <= 0 {
		return
	}
	fr.on = false
	f.Sock.Control(func(fd int) error {
		snd, rcv := unix.NsecToTimeval(int64(fr.prevSnd)), unix.NsecToTimeval(int64(fr.prevRcv))
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &snd)
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &rcv)
		return nil
	})
	fr.restoreFD = 0
}

// segStart begins an accounting segment on the calling thread.
func (f *Flow) segStart() {
	fr := &f.free
	fr.segTid = unix.Gettid()
	fr.segCPU, fr.segVol, fr.segInvol = threadUsage()
	fr.segWait = ThreadRunWait()
}

// segEnd adds the segment's CPU, run-queue wait and switches to the flow,
// when the goroutine stayed on one thread (a goroutine the runtime moved
// mid-segment, which yielding every yieldEvery makes rare, has deltas of
// two threads: dropped; f.free.migrated counts them).
func (f *Flow) segEnd() {
	fr := &f.free
	if unix.Gettid() != fr.segTid {
		fr.migrated++
		return
	}
	cpu, vol, invol := threadUsage()
	f.CPU = f.CPU.Add(cpu.Sub(fr.segCPU))
	f.RunWait += max(ThreadRunWait()-fr.segWait, 0)
	f.Switches.Voluntary += vol - fr.segVol
	f.Switches.Involuntary += invol - fr.segInvol
}

// yield lets the scheduler run something else on the flow's P, closing
// and opening an accounting segment around it.
func (f *Flow) yield() {
	fr := &f.free
	f.segEnd()
	runtime.Gosched()
	fr.yields++
	f.segStart()
	fr.yieldAt = fr.now() + yieldEvery
}

// sysArgs are one blocking data call: its pointers stay pointers until
// the call expression itself converts them (the only place the compiler
// keeps them valid), so a buffer on a goroutine's stack cannot move under
// the kernel.
type sysArgs struct {
	trap  uintptr
	fd    int
	buf   unsafe.Pointer
	n     int
	flags int
	in    int    // sendfile: the file
	off   *int64 // sendfile: the file offset, nil for the file's position
}

func (a *sysArgs) do(raw bool) (uintptr, unix.Errno) {
	var r uintptr
	var e unix.Errno
	switch {
	case a.trap == unix.SYS_SENDFILE && raw:
		r, _, e = unix.RawSyscall6(a.trap, uintptr(a.fd), uintptr(a.in), uintptr(unsafe.Pointer(a.off)), uintptr(a.n), 0, 0)
	case a.trap == unix.SYS_SENDFILE:
		r, _, e = unix.Syscall6(a.trap, uintptr(a.fd), uintptr(a.in), uintptr(unsafe.Pointer(a.off)), uintptr(a.n), 0, 0)
	case raw:
		r, _, e = unix.RawSyscall6(a.trap, uintptr(a.fd), uintptr(a.buf), uintptr(a.n), uintptr(a.flags), 0, 0)
	default:
		r, _, e = unix.Syscall6(a.trap, uintptr(a.fd), uintptr(a.buf), uintptr(a.n), uintptr(a.flags), 0, 0)
	}
	return r, e
}

// call makes a blocking data call of the flow. On a free flow it goes
// through the raw entry and blocks at most freeBound at a time: a bound
// that runs out is retried until limit, the timeout the call would have
// had on a locked thread (the mode's SetTimeout, or the send slice of a
// time-limited sender), which then fails it with EAGAIN as before. EINTR
// is retried. On a locked flow it is the ordinary blocking call.
func (f *Flow) call(limit time.Duration, a *sysArgs) (int, error) {
	fr := &f.free
	if !fr.on {
		for {
			r, e := a.do(false)
			if e == unix.EINTR {
				continue
			}
			if e != 0 {
				return 0, e
			}
			return int(r), nil
		}
	}
	start := fr.now()
	if start >= fr.yieldAt {
		f.yield()
	}
	for {
		r, e := a.do(true)
		switch e {
		case 0:
			return int(r), nil
		case unix.EINTR:
			// The runtime's preemption signal (the collector stopping
			// the world, or sysmon): let it have the goroutine.
			f.yield()
		case unix.EAGAIN:
			// The bound ran out (a jiffy at least: 4 ms at HZ=250).
			now := fr.now()
			if limit > 0 && now-start >= limit || f.Cancelled() {
				return 0, e
			}
			if now >= fr.yieldAt {
				f.yield()
			}
		default:
			return 0, e
		}
	}
}

// Read is read(2) on fd, a blocking receive of the flow (see call).
func (f *Flow) Read(fd int, p []byte) (int, error) {
	return f.call(f.free.rcvLimit, &sysArgs{trap: unix.SYS_READ, fd: fd, buf: bufPtr(p), n: len(p)})
}

// Send is send(2) on fd (sendto without an address), a blocking send of
// the flow.
func (f *Flow) Send(fd int, p []byte, flags int) (int, error) {
	return f.call(f.free.sndLimit, &sysArgs{trap: unix.SYS_SENDTO, fd: fd, buf: bufPtr(p), n: len(p), flags: flags})
}

// Recv is recv(2) on fd (recvfrom without an address), a blocking
// receive of the flow.
func (f *Flow) Recv(fd int, p []byte, flags int) (int, error) {
	return f.call(f.free.rcvLimit, &sysArgs{trap: unix.SYS_RECVFROM, fd: fd, buf: bufPtr(p), n: len(p), flags: flags})
}

// Discard is recv(2) on fd into no buffer at all, n bytes (recv(fd,
// NULL, n, flags): with MSG_TRUNC the kernel drops them), a blocking
// receive of the flow.
func (f *Flow) Discard(fd int, n int, flags int) (int, error) {
	return f.call(f.free.rcvLimit, &sysArgs{trap: unix.SYS_RECVFROM, fd: fd, n: n, flags: flags})
}

// Sendmmsg is sendmmsg(2) of msgs on fd, a blocking send of the flow; it
// returns how many messages the kernel took.
func (f *Flow) Sendmmsg(fd int, msgs []unix.Mmsghdr, flags int) (int, error) {
	return f.call(f.free.sndLimit, &sysArgs{trap: unix.SYS_SENDMMSG, fd: fd, buf: unsafe.Pointer(unsafe.SliceData(msgs)), n: len(msgs), flags: flags})
}

// Recvmmsg is recvmmsg(2) into msgs on fd, without a timeout of its own
// (the socket's bounds the wait): a blocking receive of the flow.
func (f *Flow) Recvmmsg(fd int, msgs []unix.Mmsghdr, flags int) (int, error) {
	return f.call(f.free.rcvLimit, &sysArgs{trap: unix.SYS_RECVMMSG, fd: fd, buf: unsafe.Pointer(unsafe.SliceData(msgs)), n: len(msgs), flags: flags})
}

// Sendfile is sendfile(2) of n bytes from in to the socket fd, from *off
// (advanced) or, off nil, from in's position: a blocking send of the flow.
func (f *Flow) Sendfile(fd, in int, off *int64, n int) (int, error) {
	return f.call(f.free.sndLimit, &sysArgs{trap: unix.SYS_SENDFILE, fd: fd, in: in, off: off, n: n})
}

var zeroByte byte

func bufPtr(p []byte) unsafe.Pointer {
	if len(p) == 0 {
		return unsafe.Pointer(&zeroByte)
	}
	return unsafe.Pointer(&p[0])
}

// threadUsage is the calling thread's CPU time and context switches
// (voluntary, involuntary) so far.
func threadUsage() (CPUTimes, int64, int64) {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
		return CPUTimes{}, 0, 0
	}
	tv := func(t unix.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return CPUTimes{User: tv(ru.Utime), System: tv(ru.Stime)}, ru.Nvcsw, ru.Nivcsw
}

// procs keeps GOMAXPROCS at the free flows plus one (a P for every free
// flow, whose raw calls hold theirs while they block, and one for the
// control plane), never below what it was before the first free flow,
// and puts it back when the last one ends.
var procs struct {
	mu   sync.Mutex
	free int
	base int
}

func holdP() {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	if procs.free == 0 {
		procs.base = runtime.GOMAXPROCS(0)
	}
	procs.free++
	if want := procs.free + 1; want > runtime.GOMAXPROCS(0) {
		runtime.GOMAXPROCS(want)
	}
}

func releaseP() {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	procs.free--
	if procs.free == 0 && runtime.GOMAXPROCS(0) != procs.base {
		runtime.GOMAXPROCS(procs.base)
	}
}

// runFree runs the backend on the calling (unlocked) goroutine, in
// accounting segments between yields.
func (f *Flow) runFree(ctx context.Context, b Backend, send bool) error {
	start := time.Now()
	f.segStart()
	var err error
	if send {
		err = b.Send(ctx, f)
	} else {
		err = b.Recv(ctx, f)
	}
	f.segEnd()
	f.Wall += time.Since(start)
	return err
}
