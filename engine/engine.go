// Package engine is the data-path contract of blast (contract v3).
//
// The engine owns data sockets: a mode asks it for a stream with Dial,
// Listen and Accept (TCP or UDP, v4 or v6, with the socket options it
// wants) and gets a *Socket the engine made with x/sys/unix. Control
// connections stay on package net; only the iperf3 server, whose control
// and data share one port, hands an accepted data connection over with
// Adopt.
//
// A Backend moves the bytes of one Flow (a Socket, the Spec, the Counters
// and the Facts). Modes never call Send or Recv themselves: Run calls
// them, one goroutine per stream, locked to an OS thread of its own, in
// ordinary blocking calls, as iperf3 3.16+ runs a thread per stream. A
// Free backend's unpaced, unpinned flow asked to (Spec.Free, or
// BLAST_THREADS=free) runs free instead: an unlocked goroutine whose
// blocking data calls (through the Flow: Read, Recv, Send, Sendfile,
// Sendmmsg, Recvmmsg, Discard, and WriteAll) take the raw system-call
// entry on a socket whose blocking Run bounds, so the runtime neither
// hands its P off nor starts threads for it; it yields every 2 ms, and
// GOMAXPROCS is kept at the free flows plus one. The data path never
// touches the Go runtime's network poller: data sockets are in blocking
// mode. ARCHITECTURE.md "The data path" has the measurements, and why
// locked threads stay the default.
//
// # Waiting
//
//   - socket backends block in the system call itself: one call per
//     operation, the kernel wakes the thread directly, nothing else is
//     woken (a free flow's call returns at least every bound and goes
//     back to waiting);
//   - io_uring blocks in io_uring_enter waiting for completions;
//   - AF_XDP has no blocking call: it waits in ppoll on its XSK sockets
//     (Flow.Wait), which also polls the flow's eventfd.
//
// Cancellation is prompt for all of them: when the context is done Run
// shuts the socket down (which wakes a blocked read, write, accept or
// io_uring operation) and writes the flow's eventfd (which wakes Flow.Wait
// and the pacer). A time limit (Spec.Duration) is kept by the Sender
// iterator; a write blocked past it returns within the send timeout slice
// Run sets on the socket.
//
// # Sending
//
// Every sender takes its buffers from one iterator, Sender: it applies the
// byte limit, the time limit, the Source, pacing (Spec.Rate, in bursts of
// Spec.Burst buffers), the datagram headers of Spec.Framing and the ENOBUFS
// policy the same way for every backend, so backends only move buffers.
// A backend asks for a filled buffer (Sender.Next) or only for a byte count
// it sends from memory or a file of its own (Sender.Take); when the Sender
// writes the bytes itself (Sender.Fills: a Source, or a Framing that stamps
// every datagram), it must ask with Next, with a buffer for each datagram
// in flight.
//
// # Receiving
//
// Receivers hand what they received to Deliver or Consume (ConsumeTrain
// for a GRO train of datagrams), which touch the bytes, write them to the
// Sink and give each datagram, one at a time, to Spec.Framing.
package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/blastnet/blast/internal/clock"
)

// ErrNotSupported is wrapped by every error that means "this feature is not
// available here" (a backend on this kernel, an option on this OS). It also
// matches errors.ErrUnsupported, which nicinfo and bpf use.
var ErrNotSupported error = notSupported{}

type notSupported struct{}

func (notSupported) Error() string        { return "not supported" }
func (notSupported) Is(target error) bool { return target == errors.ErrUnsupported }

// AsNotSupported makes an error of a package below engine that means "not
// here" by wrapping errors.ErrUnsupported (uring's refused ring, bpf's
// missing privilege) wrap ErrNotSupported as well, which is what modes test
// for (a receive falls back to readwrite on it); its words stay the same.
// Other errors, and nil, it returns as they are.
func AsNotSupported(err error) error {
	if !errors.Is(err, errors.ErrUnsupported) || errors.Is(err, ErrNotSupported) {
		return err
	}
	return alsoNotSupported{err}
}

// alsoNotSupported is an error that also wraps ErrNotSupported, with the
// words of the error it carries.
type alsoNotSupported struct{ error }

func (e alsoNotSupported) Unwrap() []error { return []error{e.error, ErrNotSupported} }

// Protocol is the transport of a flow.
type Protocol int

// The transports blast moves bytes over.
const (
	TCP Protocol = iota
	UDP
)

func (p Protocol) String() string {
	if p == UDP {
		return "udp"
	}
	return "tcp"
}

// Spec says what one stream does. The zero value of each optional field
// means "not set".
type Spec struct {
	Protocol Protocol
	// BufLen is the number of bytes per write, and the size of the read
	// buffer on the receiving side.
	BufLen int
	// Bytes ends a send after this many bytes (0: no byte limit), and a
	// TCP receive once this many arrived.
	Bytes int64
	// Duration ends a send after this long (0: no time limit).
	Duration time.Duration
	// Rate paces the sender to this many bits per second (0: as fast as
	// possible).
	Rate float64
	// Burst lets this many buffers leave back to back before the pacer
	// waits, with the same average Rate (iperf3's -b RATE/BURST); 0 and 1
	// pace every buffer on its own.
	Burst int
	// Touch makes the receiver read every byte it receives (ttcp -T).
	Touch bool
	// Source feeds the sender; nil means a generated pattern (sink/source
	// mode). A sender with a Source stops at its EOF.
	Source io.Reader
	// Sink takes every received byte in order; nil discards them.
	Sink io.Writer
	// BufAlign and BufOffset place the I/O buffer at BufOffset bytes past
	// a multiple of BufAlign (ttcp -A and -O); 0 leaves it where Go puts it.
	BufAlign  int
	BufOffset int
	// SentinelMax ends a UDP receive at the first datagram of at most this
	// many bytes, which is not counted (ttcp's end-of-data sentinel).
	SentinelMax int
	// Framing, on a UDP flow, writes a header into every datagram sent
	// and reads it from every datagram received (iperf3's timestamp and
	// sequence number). nil: datagrams carry the pattern only.
	Framing Framing
	// Affinity pins the flow's thread to these CPUs (sched_setaffinity,
	// iperf3's -A); nil leaves it where the scheduler puts it. Run pins
	// the thread it locks for the flow before Send or Recv starts, and
	// that thread ends with the flow, so the pin never outlives it.
	// Threads a backend starts of its own are not pinned.
	Affinity []int
	// Free asks Run to run the flow free (see Free) when its backend
	// can, it is unpaced and has no Affinity: an unlocked goroutine in
	// raw calls. The default is a locked thread of its own;
	// BLAST_THREADS=free in the environment asks it for every flow, and
	// BLAST_THREADS=locked refuses it to every flow.
	Free bool
}

// MaxCPU bounds the CPU numbers of Spec.Affinity (the kernel's default
// cpu_set_t holds 1024).
const MaxCPU = 1023

// Framing stamps and reads the header of each datagram of a UDP flow.
//
// Stamp is called by the Sender (Next) with each datagram it hands out,
// in send order, after pacing and just before the backend sends it, and
// the time on Mono's clock; it overwrites the start of p, and the rest of
// p keeps the pattern. The last datagram of a byte limit may be shorter
// than a header.
//
// Receive is called with each datagram received, in arrival order, one
// datagram per call also when the kernel delivered a GRO train, and the
// arrival time on Mono's clock (read once for a whole train: its
// datagrams arrived together, and a clock read costs as much as the rest
// of Receive). p is the
// whole datagram, except from a receiver that discards data in the kernel
// without copying it (trunc): that one hands over only the first
// HeaderPeek bytes, so a Framing reads its header from p and takes byte
// counts from the flow's Counters.
//
// Calls never overlap: they run on the flow's thread, or, in a backend
// with receive threads of its own (afxdp), one at a time under its lock;
// so Stamp and Receive need no locking against themselves. What they count
// must be safe to read from other goroutines (the interval reporter).
type Framing interface {
	Stamp(p []byte, at time.Duration)
	Receive(p []byte, at time.Duration)
}

// monoStart is the origin of Mono's clock.
var monoStart = time.Now()

// Mono reads the monotonic clock, as the time since the process started
// using the engine: datagram stamps and arrival times are on it.
func Mono() time.Duration { return time.Since(monoStart) }

// HeaderPeek is how many bytes of each datagram a receiver that does not
// copy the data (trunc) still reads for Framing.Receive: a Framing's header
// must lie within them.
const HeaderPeek = 64

// MaxBufLen bounds Spec.BufLen: one buffer of at most 1 GiB, so that a
// mistyped length fails with words instead of running out of memory.
const MaxBufLen = 1 << 30

// Validate reports the first problem with s, in words a user can act on.
func (s *Spec) Validate() error {
	switch {
	case s.BufLen <= 0:
		return fmt.Errorf("buffer length %d: must be at least 1", s.BufLen)
	case s.BufLen > MaxBufLen:
		return fmt.Errorf("buffer length %d: must be at most %d (1 GiB)", s.BufLen, MaxBufLen)
	case s.Protocol == UDP && s.BufLen > 65507:
		return fmt.Errorf("buffer length %d: a UDP datagram carries at most 65507 bytes", s.BufLen)
	case s.Bytes < 0:
		return fmt.Errorf("byte count %d: must not be negative", s.Bytes)
	case s.Duration < 0:
		return fmt.Errorf("duration %v: must not be negative", s.Duration)
	case s.BufAlign < 0 || s.BufOffset < 0:
		return fmt.Errorf("buffer alignment %d/%d: must not be negative", s.BufAlign, s.BufOffset)
	case s.Rate < 0:
		return fmt.Errorf("rate %g: must not be negative", s.Rate)
	case s.Burst < 0:
		return fmt.Errorf("burst %d: must not be negative", s.Burst)
	case s.Framing != nil && s.Protocol != UDP:
		return fmt.Errorf("datagram framing on a %v flow: framing is for UDP", s.Protocol)
	case s.Framing != nil && s.Source != nil:
		return fmt.Errorf("datagram framing with a Source: the header would overwrite the source's bytes")
	}
	for _, c := range s.Affinity {
		if c < 0 || c > MaxCPU {
			return fmt.Errorf("CPU %d: must be 0 to %d", c, MaxCPU)
		}
	}
	return nil
}

// Flow is one stream handed to a backend: the engine-owned socket, the
// Spec, the counters and the facts the backend keeps up to date. The mode
// that made the Socket owns it and closes it after Run returns; a backend
// never closes it.
type Flow struct {
	Sock  *Socket
	Spec  *Spec
	Stats *Counters
	// Facts are what the backend reports beyond the Counters.
	Facts Facts
	// CPU is what the flow's own thread spent, measured by Run (threads
	// of a backend's own are counted in Facts as FactOwnThreads, and
	// their time is not here).
	CPU CPUTimes
	// Wall is how long the flow's thread ran the backend, and RunWait how
	// much of that it was runnable but waited for a CPU (the scheduler's
	// run delay: other threads on its CPUs, or a CPU quota that held it
	// back), both measured by Run. CPU over Wall is the share of a core
	// the flow used; RunWait over Wall the share it was starved.
	Wall, RunWait time.Duration
	// Switches are the flow's context switches, measured by Run on the
	// thread(s) that ran it (getrusage RUSAGE_THREAD): voluntary ones are
	// waits in the kernel, involuntary ones the scheduler taking the CPU.
	Switches Switches
	// Free says the flow ran free (an unlocked goroutine in raw calls,
	// see Free) rather than on a locked thread; set by Run.
	Free bool
	// Clock is where the flow's Sender reads the time and sleeps: the time
	// limit, the pacing schedule, the ENOBUFS pause. nil is the real clock
	// (time.Now, and sleeps in the kernel that a cancel interrupts); tests
	// pass a *clock.Fake to assert a schedule exactly. Datagram stamps
	// (Mono) and the backends' own waits stay on the real clock.
	Clock clock.Clock

	wake waker // set by Run: the flow's eventfd
	free free  // set by Run: how the flow's calls run
}

// Switches counts context switches.
type Switches struct {
	Voluntary   int64 `json:"voluntary"`
	Involuntary int64 `json:"involuntary"`
}

// Backend moves the bytes of one flow.
//
// Probe answers three ways: nil when the backend can run here, an error
// wrapping ErrNotSupported when it cannot (saying why and what to do), any
// other error when the probe itself failed.
//
// Send and Recv run on the flow's goroutine (Run calls them; see Free). They
// return when the Spec's end condition is met, the peer closes, or the
// flow is cancelled (then promptly; Run reports the context's error). They
// update f.Stats and f.Facts as they go and never close f.Sock.
type Backend interface {
	Name() string
	Probe() error
	Send(ctx context.Context, f *Flow) error
	Recv(ctx context.Context, f *Flow) error
}

// Checker is a Backend that cannot run every Spec: Check says, before any
// socket is made, why it cannot move spec in that direction (an error
// wrapping ErrNotSupported), or nil. Send and Recv refuse the same specs
// all the same.
type Checker interface {
	Backend
	Check(spec *Spec, send bool) error
}

// Check asks b whether it can run spec in that direction: nil for a
// backend that is no Checker.
func Check(b Backend, spec *Spec, send bool) error {
	if c, ok := b.(Checker); ok {
		return c.Check(spec, send)
	}
	return nil
}

// Preparer is a Backend whose receive must be set up before the
// transmitter starts, so that nothing the transmitter sends slips past it
// (afxdp: its XDP program steers datagrams away from the socket only once
// it is attached, which takes milliseconds a fast sender fills).
//
// A mode calls Prepare once the flow's socket is bound and before it waits
// for the transmitter, then Run as usual, and release after Run returns
// (also when it failed or never ran); release is safe to call twice.
type Preparer interface {
	Backend
	Prepare(ctx context.Context, f *Flow) (release func() error, err error)
}

// Prepare calls b's Prepare when b is a Preparer. The release it returns
// is never nil: for other backends it does nothing.
func Prepare(ctx context.Context, b Backend, f *Flow) (release func() error, err error) {
	p, ok := b.(Preparer)
	if !ok {
		return func() error { return nil }, nil
	}
	release, err = p.Prepare(ctx, f)
	if err != nil {
		return nil, err
	}
	if release == nil {
		release = func() error { return nil }
	}
	return release, nil
}

// Footprinter is a Backend whose flows hold more user memory than the one
// Spec.BufLen buffer a plain backend allocates (batches, rings, UMEM):
// Footprint says how many bytes a flow of spec holds in that direction,
// at most. A server sums it over a test's streams before it admits the
// test, so a peer cannot ask it for gigabytes.
type Footprinter interface {
	Backend
	Footprint(spec *Spec, send bool) int64
}

// Footprint is the user memory a flow of spec holds on b: what b says as
// a Footprinter, else one buffer of BufLen.
func Footprint(b Backend, spec *Spec, send bool) int64 {
	if f, ok := b.(Footprinter); ok {
		return f.Footprint(spec, send)
	}
	return int64(max(spec.BufLen, 0))
}

// Unsupported is a backend that cannot run on this system: its probe, Send
// and Recv all return why, wrapping ErrNotSupported. Platforms register it
// under the names of the backends they lack, so every name exists in every
// build and says why it cannot run.
func Unsupported(name, why string) Backend { return unsupported{name, why} }

type unsupported struct{ name, why string }

func (u unsupported) Name() string                      { return u.name }
func (u unsupported) Probe() error                      { return fmt.Errorf("%s: %w", u.why, ErrNotSupported) }
func (u unsupported) Send(context.Context, *Flow) error { return u.Probe() }
func (u unsupported) Recv(context.Context, *Flow) error { return u.Probe() }
