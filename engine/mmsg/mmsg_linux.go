package mmsg

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

// Backend moves UDP datagrams in batches with sendmmsg(2) and recvmmsg(2),
// blocking in the call on the flow's own thread. The zero value has no
// options; Configure sets them.
//
// Counters count one I/O call per sendmmsg/recvmmsg that moved data, with
// all the bytes and datagrams it moved: a call moves up to a batch of
// messages, and with GSO or GRO a message carries several datagrams.
type Backend struct {
	batch    int // messages per call; 0: the default
	gso, gro bool
}

var (
	_ engine.Backend      = Backend{}
	_ engine.Configurable = Backend{}
)

const (
	defaultBatch = 64
	// gsoBatch is the default batch with GSO: each message is already a
	// train of up to gsoSegments datagrams.
	gsoBatch = 8
	maxBatch = 1024 // UIO_MAXIOV: the kernel's limit on vlen
	// gsoSegments is the most datagrams one UDP_SEGMENT message carries
	// (UDP_MAX_SEGMENTS, 128 since Linux 6.11); an older kernel refuses
	// trains that long, and the sender steps down to oldGSOSegments.
	// On the veth lab 128-datagram trains of 64 bytes move 60% more
	// datagrams a second than 64-datagram ones.
	gsoSegments    = 128
	oldGSOSegments = 64
	// gsoMax is the largest UDP payload of one GSO message.
	gsoMax = 65507
	// ctlLen is the room for the control message of each received
	// message (a UDP_GRO segment size).
	ctlLen = 64
)

// maxGSOSegments is gsoSegments, and stepGSOSegments what a refused train
// steps down to; tests raise them to make the kernel refuse.
var maxGSOSegments, stepGSOSegments = gsoSegments, oldGSOSegments

// sendmmsgCall is the sendmmsg(2) the sender makes; tests wrap it to make
// the kernel take fewer messages than asked.
var sendmmsgCall = sendmmsg

// Name implements engine.Backend.
func (Backend) Name() string { return "mmsg" }

// RunsFree implements engine.Free: both directions' calls go through the
// flow.
func (Backend) RunsFree(bool) bool { return true }

// Options implements engine.Configurable: batch, gso, gro.
func (Backend) Options() []engine.Option {
	return []engine.Option{
		{Name: "batch", Kind: engine.Count,
			Default: fmt.Sprintf("%d messages per call (%d with gso, each message a train of datagrams)", defaultBatch, gsoBatch),
			Help:    fmt.Sprintf("messages per sendmmsg/recvmmsg call, at most %d", maxBatch)},
		{Name: "gso", Kind: engine.Flag,
			Default: "off: one datagram per message",
			Help:    fmt.Sprintf("send trains of up to %d datagrams per message, cut up by the kernel or the NIC (UDP_SEGMENT, Linux 4.18+)", gsoSegments)},
		{Name: "gro", Kind: engine.Flag,
			Default: "off: one datagram per message",
			Help:    "receive trains of datagrams the kernel coalesced, several per message (UDP_GRO, Linux 5.0+)"},
	}
}

// Configure implements engine.Configurable.
func (b Backend) Configure(o engine.Options) (engine.Backend, error) {
	if n := o.Count("batch", 0); n > maxBatch {
		return nil, fmt.Errorf("backend mmsg option batch=%d: at most %d messages per call (the kernel's UIO_MAXIOV)", n, maxBatch)
	}
	b.batch = o.Count("batch", b.batch)
	b.gso = b.gso || o.Flag("gso")
	b.gro = b.gro || o.Flag("gro")
	return b, nil
}

func (b Backend) batchSize() int {
	switch {
	case b.batch > 0:
		return b.batch
	case b.gso:
		return gsoBatch
	}
	return defaultBatch
}

// Probe implements engine.Backend: an empty sendmmsg on a UDP socket.
func (Backend) Probe() error {
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
func (b Backend) Send(ctx context.Context, f *engine.Flow) error {
	if err := udpOnly(b.Name(), f); err != nil {
		return err
	}
	m := &sender{
		f:        f,
		s:        engine.NewSender(f),
		fd:       f.Sock.FD(),
		batch:    b.batchSize(),
		syscalls: f.Facts.Counter(engine.FactSyscalls),
	}
	if b.gso {
		m.setGSO()
	}
	f.Facts.Notef("batches of %d messages", m.batch)
	err := m.run()
	if errors.Is(err, errTimeUp) {
		return nil
	}
	return err
}

// sendmmsg is sendmmsg(2), the flow's blocking send.
func sendmmsg(f *engine.Flow, fd int, msgs []unix.Mmsghdr) (int, error) {
	return f.Sendmmsg(fd, msgs, unix.MSG_NOSIGNAL)
}

// errTimeUp is how sendBatch says that the time limit ended the send in
// the middle of a batch.
var errTimeUp = errors.New("mmsg: time limit reached")

type sender struct {
	f     *engine.Flow
	s     *engine.Sender
	fd    int
	batch int // messages per call
	segs  int // datagrams per message: 0 (one), or the GSO train length

	syscalls *atomic.Int64
	gsoMsgs  *atomic.Int64 // set while GSO is on

	// train is the pattern datagram, repeated once per datagram of a
	// GSO train, so that a train of pattern datagrams is one contiguous
	// buffer: one iovec per message instead of one per datagram. Every
	// datagram of a batch points into it.
	train []byte
	// arena holds a buffer for every datagram of a batch, end to end,
	// when the Sender writes them (Fills: a Source, or a Framing stamping
	// each datagram's header over the pattern).
	arena []byte
	dgs   [][]byte // the datagrams of the batch being sent
	iov   []unix.Iovec
	first []int // each message's first iovec
	msgs  []unix.Mmsghdr
	mdg   []int // datagrams per message
}

// setGSO turns UDP_SEGMENT on, or notes why not.
func (m *sender) setGSO() {
	bufLen := m.f.Spec.BufLen
	segs := min(maxGSOSegments, gsoMax/bufLen)
	if segs < 2 {
		m.f.Facts.Notef("GSO not used: %d-byte datagrams leave no room for two in one %d-byte message", bufLen, gsoMax)
		return
	}
	if err := unix.SetsockoptInt(m.fd, unix.SOL_UDP, unix.UDP_SEGMENT, bufLen); err != nil {
		m.f.Facts.Notef("GSO refused by the kernel (setsockopt UDP_SEGMENT: %v, needs Linux 4.18): sending one datagram per message", err)
		return
	}
	m.segs = segs
	m.gsoMsgs = m.f.Facts.Counter("gso_messages")
	m.f.Facts.Notef("GSO: trains of up to %d datagrams of %d bytes per message", segs, bufLen)
}

// stepGSO shortens the trains after the kernel refused one (a kernel
// before 6.11 takes at most 64 segments).
func (m *sender) stepGSO(why error) {
	m.f.Facts.Notef("the kernel refused trains of %d datagrams (sendmmsg: %v; UDP_MAX_SEGMENTS is 64 before Linux 6.11): trains of %d from now on", m.segs, why, stepGSOSegments)
	m.segs = stepGSOSegments
	m.f.Facts.Add("gso_stepdowns", 1)
}

// dropGSO turns UDP_SEGMENT off after the kernel refused a GSO send.
func (m *sender) dropGSO(why error) {
	unix.SetsockoptInt(m.fd, unix.SOL_UDP, unix.UDP_SEGMENT, 0)
	m.segs = 0
	m.f.Facts.Notef("GSO refused by the kernel on this path (sendmmsg: %v): sending one datagram per message from now on", why)
	m.f.Facts.Add("gso_fallbacks", 1)
}

// pacedSpan is the longest a paced sender holds datagrams to send them in
// one batch: at 1 Gbit/s that is 22 datagrams of 1400 bytes, at 1 Mbit/s
// each goes on its own, and any 10 ms of the flow stays within 2.5% of
// the rate.
const pacedSpan = 250 * time.Microsecond

// run fills batches from the Sender, one datagram at a time, and sends
// each; a batch the Sender could not fill is the last. Without a Source or
// a Framing every datagram is the pattern, and the Sender only grants
// byte counts (Take) of the one prefilled train.
func (m *sender) run() error {
	spec := m.f.Spec
	fills := m.s.Fills()
	per := max(m.segs, 1) // datagrams per message
	if !fills {
		m.train = datagrams(spec, per)
	}
	for {
		want := m.batch * max(m.segs, 1)
		if fills && len(m.arena) < want*spec.BufLen {
			m.arena = datagrams(spec, want)
		}
		m.dgs = m.dgs[:0]
		var first time.Time // when the batch's first datagram was due
		for len(m.dgs) < want {
			if len(m.dgs) == 0 {
				first = m.s.Now()
			} else if a := m.s.Ahead(); a > 0 && m.s.Now().Sub(first)+a > pacedSpan {
				break // paced: what is due goes now, not in a burst later
			}
			var d []byte
			if fills {
				i := len(m.dgs) * spec.BufLen
				p, err := m.s.Next(m.arena[i : i+spec.BufLen])
				if err != nil {
					return err
				}
				d = p
			} else {
				n, err := m.s.Take(spec.BufLen)
				if err != nil {
					return err
				}
				at := len(m.dgs) % per * spec.BufLen // its place in the train
				d = m.train[at : at+n]
			}
			if len(d) == 0 {
				break
			}
			m.dgs = append(m.dgs, d)
		}
		if len(m.dgs) > 0 {
			if err := m.sendBatch(); err != nil {
				return err
			}
		}
		if len(m.dgs) < want && m.s.Over() {
			return nil
		}
	}
}

// datagrams returns n buffers of spec.BufLen bytes end to end, placed as
// the spec asks, each holding the pattern from its start: datagrams of a
// train that lie next to each other share an iovec (build).
func datagrams(spec *engine.Spec, n int) []byte {
	t := *spec
	t.BufLen = n * spec.BufLen
	b := engine.Buffer(&t)
	for i := range n {
		engine.Pattern(b[i*spec.BufLen : (i+1)*spec.BufLen])
	}
	return b
}

// build lays out the messages for m.dgs: one per datagram, or GSO trains
// in which every datagram but the last has the full buffer length.
// Datagrams of a message that lie next to each other in memory (pattern
// trains) share one iovec: the kernel then copies the train in one go.
func (m *sender) build() {
	m.iov = m.iov[:0]
	m.first = m.first[:0]
	m.msgs = m.msgs[:0]
	m.mdg = m.mdg[:0]
	full := m.f.Spec.BufLen
	for i := 0; i < len(m.dgs); {
		j := i + 1
		if m.segs > 1 {
			for j < len(m.dgs) && j-i < m.segs && len(m.dgs[j-1]) == full {
				j++
			}
		}
		first := len(m.iov)
		for _, d := range m.dgs[i:j] {
			if k := len(m.iov) - 1; k >= first && adjoins(m.iov[k], d) {
				m.iov[k].SetLen(int(m.iov[k].Len) + len(d))
				continue
			}
			v := unix.Iovec{Base: &d[0]}
			v.SetLen(len(d))
			m.iov = append(m.iov, v)
		}
		m.first = append(m.first, first)
		m.mdg = append(m.mdg, j-i)
		i = j
	}
	// m.iov has stopped growing: point the messages into it.
	for k, first := range m.first {
		last := len(m.iov)
		if k+1 < len(m.first) {
			last = m.first[k+1]
		}
		var h unix.Mmsghdr
		h.Hdr.Iov = &m.iov[first]
		h.Hdr.SetIovlen(last - first)
		m.msgs = append(m.msgs, h)
	}
}

// adjoins reports whether d starts where v's bytes end.
func adjoins(v unix.Iovec, d []byte) bool {
	return uintptr(unsafe.Pointer(v.Base))+uintptr(v.Len) == uintptr(unsafe.Pointer(&d[0]))
}

// sendBatch sends the messages of m.dgs, in as many calls as it takes: a
// call may send only the first few, and the rest go in the next.
func (m *sender) sendBatch() error {
	m.build()
	c := m.f.Stats
	msgs, mdg := m.msgs, m.mdg
	for len(msgs) > 0 {
		n, err := sendmmsgCall(m.f, m.fd, msgs)
		m.syscalls.Add(1)
		m.s.Sent()
		if err != nil {
			if m.f.Cancelled() {
				return engine.ErrCancelled
			}
			if m.segs > 1 && mdg[0] > 1 && gsoRefused(err) {
				// The first message, a train, was refused: shorter trains,
				// or, when they are short already, GSO does not work
				// here. Lay out what is left again.
				c.AddError()
				if m.segs > stepGSOSegments {
					m.stepGSO(err)
				} else {
					m.dropGSO(err)
				}
				msgs, mdg = m.relayout(mdg)
				continue
			}
			queueFull := m.segs > 1 && errors.Is(err, unix.ENOBUFS)
			again, rerr := m.s.Retry(err)
			if again && queueFull {
				// The host's queue is the bottleneck: a qdisc that
				// shapes (tbf) cuts a train longer than its burst
				// into datagrams and drops those it has no room
				// for without a word (the send succeeds), so the
				// rest go one datagram per message, each refused
				// whole. Through a 50 Mbit/s tbf, 4 streams at
				// -b 100M lost 40% with trains, none without.
				m.queueGSO()
				msgs, mdg = m.relayout(mdg)
			}
			if again {
				continue
			}
			if rerr == nil {
				return errTimeUp
			}
			if !errors.Is(err, unix.ENOBUFS) { // Retry counted those
				c.AddError()
			}
			return engine.IOErr("sendmmsg", rerr)
		}
		var bytes, dgs int
		for i := range n {
			bytes += int(msgs[i].Len)
			dgs += mdg[i]
		}
		if n > 0 {
			c.AddIO(bytes, dgs)
		}
		if m.gsoMsgs != nil && m.segs > 1 {
			m.gsoMsgs.Add(int64(n))
		}
		msgs, mdg = msgs[n:], mdg[n:]
	}
	return nil
}

// relayout lays out again what is left of the batch after a change of the
// train length: left are the per-message datagram counts not yet sent.
func (m *sender) relayout(left []int) ([]unix.Mmsghdr, []int) {
	skip := 0
	for _, k := range m.mdg[:len(m.mdg)-len(left)] {
		skip += k
	}
	m.dgs = m.dgs[skip:]
	m.build()
	return m.msgs, m.mdg
}

// queueGSO turns UDP_SEGMENT off after the host's queue refused a train.
func (m *sender) queueGSO() {
	unix.SetsockoptInt(m.fd, unix.SOL_UDP, unix.UDP_SEGMENT, 0)
	m.segs = 0
	m.f.Facts.Notef("the host's queue refused a train of datagrams (ENOBUFS): one datagram per message from then on, as a shaping qdisc cuts a train up and drops what it has no room for unseen")
	m.f.Facts.Add("gso_fallbacks", 1)
}

// gsoRefused tells the errors of a GSO message the same datagrams would not
// get one at a time: a device or path without the offload (EIO), too many
// segments (EINVAL), a segment over the path MTU (EMSGSIZE).
func gsoRefused(err error) bool {
	return err == unix.EIO || err == unix.EINVAL || err == unix.EMSGSIZE
}

// Recv implements engine.Backend.
func (b Backend) Recv(ctx context.Context, f *engine.Flow) error {
	if err := udpOnly(b.Name(), f); err != nil {
		return err
	}
	gro := false
	if b.gro {
		if err := unix.SetsockoptInt(f.Sock.FD(), unix.SOL_UDP, unix.UDP_GRO, 1); err != nil {
			f.Facts.Notef("GRO refused by the kernel (setsockopt UDP_GRO: %v, needs Linux 5.0): one datagram per message", err)
		} else {
			gro = true
			f.Facts.Notef("GRO: a message may carry several datagrams")
		}
	}
	return recvLoop(f, b.batchSize(), gro)
}

// recvLoop receives until the sentinel, a failed call, or cancellation.
// recvmmsg blocks until the first message arrives and then takes what is
// queued, up to batch messages (MSG_WAITFORONE); without that flag a
// blocking call would wait for a whole batch.
func recvLoop(f *engine.Flow, batch int, gro bool) error {
	spec := f.Spec
	fd := f.Sock.FD()
	syscalls := f.Facts.Counter(engine.FactSyscalls)
	var groMsgs *atomic.Int64
	if gro {
		groMsgs = f.Facts.Counter("gro_messages")
	}
	size := spec.BufLen
	if gro {
		size = max(size, 65535)
	}
	arena := make([]byte, batch*size)
	ctl := make([]byte, batch*ctlLen)
	iov := make([]unix.Iovec, batch)
	msgs := make([]unix.Mmsghdr, batch)
	for i := range msgs {
		iov[i] = unix.Iovec{Base: &arena[i*size]}
		iov[i].SetLen(size)
		msgs[i].Hdr.Iov = &iov[i]
		msgs[i].Hdr.SetIovlen(1)
	}
	mod := newModerator(f)
	deliver := make([]message, 0, batch) // the received messages of one call
	for {
		if gro {
			for i := range msgs {
				msgs[i].Hdr.Control = &ctl[i*ctlLen]
				msgs[i].Hdr.SetControllen(ctlLen)
			}
		}
		n, err := f.Recvmmsg(fd, msgs, unix.MSG_WAITFORONE)
		syscalls.Add(1)
		if f.Cancelled() {
			// The shutdown woke the call (it returns empty messages or
			// an error): nothing more comes.
			f.Stats.AddCall()
			return nil
		}
		if err != nil {
			f.Stats.AddError()
			return engine.IOErr("recvmmsg", err)
		}
		if n == 0 {
			f.Stats.AddCall()
			return nil
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
			if d == 1 && l <= spec.SentinelMax {
				end = true
				break
			}
			if d > 1 && last <= spec.SentinelMax && last < seg {
				// The sentinel rode at the end of a GRO train.
				d--
				l -= last
				end = true
			}
			if d > 1 {
				groMsgs.Add(1)
			}
			bytes += l
			dgs += d
			deliver = append(deliver, message{arena[i*size : i*size+l], seg})
			if end {
				break
			}
		}
		if bytes == 0 {
			f.Stats.AddCall()
		} else {
			f.Stats.AddIO(bytes, dgs)
		}
		for _, m := range deliver {
			if err := engine.ConsumeTrain(f, m.p, m.seg); err != nil {
				return err
			}
		}
		if end {
			return nil
		}
		if err := mod.pause(n, batch, bytes); err != nil {
			if f.Cancelled() {
				return nil
			}
			return err
		}
	}
}

// message is one received message: a datagram, or with GRO a train of
// datagrams of seg bytes (the last may be shorter; seg 0: one datagram).
type message struct {
	p   []byte
	seg int
}

// moderator is interrupt moderation for a receiver: after a call that
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
type moderator struct {
	f      *engine.Flow
	rcvbuf int // SO_RCVBUF as the kernel reports it
	last   time.Time
	pauses *atomic.Int64 // taken at the first pause
}

const (
	rxPause    = 50 * time.Microsecond  // the pause asked for
	rxPauseMin = 150 * time.Microsecond // the least room, in time, to pause in
)

func newModerator(f *engine.Flow) *moderator {
	rcvbuf, err := f.Sock.BufSize(false)
	if err != nil {
		rcvbuf = 212992 // the usual default
	}
	return &moderator{f: f, rcvbuf: rcvbuf, last: time.Now()}
}

// pause is called after each call that received n messages of batch,
// carrying bytes bytes; the datagrams a call takes arrived since the
// previous call returned, pause included. It fails only when the flow was
// cancelled during the pause.
func (m *moderator) pause(n, batch, bytes int) error {
	now := time.Now()
	gap := now.Sub(m.last)
	m.last = now
	if n <= 0 || n >= batch {
		return nil
	}
	// A queued message costs its payload plus about 768 bytes of skb (its
	// truesize), which the buffer counts; n of them arrived in about gap,
	// so a quarter of the buffer fills in gap*capacity/(4n).
	capacity := m.rcvbuf / (bytes/n + 768)
	if room := gap * time.Duration(capacity) / time.Duration(4*n); room < rxPauseMin {
		return nil
	}
	if m.pauses == nil {
		m.pauses = m.f.Facts.Counter("recv_pauses")
	}
	m.pauses.Add(1)
	return m.f.Sleep(rxPause)
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

// Footprint implements engine.Footprinter: a batch of buffers, each a
// whole GSO train (at most gsoMax bytes) when sending with gso, and at
// least gsoMax bytes when receiving with gro.
func (b Backend) Footprint(spec *engine.Spec, send bool) int64 {
	size := int64(max(spec.BufLen, 0))
	switch {
	case send && b.gso && size > 0:
		size *= int64(max(1, min(maxGSOSegments, gsoMax/int(size))))
	case !send && b.gro:
		size = max(size, gsoMax)
	}
	return int64(b.batchSize()) * size
}
