package control

import (
	"errors"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/engine/sockets"
)

// The data streams of the default backend (read/write) are not run one
// goroutine each: a session's streams share a few I/O loops, each loop
// one goroutine that writes or reads one block per stream in turn and,
// when every socket it holds is full (or empty), waits for them in
// poll(2) on its own thread. This is iperf3's single-threaded select
// loop, and why iperf3 won on a small machine.
//
// With a goroutine per stream, each stream that fills its socket parks in
// the runtime poller and is woken on whichever thread polls next, so on
// two CPUs the sender's streams (and the kernel's work for each write: on
// a veth or loopback path the send also runs the receiver's TCP input)
// spread over both CPUs and the two ends take turns on both instead of
// keeping one each. Measured on a 2-core netns lab, -P 4: 33 Gbit/s with
// a goroutine per stream, 62 for iperf3 3.12; the blast client alone
// reached iperf3 once it wrote on one thread, one stream at a time.
//
// A session has max(1, GOMAXPROCS/2) loops: the other half of the CPUs is
// left to the kernel's receive work and to the peer. Each session has its
// own, so a server with several clients gives each a thread.

// waitSlice is the longest a loop sleeps in poll(2): a stream asked to
// stop is let go this late at most.
const waitSlice = 2 * time.Millisecond

// yieldEvery is how often a loop passes through the scheduler. A
// goroutine that only makes system calls keeps one scheduling tick; after
// 10 ms of that the runtime's monitor takes its P away in the middle of a
// read or write (waking another thread to hold it) and then polls every
// 20 us, both on the CPUs the data path needs (see latency/client.go).
const yieldEvery = 2 * time.Millisecond

// ioLoop runs the streams handed to it until each ends.
type ioLoop struct {
	mu      sync.Mutex
	pending []*loopFlow
	members int // streams running or pending
	has     atomic.Bool
}

// loopFlow is one stream in a loop.
type loopFlow struct {
	st     *stream
	fd     int
	sender bool
	buf    []byte
	left   int64 // bytes still to move; < 0: no limit
	stop   atomic.Bool
	ready  bool // the last I/O did not find the socket full or empty
	end    func(error)
}

// loopable reports whether b's streams can run in the I/O loops: the
// default backend with no options, moving TCP.
func loopable(b engine.Backend) bool {
	_, ok := b.(sockets.ReadWrite)
	return ok
}

// startLoopFlow hands st to the least busy of a session's loops, making
// them on first use. end is called once, from the loop, when the stream is
// over; stop (st.cancel) ends it early. It reports false, leaving st as it
// was, if the socket could not be taken off the runtime poller.
func startLoopFlow(loops *[]*ioLoop, st *stream, sender bool, blockLen int, limit int64, end func(error)) bool {
	lc, err := detach(st.conn)
	if err != nil {
		return false
	}
	st.conn = lc
	fd := lc.fd
	f := &loopFlow{st: st, fd: fd, sender: sender, buf: make([]byte, blockLen), left: -1, ready: true, end: end}
	engine.Pattern(f.buf)
	if limit > 0 {
		f.left = limit
	}
	st.cancel = func() { f.stop.Store(true) }
	if len(*loops) == 0 {
		for range max(1, runtime.GOMAXPROCS(0)/2) {
			*loops = append(*loops, &ioLoop{})
		}
	}
	var l *ioLoop
	least := 0
	for _, c := range *loops {
		c.mu.Lock()
		m := c.members
		c.mu.Unlock()
		if l == nil || m < least {
			l, least = c, m
		}
	}
	l.mu.Lock()
	l.pending = append(l.pending, f)
	l.members++
	start := l.members == 1
	l.has.Store(true)
	l.mu.Unlock()
	if start {
		go l.run()
	}
	return true
}

// run moves bytes until the loop has no streams left.
func (l *ioLoop) run() {
	var flows []*loopFlow
	var pfds []unix.PollFd
	var waiting []*loopFlow
	lastYield := time.Now()
	for {
		if now := time.Now(); now.Sub(lastYield) > yieldEvery {
			runtime.Gosched()
			lastYield = now
		}
		if l.has.Load() {
			l.mu.Lock()
			flows = append(flows, l.pending...)
			l.pending = l.pending[:0]
			l.has.Store(false)
			l.mu.Unlock()
		}
		moved := false
		for i := 0; i < len(flows); {
			f := flows[i]
			var done bool
			var err error
			if f.stop.Load() {
				done = true
			} else if f.ready {
				moved = true
				done, err = f.turn()
			}
			if !done {
				i++
				continue
			}
			f.end(err)
			flows[i] = flows[len(flows)-1]
			flows[len(flows)-1] = nil
			flows = flows[:len(flows)-1]
			l.mu.Lock()
			l.members--
			quit := l.members == 0
			l.mu.Unlock()
			if quit {
				return // a stream joining now starts a new run
			}
		}
		// Ask the kernel about the streams that found their socket full
		// (or empty): without waiting while others can move, otherwise
		// for up to waitSlice.
		waiting, pfds = waiting[:0], pfds[:0]
		for _, f := range flows {
			if !f.ready {
				ev := int16(unix.POLLIN)
				if f.sender {
					ev = unix.POLLOUT
				}
				waiting = append(waiting, f)
				pfds = append(pfds, unix.PollFd{Fd: int32(f.fd), Events: ev})
			}
		}
		if len(pfds) == 0 {
			continue
		}
		timeout := 0
		if !moved || len(pfds) == len(flows) {
			timeout = int(waitSlice / time.Millisecond)
		}
		if _, err := unix.Poll(pfds, timeout); err != nil && err != unix.EINTR {
			for _, f := range waiting {
				f.ready = true // let the I/O itself report the trouble
			}
			continue
		}
		for i, f := range waiting {
			if pfds[i].Revents != 0 {
				f.ready = true
			}
		}
	}
}

// turn makes one write or read. done: the stream is over (err says why,
// nil for its end: EOF or its byte count).
func (f *loopFlow) turn() (done bool, err error) {
	p := f.buf
	if f.left >= 0 && f.left < int64(len(p)) {
		p = p[:f.left]
	}
	var n int
	if f.sender {
		n, err = unix.Write(f.fd, p)
	} else {
		n, err = unix.Read(f.fd, p)
	}
	switch {
	case err == unix.EAGAIN || err == unix.EINTR:
		f.ready = err == unix.EINTR
		return false, nil
	case err != nil:
		f.st.stats.AddError()
		op := "read"
		if f.sender {
			op = "write"
		}
		return true, os.NewSyscallError(op, err)
	case n == 0 && !f.sender:
		f.st.stats.AddCall() // the read that saw EOF
		return true, nil
	}
	f.st.stats.AddIO(n, 0)
	if f.left > 0 {
		f.left -= int64(n)
		return f.left == 0, nil
	}
	return false, nil
}

// loopConn is a data connection taken off the runtime poller for a loop.
// While the runtime's epoll set holds a socket, every segment that arrives
// on it (and every ACK that frees send space) wakes an idle thread of the
// process in epoll_wait for nothing, since no goroutine waits there: on a
// 4-stream receiver that was 56,000 wakeups a second, each one preempting
// the loop's thread. So the loop works on a duplicate of the descriptor
// and the original, registered one is closed. loopConn answers what the
// session still asks of the connection (addresses, TCP_INFO, queue
// sizes, Close); reading and writing are the loop's.
type loopConn struct {
	fd            int
	local, remote net.Addr
	mu            sync.RWMutex
	closed        bool
}

var errLoopConn = errors.New("the connection is run by an I/O loop")

// detach moves c's socket to a loopConn, closing c.
func detach(c net.Conn) (*loopConn, error) {
	rc, err := fdOf(c)
	if err != nil {
		return nil, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(f uintptr) { fd, derr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, os.NewSyscallError("fcntl F_DUPFD_CLOEXEC", derr)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("fcntl O_NONBLOCK", err)
	}
	lc := &loopConn{fd: fd, local: c.LocalAddr(), remote: c.RemoteAddr()}
	c.Close() // the duplicate keeps the socket open: no FIN
	return lc, nil
}

func (c *loopConn) Read([]byte) (int, error)         { return 0, errLoopConn }
func (c *loopConn) Write([]byte) (int, error)        { return 0, errLoopConn }
func (c *loopConn) LocalAddr() net.Addr              { return c.local }
func (c *loopConn) RemoteAddr() net.Addr             { return c.remote }
func (c *loopConn) SetDeadline(time.Time) error      { return nil }
func (c *loopConn) SetReadDeadline(time.Time) error  { return nil }
func (c *loopConn) SetWriteDeadline(time.Time) error { return nil }

// Close closes the socket. The loop must be done with it.
func (c *loopConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return net.ErrClosed
	}
	c.closed = true
	return unix.Close(c.fd)
}

// SyscallConn gives Control access to the descriptor, for socket options.
func (c *loopConn) SyscallConn() (syscall.RawConn, error) { return loopRawConn{c}, nil }

type loopRawConn struct{ c *loopConn }

func (r loopRawConn) Control(fn func(uintptr)) error {
	r.c.mu.RLock()
	defer r.c.mu.RUnlock()
	if r.c.closed {
		return net.ErrClosed
	}
	fn(uintptr(r.c.fd))
	return nil
}

func (loopRawConn) Read(func(uintptr) bool) error  { return errLoopConn }
func (loopRawConn) Write(func(uintptr) bool) error { return errLoopConn }
