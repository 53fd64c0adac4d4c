package afxdp

import (
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

// receiver drains the RX ring of one socket and keeps its fill ring full.
type receiver struct {
	s     *Socket
	f     *engine.Flow
	port  uint16
	batch int
	sinkM *sync.Mutex // one Sink for every queue
	seq   Seq
	other int64 // frames of other flows that reached the socket
	// sentinel is closed by whichever receiver sees the end sentinel.
	sentinel func()
}

// quiet is how long a receiver's ring must stay empty after the end
// sentinel reached the socket before it stops: the sentinel and the
// datagrams before it may arrive on different queues, whose NAPI polls
// run on different CPUs.
const quiet = 5 * time.Millisecond

// rxNice is the nice value of the receive threads.
const rxNice = -10

// run receives until cancel is closed, or done is closed (the end
// sentinel reached the socket or another queue) and the ring has stayed
// empty for quiet, or an end sentinel arrives in the ring.
func (r *receiver) run(done, cancel <-chan struct{}) error {
	// The thread stays locked when run returns, so the runtime ends it
	// rather than handing its raised priority to other goroutines.
	runtime.LockOSThread()
	// A receive thread that waits for the CPU lets its RX ring overflow
	// (xdp_rx_ring_full); it sleeps in poll when idle, so a higher
	// priority costs others little. Best effort: it needs CAP_SYS_NICE.
	unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), rxNice)
	s := r.s
	mask := ^uint64(s.cfg.FrameSize - 1)
	spec := r.f.Spec
	pfd := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}}
	ending := false
	var giveUp time.Time
	for {
		if !ending {
			select {
			case <-done:
				ending, giveUp = true, time.Now().Add(time.Second)
			default:
			}
		}
		if ending {
			select {
			case <-cancel:
				return nil
			default:
			}
			if time.Now().After(giveUp) {
				return nil
			}
		}
		idx, n := s.rx.peek(uint32(r.batch))
		if n == 0 {
			if s.fill.needWakeup() {
				s.wakeRX()
			}
			wait := 20
			if ending {
				wait = int(quiet / time.Millisecond)
			}
			k, err := unix.Poll(pfd, wait)
			if err != nil && err != unix.EINTR {
				return err
			}
			if ending && k == 0 {
				if _, n := s.rx.peek(1); n == 0 {
					return nil
				}
			}
			continue
		}
		fidx, _ := s.fill.reserve(n) // the fill ring has room for every RX frame
		bytes, dgrams, end := 0, 0, false
		for i := range n {
			d := *s.rx.at(idx + i)
			*s.fill.at(fidx + i) = d.Addr & mask
			if end {
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
			if spec.Sink != nil || spec.Touch {
				r.sinkM.Lock()
				err := engine.Deliver(r.f, p.Payload, true)
				r.sinkM.Unlock()
				if err != nil {
					return err
				}
			}
		}
		s.rx.release(n)
		s.fill.submit()
		if dgrams > 0 && spec.Sink == nil && !spec.Touch {
			r.f.Stats.AddIO(bytes, dgrams)
		}
		if end {
			r.sentinel()
			return nil
		}
	}
}
