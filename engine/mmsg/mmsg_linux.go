package sockets

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

func init() { engine.Register(MMsg{}) }

// MMsg moves UDP datagrams in batches with sendmmsg(2) and recvmmsg(2).
//
// Options: Batch is the number of messages per call (default 64). With GSO
// the sender sets UDP_SEGMENT to the buffer length and each message carries
// a train of up to 64 datagrams that the kernel (or the NIC) cuts up; with
// GRO the receiver sets UDP_GRO and one message may bring several datagrams
// of one size. Where the kernel refuses either, the flow goes on without it
// and a note says so.
//
// Counters count one I/O call per sendmmsg/recvmmsg that moved data, with
// all the bytes and datagrams it moved: a call moves up to Batch buffers.
type MMsg struct{ opts engine.Options }

var (
	_ engine.Backend      = MMsg{}
	_ engine.Configurable = MMsg{}
)

const (
	defaultBatch = 64
	maxBatch     = 1024 // UIO_MAXIOV: the kernel's limit on vlen
	// gsoSegments is the most datagrams one UDP_SEGMENT message carries
	// (UDP_MAX_SEGMENTS was 64 before Linux 6.11).
	gsoSegments = 64
	// gsoMax is the largest UDP payload of one GSO message.
	gsoMax = 65507
)

// maxGSOSegments is gsoSegments; tests raise it to make the kernel refuse.
var maxGSOSegments = gsoSegments

// Name implements engine.Backend.
func (MMsg) Name() string { return "mmsg" }

// Configure implements engine.Configurable: batch, gso, gro.
func (b MMsg) Configure(o engine.Options) (engine.Backend, error) {
	if err := engine.Refuse(b.Name(), o, engine.Options{Batch: o.Batch, GSO: o.GSO, GRO: o.GRO}); err != nil {
		return nil, err
	}
	if o.Batch < 0 || o.Batch > maxBatch {
		return nil, fmt.Errorf("mmsg: batch %d: must be between 1 and %d", o.Batch, maxBatch)
	}
	return MMsg{opts: o}, nil
}

func (b MMsg) batch() int {
	if b.opts.Batch > 0 {
		return b.opts.Batch
	}
	if b.opts.GSO {
		return 8 // trains of up to 64 datagrams each
	}
	return defaultBatch
}

// Probe implements engine.Backend: an empty sendmmsg on a UDP socket.
func (MMsg) Probe() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return os.NewSyscallError("socket", err)
	}
	defer unix.Close(fd)
	if _, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), 0, 0, 0, 0, 0); errno != 0 {
		if errno == unix.ENOSYS {
			return fmt.Errorf("sendmmsg is missing (kernel older than 3.0): %w", engine.ErrNotSupported)
		}
		return os.NewSyscallError("sendmmsg", errno)
	}
	return nil
}

func udpOnly(name string, f *engine.Flow) error {
	if f.Spec.Protocol != engine.UDP {
		return fmt.Errorf("%s moves UDP datagrams only (TCP: use readwrite, sendfile, splice, zerocopy or iouring): %w", name, engine.ErrNotSupported)
	}
	return nil
}

// Send implements engine.Backend.
func (b MMsg) Send(ctx context.Context, f *engine.Flow) error {
	if err := udpOnly(b.Name(), f); err != nil {
		return err
	}
	m := &mmsgSender{f: f, facts: engine.FactsOf(f), batch: b.batch(), sendmmsg: sendmmsg}
	return runSend(ctx, f, func(rc syscall.RawConn) error {
		if b.opts.GSO {
			m.setGSO(rc)
		}
		m.facts.Notef("batches of %d messages", m.batch)
		defer quiet(rc, m.facts)()
		return m.loop(ctx, rc)
	})
}

// sendmmsg is sendmmsg(2).
func sendmmsg(fd int, msgs []unix.Mmsghdr) (int, error) {
	r, _, errno := unix.RawSyscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&msgs[0])), uintptr(len(msgs)), 0, 0, 0)
	runtime.KeepAlive(msgs)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}

type mmsgSender struct {
	f        *engine.Flow
	facts    *engine.Facts
	batch    int // messages per call
	segs     int // datagrams per message: 1, or the GSO train length
	sendmmsg func(fd int, msgs []unix.Mmsghdr) (int, error)

	pat   []byte   // the pattern datagram
	arena []byte   // Source mode: one buffer per datagram of a batch
	dgs   [][]byte // the datagrams of the batch being sent
	iov   []unix.Iovec
	msgs  []unix.Mmsghdr
	mdg   []int // datagrams per message

	w *fdWaiter
}

// setGSO turns UDP_SEGMENT on, or notes why not.
func (m *mmsgSender) setGSO(rc syscall.RawConn) {
	bufLen := m.f.Spec.BufLen
	segs := min(maxGSOSegments, gsoMax/bufLen)
	if segs < 2 {
		m.facts.Notef("GSO not used: %d-byte datagrams leave no room for two in one %d-byte message", bufLen, gsoMax)
		return
	}
	var serr error
	rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_SEGMENT, bufLen) })
	if serr != nil {
		m.facts.Notef("GSO refused by the kernel (setsockopt UDP_SEGMENT: %v, needs Linux 4.18): sending one datagram per message", serr)
		return
	}
	m.segs = segs
	m.facts.Notef("GSO: trains of up to %d datagrams of %d bytes per message", segs, bufLen)
}

// dropGSO turns UDP_SEGMENT off after the kernel refused a GSO send.
func (m *mmsgSender) dropGSO(fd int, why error) {
	unix.SetsockoptInt(fd, unix.SOL_UDP, unix.UDP_SEGMENT, 0)
	m.segs = 0
	m.facts.Notef("GSO refused by the kernel on this path (sendmmsg: %v): sending one datagram per message from now on", why)
	m.facts.Add("gso_fallbacks", 1)
}

func (m *mmsgSender) loop(ctx context.Context, rc syscall.RawConn) (err error) {
	s := m.f.Spec
	if m.w, err = newWaiter(ctx); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, m.w.close()) }()
	pacer := engine.NewPacer(s.Rate)
	if s.Source == nil {
		m.pat = make([]byte, s.BufLen)
		engine.Pattern(m.pat)
	}
	left := limit(s)
	eof := false
	for left != 0 && !eof {
		// The datagrams of this call.
		want := m.batch * max(m.segs, 1)
		m.dgs = m.dgs[:0]
		var bytes int64
		if s.Source != nil {
			if m.arena == nil || len(m.arena) < want*s.BufLen {
				m.arena = make([]byte, want*s.BufLen)
			}
		}
		for len(m.dgs) < want && (left < 0 || bytes < left) {
			n := chunk(s.BufLen, left-bytes)
			if left < 0 {
				n = s.BufLen
			}
			var d []byte
			if s.Source == nil {
				d = m.pat[:n]
			} else {
				i := len(m.dgs) * s.BufLen
				k, err := s.Source.Read(m.arena[i : i+n])
				if k == 0 {
					if err == nil {
						continue
					}
					if errors.Is(err, io.EOF) {
						eof = true
						break
					}
					return fmt.Errorf("read source: %w", err)
				}
				d = m.arena[i : i+k]
			}
			m.dgs = append(m.dgs, d)
			bytes += int64(len(d))
		}
		if len(m.dgs) == 0 {
			break
		}
		if err := pacer.Wait(ctx, int(bytes)); err != nil {
			return err
		}
		if err := m.sendBatch(ctx, rc); err != nil {
			return err
		}
		if left > 0 {
			left -= bytes
		}
	}
	return nil
}

// build lays out the messages for m.dgs: one per datagram, or GSO trains
// in which every datagram but the last has the full buffer length.
func (m *mmsgSender) build() {
	m.iov = m.iov[:0]
	m.msgs = m.msgs[:0]
	m.mdg = m.mdg[:0]
	for _, d := range m.dgs {
		m.iov = append(m.iov, iovec(d))
	}
	full := m.f.Spec.BufLen
	for i := 0; i < len(m.dgs); {
		j := i + 1
		if m.segs > 1 {
			for j < len(m.dgs) && j-i < m.segs && len(m.dgs[j-1]) == full {
				j++
			}
		}
		var h unix.Mmsghdr
		h.Hdr.Iov = &m.iov[i]
		h.Hdr.SetIovlen(j - i)
		m.msgs = append(m.msgs, h)
		m.mdg = append(m.mdg, j-i)
		i = j
	}
}

// sendBatch sends the messages of m.dgs, as many calls as it takes: a
// call may send only the first few.
func (m *mmsgSender) sendBatch(ctx context.Context, rc syscall.RawConn) error {
	m.build()
	c := m.f.Stats
	msgs, mdg := m.msgs, m.mdg
	for len(msgs) > 0 {
		var n int
		var serr, werr error
		err := rc.Write(func(fd uintptr) bool {
			n, serr = m.sendmmsg(int(fd), msgs)
			m.facts.Add(engine.FactSyscalls, 1)
			switch {
			case serr == unix.EAGAIN:
				// The socket buffer is full: wait in the kernel (see
				// fdWaiter), then come back through Write, which checks
				// the deadline.
				m.facts.Add("send_waits", 1)
				werr = m.w.wait(int(fd), unix.POLLOUT)
			case m.segs > 1 && gsoRefused(serr):
				// The first message failed: GSO refused here.
				m.dropGSO(int(fd), serr)
			}
			return true
		})
		if err == nil {
			err = werr
		}
		if err != nil {
			return err
		}
		if serr == unix.EAGAIN {
			if err := ctx.Err(); err != nil {
				return err
			}
			continue
		}
		if gsoRefused(serr) && m.segs == 0 && mdg[0] > 1 {
			c.AddError()
			// Lay out what is left again, one datagram a message.
			done := len(m.msgs) - len(msgs)
			skip := 0
			for _, k := range m.mdg[:done] {
				skip += k
			}
			m.dgs = m.dgs[skip:]
			m.build()
			msgs, mdg = m.msgs, m.mdg
			continue
		}
		if serr == unix.ENOBUFS {
			c.AddError()
			time.Sleep(18 * time.Millisecond) // ttcp's pause for a full queue
			continue
		}
		if serr != nil {
			c.AddError()
			return os.NewSyscallError("sendmmsg", serr)
		}
		var bytes, dgs int
		for i := range n {
			bytes += int(msgs[i].Len)
			dgs += mdg[i]
		}
		c.AddIO(bytes, dgs)
		if m.segs > 1 {
			m.facts.Add("gso_messages", int64(n))
		}
		msgs, mdg = msgs[n:], mdg[n:]
	}
	return nil
}

// quiet keeps the runtime's poller from being woken by the flow's socket
// while the flow waits for it in the kernel itself (see quietNetpoll), and
// returns what undoes it.
func quiet(rc syscall.RawConn, facts *engine.Facts) (restore func()) {
	restore, err := quietNetpoll(rc)
	if err != nil {
		facts.Notef("the Go runtime's poller still watches the socket (%v): expect more thread wakeups", err)
		return func() {}
	}
	return restore
}

// gsoRefused tells the errors of a GSO message the same datagrams would not
// get one at a time: a device or path without the offload (EIO), too many
// segments (EINVAL), a segment over the path MTU (EMSGSIZE).
func gsoRefused(err error) bool {
	return err == unix.EIO || err == unix.EINVAL || err == unix.EMSGSIZE
}

// Recv implements engine.Backend.
func (b MMsg) Recv(ctx context.Context, f *engine.Flow) error {
	if err := udpOnly(b.Name(), f); err != nil {
		return err
	}
	facts := engine.FactsOf(f)
	return runRecv(ctx, f, func(rc syscall.RawConn) error {
		gro := false
		if b.opts.GRO {
			var serr error
			rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_GRO, 1) })
			if serr != nil {
				facts.Notef("GRO refused by the kernel (setsockopt UDP_GRO: %v, needs Linux 5.0): one datagram per message", serr)
			} else {
				gro = true
				facts.Notef("GRO: a message may carry several datagrams")
			}
		}
		defer quiet(rc, facts)()
		return mmsgRecvLoop(ctx, rc, f, b.batch(), gro)
	})
}

func mmsgRecvLoop(ctx context.Context, rc syscall.RawConn, f *engine.Flow, batch int, gro bool) (err error) {
	s := f.Spec
	facts := engine.FactsOf(f)
	w, err := newWaiter(ctx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, w.close()) }()
	size := s.BufLen
	if gro {
		size = max(size, 65535)
	}
	const ctlLen = 64
	arena := make([]byte, batch*size)
	ctl := make([]byte, batch*ctlLen)
	iov := make([]unix.Iovec, batch)
	msgs := make([]unix.Mmsghdr, batch)
	for i := range msgs {
		iov[i] = iovec(arena[i*size : (i+1)*size])
		msgs[i].Hdr.Iov = &iov[i]
		msgs[i].Hdr.SetIovlen(1)
	}
	mod := newRxModerator(rc)
	deliver := make([][]byte, 0, batch) // the received messages of one call
	left := limit(s)
	for left != 0 {
		if gro {
			for i := range msgs {
				msgs[i].Hdr.Control = &ctl[i*ctlLen]
				msgs[i].Hdr.SetControllen(ctlLen)
			}
		}
		var n int
		var rerr, werr error
		err := rc.Read(func(fd uintptr) bool {
			r, _, errno := unix.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&msgs[0])), uintptr(len(msgs)), 0, 0, 0)
			runtime.KeepAlive(msgs)
			n, rerr = int(r), nil
			if errno != 0 {
				n, rerr = 0, errno
			}
			facts.Add(engine.FactSyscalls, 1)
			if rerr == unix.EAGAIN {
				// Nothing queued: wait in the kernel (see fdWaiter), then
				// come back through Read, which checks the deadline.
				facts.Add("recv_waits", 1)
				werr = w.wait(int(fd), unix.POLLIN)
			}
			return true
		})
		if err == nil {
			err = werr
		}
		if err != nil {
			return err
		}
		if rerr == unix.EAGAIN {
			if err := ctx.Err(); err != nil {
				return err
			}
			continue
		}
		if rerr != nil {
			f.Stats.AddError()
			return os.NewSyscallError("recvmmsg", rerr)
		}
		var bytes, dgs int
		end := false
		deliver = deliver[:0]
		for i := range n {
			l := int(msgs[i].Len)
			seg := 0
			if gro {
				seg = groSize(ctl[i*ctlLen : i*ctlLen+int(msgs[i].Hdr.Controllen)])
			}
			d := 1
			if seg > 0 && l > seg {
				d = (l + seg - 1) / seg
			}
			last := l - (d-1)*seg
			if d == 1 && l <= s.SentinelMax {
				end = true
				break
			}
			if d > 1 && last <= s.SentinelMax && last < seg {
				// The sentinel rode at the end of a GRO train.
				d--
				l -= last
				end = true
			}
			if d > 1 {
				facts.Add("gro_messages", 1)
			}
			bytes += l
			dgs += d
			deliver = append(deliver, arena[i*size:i*size+l])
			if end {
				break
			}
		}
		if bytes == 0 {
			f.Stats.AddCall()
		} else {
			f.Stats.AddIO(bytes, dgs)
		}
		for _, p := range deliver {
			if err := consume(f, p); err != nil {
				return err
			}
		}
		if end {
			return nil
		}
		if left > 0 {
			left = max(left-int64(bytes), 0)
		}
		if mod.pause(n, batch, bytes, dgs) {
			facts.Add("recv_pauses", 1)
		}
	}
	return nil
}

// rxModerator is interrupt moderation for a receiver: after a call that
// emptied the socket's queue with less than a full batch, it waits a moment
// before the next call so that the next one finds more, instead of taking
// the datagrams in ones and twos as they come.
//
// The receive is rarely the slow end of a small-datagram flow, but every
// wakeup of an eager receiver costs CPU at both ends (the sending CPU
// delivers the datagram and wakes the reader); on a veth pair, where the
// sender's CPU runs the whole receive path, those wakeups cut the send
// rate by a third. The pause is bounded so that, at the rate the datagrams
// arrived since the previous call, the receive buffer stays at most a
// quarter full; when that bound is too short for a sleep to be worth it
// (and timer slack adds up to 50 µs to every sleep), there is no pause.
type rxModerator struct {
	rcvbuf int // SO_RCVBUF as the kernel reports it
	last   time.Time
}

const (
	rxPause    = 50 * time.Microsecond  // the pause asked for
	rxPauseMin = 150 * time.Microsecond // the least room, in time, to pause in
)

// newRxModerator returns a moderator for the socket behind rc.
func newRxModerator(rc syscall.RawConn) *rxModerator {
	rcvbuf := 212992
	rc.Control(func(fd uintptr) {
		if v, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF); err == nil {
			rcvbuf = v
		}
	})
	return &rxModerator{rcvbuf: rcvbuf, last: time.Now()}
}

// pause is called after each call that received n messages of batch,
// carrying dgs datagrams and bytes bytes; it reports whether it paused.
// The datagrams a call takes arrived since the previous call returned,
// pause included.
func (m *rxModerator) pause(n, batch, bytes, dgs int) bool {
	now := time.Now()
	gap := now.Sub(m.last)
	m.last = now
	if n <= 0 || n >= batch {
		return false
	}
	// A queued message costs its payload plus about 768 bytes of skb (its
	// truesize), which the buffer counts; n of them arrived in about gap,
	// so a quarter of the buffer fills in gap*capacity/(4n).
	capacity := m.rcvbuf / (bytes/n + 768)
	if room := gap * time.Duration(capacity) / time.Duration(4*n); room < rxPauseMin {
		return false
	}
	// A raw nanosleep keeps this goroutine's P: the runtime would take
	// back the P of a thread in a system call for more than 20 µs, and
	// its monitor then wakes every 20 µs to look for more, which at tens
	// of thousands of pauses a second costs more than the pauses save.
	ts := unix.NsecToTimespec(int64(rxPause))
	unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
	return true
}

// groSize reads the segment size from a UDP_GRO control message (0: none).
func groSize(oob []byte) int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_UDP && m.Header.Type == unix.UDP_GRO && len(m.Data) >= 2 {
			if len(m.Data) >= 4 {
				return int(binary.NativeEndian.Uint32(m.Data))
			}
			return int(binary.NativeEndian.Uint16(m.Data))
		}
	}
	return 0
}
