package afxdp

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

// rxShared is what the receivers of one flow (one per queue) share.
type rxShared struct {
	// end is set by whoever sees the end sentinel (on the flow's socket,
	// where the program passes it, or in a ring); abort by a receiver
	// that failed, or ran past the socket's timeout.
	end, abort atomic.Bool
	// locked says that the flow has a Sink or a Framing: the receivers
	// of every queue take turns at them, under sinkM.
	locked   bool
	sinkM    sync.Mutex
	last     atomic.Int64 // when a datagram last arrived, in UnixNano
	syscalls *atomic.Int64
}

// receiver drains the RX ring of one socket and keeps its fill ring full.
type receiver struct {
	s     *Socket
	f     *engine.Flow
	sh    *rxShared
	port  uint16
	batch int
	wait  time.Duration // how long one wait lasts (rxWait, less under a timeout)
	seq   Seq
	other int64 // frames of other flows that reached the socket
}

// How a receiver waits. Its ring may stay empty for rxWait before it looks
// at the flow's state again (end, abort); cancellation wakes it at once.
// Once the end sentinel has been seen, a receiver stops when its ring has
// stayed empty for quiet (the sentinel and the datagrams before it may
// arrive on different queues, whose NAPI polls run on different CPUs), or
// after giveUp if datagrams keep coming.
const (
	rxWait = 20 * time.Millisecond
	quiet  = 5 * time.Millisecond
	giveUp = time.Second
)

// rxNice is the nice value of the receive threads: a receive thread that
// waits for the CPU lets its RX ring overflow (xdp_rx_ring_full); it
// sleeps in ppoll when idle, so a higher priority costs others little.
// Best effort: it needs CAP_SYS_NICE. The flow's thread and the
// receiver's own threads end with the flow, and their priority with them.
const rxNice = -10

func raisePriority() { unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), rxNice) }

// run receives until the flow is cancelled, another receiver failed, or
// the end was seen and the ring has gone quiet. It waits on waitFD: its
// socket, or (on the flow's thread) an epoll set that also holds the
// flow's socket, which idle reads whenever the ring is empty: it returns
// whether it moved anything, and ends the receive with an error. Once the
// end was seen it waits on its socket alone.
func (r *receiver) run(waitFD int, idle func() (bool, error)) error {
	sh := r.sh
	var stopAt time.Time
	for !sh.abort.Load() {
		n, err := r.poll()
		if err != nil {
			sh.abort.Store(true)
			return err
		}
		if n > 0 {
			continue
		}
		ending := sh.end.Load()
		if !ending && idle != nil {
			moved, err := idle()
			if err != nil {
				sh.abort.Store(true)
				return err
			}
			if moved {
				continue
			}
			ending = sh.end.Load()
		}
		wait := r.wait
		if ending {
			waitFD = r.s.fd
			if stopAt.IsZero() {
				stopAt = time.Now().Add(giveUp)
			} else if time.Now().After(stopAt) {
				return nil
			}
			wait = quiet
		}
		if r.s.fill.needWakeup() {
			sh.syscalls.Add(1)
			r.s.wakeRX()
		}
		sh.syscalls.Add(1)
		ev, err := r.f.Wait(waitFD, unix.POLLIN, wait)
		if errors.Is(err, engine.ErrCancelled) {
			return nil
		}
		if err != nil {
			sh.abort.Store(true)
			return err
		}
		if ending && ev == 0 {
			if _, n := r.s.rx.peek(1); n == 0 {
				return nil
			}
		}
	}
	return nil
}

// poll takes one batch from the RX ring: it counts the flow's datagrams
// as one I/O operation, hands them to the Sink, and gives the frames back
// to the fill ring. It returns how many frames it took.
func (r *receiver) poll() (int, error) {
	s := r.s
	idx, n := s.rx.peek(uint32(r.batch))
	if n == 0 {
		return 0, nil
	}
	mask := ^uint64(s.cfg.FrameSize - 1)
	spec := r.f.Spec
	deliver := spec.Sink != nil || spec.Touch || spec.Framing != nil
	fidx, _ := s.fill.reserve(n) // the fill ring has room for every RX frame
	bytes, dgrams, end := 0, 0, false
	var err error
	if r.sh.locked {
		r.sh.sinkM.Lock()
	}
	for i := range n {
		d := *s.rx.at(idx + i)
		*s.fill.at(fidx + i) = d.Addr & mask
		if end || err != nil {
			continue
		}
		p, ok := ParseUDP(s.frame(d.Addr, int(d.Len)))
		if !ok || p.DstPort != r.port {
			r.other++
			continue
		}
		if len(p.Payload) <= spec.SentinelMax {
			end = true
			continue
		}
		r.seq.Add(p.Seq)
		bytes += len(p.Payload)
		dgrams++
		if deliver {
			err = engine.Consume(r.f, p.Payload)
		}
	}
	if r.sh.locked {
		r.sh.sinkM.Unlock()
	}
	s.rx.release(n)
	s.fill.submit()
	if dgrams > 0 {
		r.f.Stats.AddIO(bytes, dgrams)
		r.sh.last.Store(time.Now().UnixNano())
	}
	if end {
		r.f.Stats.AddCall() // the sentinel
		r.sh.end.Store(true)
	}
	return int(n), err
}

// sockReader reads what reaches the flow's own socket while the program
// is attached: datagrams that came before it was, and those it passes
// (sentinels, the first datagram after Prepare). It runs on the flow's
// thread, between waits, never blocking.
type sockReader struct {
	f       *engine.Flow
	sh      *rxShared
	buf     []byte
	seq     Seq
	timeout time.Duration // the socket's SO_RCVTIMEO, 0: none
}

// read reads until the socket is empty or the end sentinel arrives, and
// fails when no datagram arrived anywhere for the socket's timeout.
func (s *sockReader) read() (bool, error) {
	moved := false
	fd, spec := s.f.Sock.FD(), s.f.Spec
	for {
		s.sh.syscalls.Add(1)
		n, _, err := unix.Recvfrom(fd, s.buf, unix.MSG_DONTWAIT)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			break
		}
		if err != nil {
			s.f.Stats.AddError()
			return moved, engine.IOErr("recvfrom", err)
		}
		moved = true
		if n <= spec.SentinelMax {
			s.f.Stats.AddCall()
			s.sh.end.Store(true)
			return true, nil
		}
		var seq uint32
		if n >= HeaderLen {
			seq = uint32(s.buf[8])<<24 | uint32(s.buf[9])<<16 | uint32(s.buf[10])<<8 | uint32(s.buf[11])
		}
		s.seq.Add(seq)
		s.sh.last.Store(time.Now().UnixNano())
		if s.sh.locked {
			s.sh.sinkM.Lock()
		}
		err = engine.Deliver(s.f, s.buf[:n], true)
		if s.sh.locked {
			s.sh.sinkM.Unlock()
		}
		if err != nil {
			return moved, err
		}
	}
	if s.timeout > 0 && !moved && time.Since(time.Unix(0, s.sh.last.Load())) >= s.timeout {
		return false, engine.IOErr("recv", unix.EAGAIN)
	}
	return moved, nil
}

// rcvTimeout is the socket's receive timeout (Socket.SetTimeout), 0 when
// none is set or it cannot be read.
func rcvTimeout(fd int) time.Duration {
	tv, err := unix.GetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO)
	if err != nil {
		return 0
	}
	return time.Duration(tv.Nano())
}

// pollSet is an epoll set of fds, waited on through Flow.Wait: the flow's
// thread waits on its queue's AF_XDP socket and the flow's socket at once.
func pollSet(fds ...int) (int, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return -1, engine.IOErr("epoll_create1", err)
	}
	for _, fd := range fds {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			unix.Close(ep)
			return -1, engine.IOErr("epoll_ctl", err)
		}
	}
	return ep, nil
}
