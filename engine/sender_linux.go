package engine

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sync/atomic"
	"time"

	"github.com/blastnet/blast/internal/clock"
	"golang.org/x/sys/unix"
)

// A UDP send the host's own queue refused (ENOBUFS: a qdisc at its
// limit, which Run has report with IP_RECVERR, or a full device queue)
// waits for that queue and goes again: the datagram is the sender's, and
// loss in the result is loss on the path. The sender watches its own
// datagrams in the host's queue (SIOCOUTQ) every noBufsStep and sends
// again once half of them have left, after noBufsPause at most (ttcp's
// pause), or after noBufsPause when it has none there to watch. Through
// a 50 Mbit/s tbf of 369 KiB at -b 100M, blast -P 4 lost 84% of its
// datagrams in the tbf, and -w 4M 48%, while the send calls succeeded.
const (
	noBufsPause = 18 * time.Millisecond
	noBufsStep  = time.Millisecond
)

// Sender is the one send loop every backend shares. It hands out the next
// buffer and applies, the same way for every backend:
//   - the byte limit (Spec.Bytes): bytes handed out, exactly;
//   - the time limit (Spec.Duration), from the first call;
//   - the Source, read into the backend's buffer, ending at its EOF;
//   - pacing to Spec.Rate: each buffer leaves when the bytes before it
//     are due at the rate, slept in the kernel; with Spec.Burst, a burst
//     of that many buffers leaves back to back when its first is due;
//   - the Framing: Next stamps each datagram's header once it is due;
//   - the ENOBUFS policy (Retry): count it, wait for the host's queue,
//     send again.
//
// It reads the time and sleeps on the flow's Clock: with none (the real
// clock) it reads time.Now and sleeps in the kernel (Flow.Sleep, which a
// cancel interrupts); with a fake clock the whole schedule runs on the
// fake's time, for tests that assert it exactly.
//
// A backend asks with Next (fill a buffer) or Take (reserve bytes it sends
// from elsewhere: a file, a prefilled pattern), sends all it got, and
// records each call in f.Stats. Next and Take return 0 bytes when the send
// is over; the backend then returns nil. Take is refused when the Sender
// must write the bytes itself (Fills: a Source or a Framing).
type Sender struct {
	f *Flow
	// clk is the flow's Clock, nil for the real one: the real clock is
	// read directly (time.Now), without an interface call.
	clk      clock.Clock
	left     int64 // bytes still to hand out; -1: no limit
	deadline time.Time
	// unchecked bytes and grants since the clock was last read (timeUp).
	unchecked int
	grants    uint64
	// clock is the time stamp datagrams share, clockUses how many had it.
	clock     time.Duration
	clockUses int
	rate      float64 // bytes per second, 0: unpaced
	burst     int64   // bytes of a burst, 0: every grant paced on its own
	// start is where the pacing schedule counts from (it moves on when
	// the schedule forgives a stall); began is when the send began.
	start, began time.Time
	handed       int64 // bytes handed out, for pacing
	// owed is how far the schedule moved on after a stall, taken back a
	// little with every buffer (pace).
	owed time.Duration
	// behind is FactPaceBehind, taken when the schedule first moved on.
	behind  *atomic.Int64
	src     io.Reader
	framing Framing
	over    bool
	noBufs  *atomic.Int64
	// noBufsWait is the time waited for the host's queue (ns).
	noBufsWait *atomic.Int64
	syscalls   *atomic.Int64 // WriteAll's, taken at its first call
}

// NewSender starts the iterator for f (the time limit runs from now).
func NewSender(f *Flow) *Sender {
	s := &Sender{f: f, left: -1, rate: f.Spec.Rate / 8, src: f.Spec.Source, framing: f.Spec.Framing}
	if f.Clock != nil && f.Clock != clock.Real {
		s.clk = f.Clock
	}
	now := s.Now()
	s.start, s.began = now, now
	if f.Spec.Burst > 1 {
		s.burst = int64(f.Spec.Burst) * int64(f.Spec.BufLen)
	}
	if f.Spec.Bytes > 0 {
		s.left = f.Spec.Bytes
	}
	if f.Spec.Duration > 0 {
		s.deadline = s.start.Add(f.Spec.Duration)
	}
	return s
}

// NewFileSender starts the iterator for a send whose bytes the kernel
// reads from a file itself (sendfile, splice): it grants byte counts with
// Take and leaves Spec.Source, which may be that file, to the backend.
func NewFileSender(f *Flow) *Sender {
	s := NewSender(f)
	s.src = nil
	return s
}

// Now reads the Sender's clock (the flow's Clock; time.Now without one).
// A backend that times its batches against Ahead reads the time here.
func (s *Sender) Now() time.Time {
	if s.clk == nil {
		return time.Now()
	}
	return s.clk.Now()
}

// sleep sleeps for d on the Sender's clock: in the kernel on the flow's
// eventfd for the real clock, on the fake's time for a fake (which
// returns at once; a cancel is seen after it).
func (s *Sender) sleep(d time.Duration) error {
	if s.clk == nil {
		return s.f.Sleep(d)
	}
	if d > 0 {
		s.clk.Sleep(d)
	}
	if s.f.Cancelled() {
		return ErrCancelled
	}
	return nil
}

// Fills reports whether the Sender writes the bytes it hands out: they
// come from Spec.Source, or each datagram gets a header from Spec.Framing.
// Such a send must ask with Next, into a buffer of its own for every
// datagram it has in flight; Take is refused.
func (s *Sender) Fills() bool { return s.src != nil || s.framing != nil }

// Next returns the next bytes to send, a prefix of buf, or an empty slice
// when the send is over. With a Source the bytes are read from it; else
// buf keeps what it holds (the pattern) and, with a Framing, gets the
// datagram's header stamped over its start once the datagram is due.
func (s *Sender) Next(buf []byte) ([]byte, error) {
	n, err := s.grant(len(buf))
	if n == 0 || err != nil {
		return nil, err
	}
	if s.src == nil {
		if s.framing != nil {
			s.framing.Stamp(buf[:n], s.stampTime())
		}
		return buf[:n], nil
	}
	for {
		m, rerr := s.src.Read(buf[:n])
		if m > 0 {
			s.give(m)
			return buf[:m], s.pace(m)
		}
		if errors.Is(rerr, io.EOF) {
			s.over = true
			return nil, nil
		}
		if rerr != nil {
			return nil, fmt.Errorf("read source: %w", rerr)
		}
	}
}

// Take reserves up to want bytes for a backend that sends without a
// buffer of the Sender's (sendfile from a file, a batch of prefilled
// datagrams): it returns how many to send now, 0 when the send is over.
// A Sender that Fills cannot Take.
func (s *Sender) Take(want int) (int, error) {
	if s.src != nil {
		return 0, errors.New("engine: Take on a Sender that reads a Source (use Next)")
	}
	if s.framing != nil {
		return 0, errors.New("engine: Take on a Sender that stamps datagram headers (Spec.Framing): the bytes taken would go without them (use Next)")
	}
	n, err := s.grant(want)
	if n == 0 || err != nil {
		return 0, err
	}
	return n, nil
}

// grant decides how many of want bytes may go: limit and time, then pace
// (for a Source, pacing waits until the bytes read are known).
func (s *Sender) grant(want int) (int, error) {
	if s.over || want <= 0 {
		return 0, nil
	}
	if !s.deadline.IsZero() && s.timeUp(want) {
		s.over = true
		return 0, nil
	}
	n := want
	if s.left >= 0 {
		if s.left == 0 {
			s.over = true
			return 0, nil
		}
		n = int(min(int64(n), s.left))
	}
	if s.src != nil {
		return n, nil
	}
	if s.rate > 0 && !s.deadline.IsZero() && (!s.release().Before(s.deadline) || !s.Now().Before(s.deadline)) {
		// Due only after the time limit, or due before it but late
		// past it (a paced sender makes up for late wakeups): the send
		// is over now.
		s.over = true
		return 0, nil
	}
	s.give(n)
	return n, s.pace(n)
}

// stampTime is the send time of the datagram handed out now. A clock read
// costs as much as the rest of stamping a small datagram, so datagrams
// handed out in a row, which leave in one send call, share one reading
// for up to stampReuse of them; a send call in between (Sent) or a paced
// flow reads it afresh.
func (s *Sender) stampTime() time.Duration {
	if s.rate > 0 || s.clockUses == 0 || s.clockUses >= stampReuse {
		s.clock, s.clockUses = Mono(), 0
	}
	s.clockUses++
	return s.clock
}

// stampReuse is how many datagrams handed out in a row share a time stamp.
const stampReuse = 8

// Sent tells the Sender that a send call returned: the next datagram gets
// a fresh time stamp (a call may have blocked). Backends that hand several
// datagrams to one call (mmsg, io_uring) call it after each; WriteAll does.
func (s *Sender) Sent() { s.clockUses = 0 }

// timeUp reports whether the time limit has passed. It reads the clock
// for every buffer of 8 KiB or more, and for every 16th smaller one (a
// clock read costs as much as stamping a small datagram, which at millions
// of datagrams a second is most of the sender's time): the limit is then
// late by at most 16 small buffers.
func (s *Sender) timeUp(want int) bool {
	s.unchecked += want
	s.grants++
	if s.unchecked < 8<<10 && s.grants%16 != 1 {
		return false
	}
	s.unchecked = 0
	return s.Now().Sub(s.began) >= s.f.Spec.Duration
}

func (s *Sender) give(n int) {
	if s.left >= 0 {
		s.left -= int64(n)
	}
}

// A paced sender that fell behind its schedule (its thread did not run,
// the socket was full) sends what is due back to back, as long as it is
// at most lagSlack behind: a busy host wakes a sleeping thread late, or
// gives its CPU to another for a scheduler slice of a few milliseconds,
// and a pacer that took that as lost time fell far short of its rate (35
// to 78% of -b 100M on this project's 2-CPU machine while other tests
// ran, where iperf3 held 100%; 67 to 91% when it made up only 500 µs at
// once). The datagrams made up leave after their time, never before it:
// the sender is never ahead of its schedule. A longer stall does not end
// in a burst as long as itself: the schedule moves on by the excess at
// once, and takes it back a little with every buffer after, so that the
// sender runs at catchUp times the rate until the average is whole again.
// catchUp is 1.25 so that a host that holds the thread up often still
// gets its rate: with stalls of 8 ms every 45 to 60 ms on both CPUs, a
// blast server sending iperf3 -u -b 50M --bidir's reverse stream ran at
// 43 to 44 Mbit/s catching up at 1.05 times the rate, and at 50.0 at 1.25
// times, as iperf3 held 50.0 by bursting. A debt of more than maxDebt is
// forgiven rather than caught up for seconds.
//
// In numbers: a buffer of n bytes takes n/rate at the rate, and n/rate /
// catchUp while a debt is paid, so each such buffer moves the schedule
// back by n/rate * (1 - 1/catchUp) (a fifth of its time), until the debt
// is paid. (The measurements above were made when each buffer paid back
// catchUp-1, a quarter, of its time: 1.33 times the rate.)
const (
	lagSlack = 5 * time.Millisecond
	catchUp  = 1.25
	maxDebt  = 100 * time.Millisecond
)

// release is when the next buffer may leave.
func (s *Sender) release() time.Time { return s.start.Add(s.due(s.handed)) }

// pace sleeps until the next n bytes are due, and counts them.
func (s *Sender) pace(n int) error {
	if s.rate <= 0 {
		return nil
	}
	rel := s.release()
	now := s.Now()
	if late := now.Sub(rel); late > lagSlack {
		excess := late - lagSlack
		s.start = s.start.Add(excess)
		rel = rel.Add(excess)
		s.owed = min(s.owed+excess, maxDebt)
	}
	s.handed += int64(n)
	if s.owed > 0 {
		t := s.at(int64(n))
		pay := min(s.owed, t-time.Duration(float64(t)/catchUp))
		s.start = s.start.Add(-pay)
		s.owed -= pay
		// What the schedule moved on by and did not take back: the
		// debt forgiven, and what is still owed.
		if s.behind == nil {
			s.behind = s.f.Facts.Counter(FactPaceBehind)
		}
		s.behind.Store(int64(s.start.Sub(s.began)))
	}
	if d := rel.Sub(now); d > 0 {
		if !s.deadline.IsZero() && rel.After(s.deadline) {
			d = s.deadline.Sub(now)
		}
		return s.sleep(d)
	}
	return nil
}

// due is when the buffer after handed bytes is due, from the start of the
// schedule: the first of its burst, with Spec.Burst.
func (s *Sender) due(handed int64) time.Duration {
	if s.burst > 0 {
		handed -= handed % s.burst
	}
	return s.at(handed)
}

// at is how long n bytes take at the rate, to the nearest nanosecond (not
// cut short: a float a hair below a whole nanosecond is that nanosecond).
func (s *Sender) at(n int64) time.Duration {
	return time.Duration(math.Round(float64(n) / s.rate * float64(time.Second)))
}

// Ahead is how long until the next buffer is due (0: now, or unpaced):
// how long Next or Take would sleep first. A backend that gathers buffers
// into a batch sends what it has rather than hold it that long, so that a
// paced batch leaves at the pace and not as one burst at its end.
func (s *Sender) Ahead() time.Duration {
	if s.rate <= 0 {
		return 0
	}
	return max(s.release().Sub(s.Now()), 0)
}

// Over reports whether the send has ended (limit, time or Source EOF).
func (s *Sender) Over() bool { return s.over }

// Retry decides about a failed send call: true to send the same bytes
// again (after waiting for the host's queue on ENOBUFS, or a send timeout
// slice while time remains), false with the error to return otherwise. A
// send timeout after the time limit ends the send: Retry returns false,
// nil.
func (s *Sender) Retry(err error) (bool, error) {
	switch {
	case errors.Is(err, unix.ENOBUFS) && s.f.Spec.Protocol == UDP:
		if s.noBufs == nil {
			s.noBufs = s.f.Facts.Counter(FactNoBufs)
			s.noBufsWait = s.f.Facts.Counter(FactNoBufsWait)
		}
		s.noBufs.Add(1)
		s.f.Stats.AddError()
		if err := s.waitQueue(); err != nil {
			return false, err
		}
		return true, nil
	case errors.Is(err, ErrTimeout) || errors.Is(err, unix.EAGAIN):
		if !s.deadline.IsZero() {
			if s.Now().Before(s.deadline) {
				return true, nil
			}
			s.over = true
			return false, nil
		}
	case errors.Is(err, unix.EINTR):
		return true, nil
	}
	return false, err
}

// waitQueue waits, after a send the host's queue refused, until half of
// this flow's datagrams in that queue have left (at most noBufsPause), or
// for noBufsPause when the queue holds only other flows' datagrams, and
// counts the time in FactNoBufsWait.
func (s *Sender) waitQueue() error {
	fd, q0 := -1, 0
	if s.f.Sock != nil {
		fd = s.f.Sock.FD()
		if n, err := hostQueued(fd); err == nil {
			q0 = n
		}
	}
	if fd >= 0 && q0 <= 0 {
		// Refused with none of this flow's datagrams in the host's
		// queue: either other flows fill it (-P 4 through a shaper),
		// and the flow waits its turn, or nothing is queued at all and
		// a device dropped the datagram (a veth whose peer's MTU is
		// smaller drops every datagram above it). Waiting cannot help
		// then: the flow stops asking, and such datagrams are lost as
		// they were without IP_RECVERR, for the receiver to count
		// (doctor's D16 names the MTU; waiting had hidden it behind a
		// full send buffer). When the queue cannot be read, the flow
		// waits, as for a full one.
		if b, err := egressBacklog(fd); err == nil && b == 0 {
			if err := s.f.Sock.reportQueueDrops(false); err != nil {
				return err
			}
			s.f.Facts.Notef("a send was refused (ENOBUFS) while the interface's queue held nothing: a device drops the datagrams, not a full queue; no more waits for the host's queue")
			return nil
		}
	}
	start := s.Now()
	defer func() { s.noBufsWait.Add(int64(s.Now().Sub(start))) }()
	if q0 <= 0 {
		return s.sleep(noBufsPause)
	}
	for s.Now().Sub(start) < noBufsPause {
		if err := s.sleep(noBufsStep); err != nil {
			return err
		}
		if n, err := hostQueued(fd); err != nil || n <= q0/2 {
			return nil
		}
	}
	return nil
}

// WriteAll writes p on fd with write(2) (send with MSG_NOSIGNAL) until the
// kernel took all of it, as one I/O operation in f.Stats (partial writes
// count in the flow's facts): the readwrite send path, shared by backends
// that fall back to it. A UDP write is one datagram. Every call it makes
// counts in FactSyscalls: the caller counts none of them.
func WriteAll(s *Sender, fd int, p []byte) error {
	f := s.f
	if s.syscalls == nil {
		s.syscalls = f.Facts.Counter(FactSyscalls)
	}
	udp := f.Spec.Protocol == UDP
	total := len(p)
	partial := 0
	var werr error
	for len(p) > 0 {
		n, err := f.Send(fd, p, unix.MSG_NOSIGNAL)
		s.syscalls.Add(1)
		s.Sent()
		if err != nil {
			again, rerr := s.Retry(err)
			if again {
				continue
			}
			if rerr != nil {
				f.Stats.AddError()
				werr = IOErr("write", rerr)
			}
			break // failed, or the time limit ended the send mid-buffer
		}
		p = p[n:]
		if udp {
			break
		}
		if len(p) > 0 {
			partial++
		}
	}
	// What the kernel took is counted, also when the buffer then failed:
	// the peer will count it.
	if sent := total - len(p); sent > 0 {
		dg := 0
		if udp {
			dg = 1
		}
		f.Stats.AddIO(sent, dg)
	}
	if partial > 0 {
		f.Facts.Add(FactPartialWrites, int64(partial))
	}
	return werr
}
