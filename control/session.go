package control

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/hostload"
	"github.com/blastnet/blast/internal/verify"
)

// stream is one data connection of a running test.
type stream struct {
	id            int
	sock          *engine.Socket
	fd            int
	sender        bool
	local, remote netip.AddrPort
	stats         engine.Counters
	spec          engine.Spec
	// flow is the receiving flow prepare set up before the peer started
	// sending (an afxdp receiver), and release undoes that.
	flow    *engine.Flow
	release func() error

	cancel context.CancelFunc
	done   chan struct{}
	err    error // what Send/Recv returned, nil on a normal end
	// facts the backend reported, copied when Send/Recv returned, and
	// what its thread spent.
	facts  engine.FactSample
	thread *wire.ThreadTimes
	// udp counts the datagrams of a UDP stream (nil on TCP).
	udp *udpFraming
	// source feeds a sending stream and sink takes what a receiving one
	// gets (nil: blast's pattern, discarded): the client's -F file, or
	// iperf3's repeating payload.
	source io.Reader
	sink   io.Writer
	// check is --verify's check of a receiving stream (nil: none).
	check *verify.Sink

	// Sampling state, guarded by session.mu.
	base, last                     engine.Sample
	retransBase, lastRetrans       int64
	haveTCP                        bool
	maxCwnd, maxWnd, minRTT, maxRT int64
	sumRTT, nRTT                   int64
	pmtu, mss, acked               int64
	// limitBase and limitLast are TCP_INFO's busy, rwnd-limited and
	// sndbuf-limited times at the start and at the last sample.
	limitBase, limitLast wire.TCPLimits
	udpBase, lastUDP     wire.UDPStats
	// endSnap and endUDP are the counts at the end sample (session.ended).
	endSnap engine.Sample
	endUDP  wire.UDPStats
	// byAck: this TCP sender of a time-limited test counts the bytes the
	// receiver acknowledged (TCP_INFO's bytes_acked, from ackBase on),
	// not those written: a write only fills the socket buffer, which
	// holds seconds of a slow link, and a rate of bytes written would
	// run above the link's. ackCount is the count at the last sample.
	byAck             bool
	ackBase, ackCount int64
}

func newStream(id int, c *engine.Socket, sender bool) *stream {
	return &stream{id: id, sock: c, fd: c.FD(), sender: sender, done: make(chan struct{}),
		local: c.LocalAddr(), remote: c.RemoteAddr()}
}

// sampleHost reads the host's counters (--sys) and returns the load since
// the last reading (nil: --sys is off, the first reading, or /proc could
// not be read, which the Result's notes say once). Call it with s.mu held.
func (s *session) sampleHost(first bool) *hostload.Load {
	if !s.sys || s.hostErr != nil {
		return nil
	}
	cur, err := hostload.Read(s.iface)
	if err != nil && s.iface != "" {
		s.iface = "" // the interface went away: CPU and counters still
		cur, err = hostload.Read("")
	}
	if err != nil {
		s.hostErr = err
		s.res.Notes = append(s.res.Notes, "no host load (--sys): "+err.Error())
		return nil
	}
	prev := s.hostLast
	s.hostLast = cur
	if first {
		s.hostStart = cur
		return nil
	}
	l := hostload.Between(prev, cur)
	return &l
}

// udpStats are the stream's datagram counts: what the sender's backend
// sent (a datagram stamped when the flow was stopped may not have left),
// or what the receiver's framing counted, exactly once the flow is over
// (final), else as last published.
func (st *stream) udpStats(final bool) wire.UDPStats {
	if st.sender {
		return wire.UDPStats{Packets: st.stats.Snapshot().Datagrams}
	}
	if final {
		return st.udp.final()
	}
	return st.udp.stats()
}

func unmap(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// session runs the data streams of one test on one side and samples them.
type session struct {
	res       *result.Result
	streams   []*stream
	backend   engine.Backend // sends
	rxBackend engine.Backend // receives
	// rxAuto: rxBackend was not asked for; if it only sends, receiving
	// streams use readwrite (and the Result says so).
	rxAuto   bool
	rxUsedMu sync.Mutex
	rxUsed   string
	// udp: the streams are UDP, with 64-bit sequence numbers if udp64.
	udp, udp64 bool
	// rate paces each sending stream (bits/s, 0: unpaced), burst buffers
	// at a time.
	rate  float64
	burst int
	// affinity pins every stream's thread to these CPUs (nil: not
	// pinned); repeat fills UDP datagrams with iperf3's repeating
	// payload.
	affinity []int
	repeat   bool
	// endAtStop ends this side's measurement when it stopped sending
	// (sendEnd), the moment the client ended the test: the last interval
	// and every stream's time end there, and what still arrived after it
	// is counted in them. Without it, the last interval ends when finish
	// is called and receivers when they got the count (recvEnd).
	endAtStop bool
	// sys samples the host's load (--sys) at every interval, with the
	// packets of iface; hostStart is the reading at the start of the
	// measured period, hostLast the latest.
	sys                 bool
	iface               string
	hostStart, hostLast hostload.Sample
	hostErr             error
	// sendFor ends a time-limited test's senders on their own clock (0:
	// when stopped), so that a sending server stops with the test and not
	// a round trip after it, when the client's receivers have stopped
	// counting.
	sendFor    time.Duration
	interval   time.Duration
	omit       time.Duration
	onInterval func(*result.Result, *result.Interval)
	// endAt is when a time-limited test will end (zero: not known): no
	// interval is closed just before it, the closing sample covers it.
	endAt time.Time
	// sendEnd is when this side stopped sending (zero: at the end).
	sendEnd time.Time
	// startAt, when set, is when the test's time starts (run's start
	// otherwise): before the peer was told it may send.
	startAt time.Time
	// recvEnd is when the receivers got a byte-count test's count (zero:
	// at the end).
	recvEnd atomicTime
	// ended: the ticker took the end sample of a time-limited test at
	// endTime (endAt, or as soon after it as the host ran the ticker).
	// The test's figures are the streams' counts then (endSnap, endUDP):
	// a receiver's window ends when the test does, and what arrives after
	// it (a queue on the path draining) is reported apart, never folded
	// into the last interval.
	ended   bool
	endTime time.Time

	mu       sync.Mutex
	t0       time.Time // data started
	start    time.Time // measured period started (t0 + omit)
	lastTick time.Time
	omitting bool
	finished bool
	cpu      cpuMeter

	tickStop chan struct{}
	tickDone chan struct{}
}

// udpRcvBuf is the receive buffer a UDP receiver asks for when the test
// sets no window: the kernel's default (208 KiB) overflows in a few
// milliseconds of a fast sender, and loss the receiver caused itself is
// not the network's.
const udpRcvBuf = 4 << 20

// dataSockOpts are the socket options of a test's data streams, from its
// parameters; udpReceiver asks for udpRcvBuf when -w is not given.
func dataSockOpts(p *wire.Params, udpReceiver bool) engine.SockOpts {
	tos := engine.NoTOS
	if p.TOS > 0 {
		tos = int(p.TOS)
	}
	so := engine.SockOpts{SndBuf: int(p.Window), RcvBuf: int(p.Window), TOS: tos,
		MaxPacingRate: int64(p.FQRate) / 8, DontFragment: p.DontFragment != 0}
	if !p.UDP {
		so.Congestion = p.Congestion
	}
	if bool(p.UDP) && udpReceiver && p.Window == 0 {
		so.RcvBuf, so.ForceBuf = udpRcvBuf, true
	}
	return so
}

// splitBytes shares a byte budget over n senders so the total is exact.
func splitBytes(total int64, n, i int) int64 {
	if total <= 0 {
		return 0
	}
	share := total / int64(n)
	if int64(i) < total%int64(n) {
		share++
	}
	return share
}

// run starts one goroutine per stream and the interval reporter.
// byteLimit is the total the senders of this side move (0: until
// stopped); blockLen the size of each write and read.
func (s *session) run(ctx context.Context, blockLen int, byteLimit int64) {
	now := time.Now()
	if !s.startAt.IsZero() && s.startAt.Before(now) {
		now = s.startAt
	}
	s.mu.Lock()
	s.t0, s.start, s.lastTick = now, now, now
	s.omitting = s.omit > 0
	if s.sendFor > 0 {
		// A time-limited test ends sendFor after its data started, on
		// this side's clock: its senders stop then, and the ticker
		// takes the counts that are the test's.
		s.endAt = now.Add(s.sendFor)
	}
	s.sampleHost(true)
	s.mu.Unlock()

	senders := 0
	for _, st := range s.streams {
		if st.sender {
			senders++
			if ti, ok := readTCPInfo(st.sock); ok && s.sendFor > 0 && !s.udp {
				st.byAck, st.ackBase = true, ti.BytesAcked
			}
		}
	}
	si := 0
	for _, st := range s.streams {
		if st.flow == nil {
			s.setSpec(st, blockLen)
		}
		if st.sender {
			st.spec.Duration = s.sendFor
			st.spec.Bytes = splitBytes(byteLimit, senders, si)
			si++
			if byteLimit > 0 && st.spec.Bytes == 0 {
				close(st.done) // nothing to send on this one
				continue
			}
		}
		sctx, cancel := context.WithCancel(ctx)
		st.cancel = cancel
		go func(st *stream) {
			defer close(st.done)
			f := st.flow
			if f == nil {
				f = &engine.Flow{Sock: st.sock, Spec: &st.spec, Stats: &st.stats}
			}
			var err error
			if st.sender {
				err = engine.Run(sctx, s.backend, f, true)
			} else {
				err = s.recv(sctx, f)
			}
			if st.release != nil {
				if rerr := st.release(); rerr != nil && err == nil {
					err = rerr
				}
			}
			if sctx.Err() != nil && (errors.Is(err, context.Canceled) || isTimeout(err)) {
				err = nil // we stopped it
			}
			st.err = err
			st.facts = f.Facts.Snapshot()
			st.thread = wire.ThreadTimesOf(f)
		}(st)
	}

	s.tickStop = make(chan struct{})
	s.tickDone = make(chan struct{})
	go s.ticker()
}

// repeatPayload sends iperf3's repeating payload, '0' to '9' over and
// over: after each UDP header, or as the source of the TCP senders.
func (s *session) repeatPayload() {
	s.repeat = true
	if !s.udp {
		s.each(true, func(st *stream) { st.source = repeatingSource{} })
	}
}

// setSpec sets what a stream moves: blockLen bytes per call, at the
// session's rate, with iperf3's datagram header on UDP.
func (s *session) setSpec(st *stream, blockLen int) {
	st.spec = engine.Spec{Protocol: engine.TCP, BufLen: blockLen, Rate: s.rate, Burst: s.burst,
		Source: st.source, Sink: st.sink, Affinity: s.affinity}
	if s.udp {
		st.udp = newUDPFraming(s.udp64)
		st.udp.repeat = s.repeat
		st.spec.Protocol, st.spec.Framing = engine.UDP, st.udp
	}
	s.verifySpec(st)
}

// prepare sets up the receiving streams whose backend must be ready
// before the peer sends (engine.Preparer: afxdp attaches its XDP program),
// so that no datagram slips past it to the socket. Call it once the
// streams are connected and before the peer is told to start; run uses
// the prepared flows. A backend that cannot prepare is noted, and its
// stream runs unprepared.
func (s *session) prepare(ctx context.Context, blockLen int) {
	b := s.rxBackend
	if b == nil {
		b = s.backend
	}
	if _, ok := b.(engine.Preparer); !ok {
		return
	}
	for _, st := range s.streams {
		if st.sender {
			continue
		}
		s.setSpec(st, blockLen)
		f := &engine.Flow{Sock: st.sock, Spec: &st.spec, Stats: &st.stats}
		release, err := engine.Prepare(ctx, b, f)
		if err != nil {
			s.res.Notes = append(s.res.Notes, fmt.Sprintf("stream %d: %s could not be set up before the peer sent (%v)", st.id, b.Name(), err))
			continue
		}
		st.flow, st.release = f, release
	}
}

// recv receives with the receive backend, falling back to readwrite when
// that backend was not asked for and turns out to only send.
func (s *session) recv(ctx context.Context, f *engine.Flow) error {
	b := s.rxBackend
	if b == nil {
		b = s.backend
	}
	err := engine.Run(ctx, b, f, false)
	if s.rxAuto && errors.Is(err, engine.ErrNotSupported) && f.Stats.Snapshot().Calls == 0 && b.Name() != engine.DefaultBackend {
		if rw, lerr := engine.Lookup(engine.DefaultBackend); lerr == nil {
			b = rw
			err = engine.Run(ctx, b, f, false)
		}
	}
	s.rxUsedMu.Lock()
	s.rxUsed = b.Name()
	s.rxUsedMu.Unlock()
	return err
}

// backendWords names the backends that moved this side's bytes.
func (s *session) backendWords() string {
	var send, recv bool
	for _, st := range s.streams {
		if st.sender {
			send = true
		} else {
			recv = true
		}
	}
	s.rxUsedMu.Lock()
	rx := s.rxUsed
	s.rxUsedMu.Unlock()
	if rx == "" {
		rx = s.backend.Name()
		if s.rxBackend != nil {
			rx = s.rxBackend.Name()
		}
	}
	switch {
	case send && recv && rx != s.backend.Name():
		return "send " + s.backend.Name() + ", receive " + rx
	case recv && !send:
		return rx
	}
	return s.backend.Name()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// ticker reports intervals, ends the omit period and takes a
// time-limited test's end sample.
func (s *session) ticker() {
	defer close(s.tickDone)
	for {
		s.mu.Lock()
		next, end := s.nextTickLocked()
		s.mu.Unlock()
		if next.IsZero() {
			<-s.tickStop
			return
		}
		t := time.NewTimer(time.Until(next))
		select {
		case <-s.tickStop:
			t.Stop()
			return
		case <-t.C:
			s.mu.Lock()
			// The interval ends when its counts are read, not when
			// the timer was due: a busy host runs this goroutine
			// late, and counts read 80 ms late in an interval
			// labelled 1 s long made a rate 8% above the link's.
			now := time.Now()
			switch {
			case s.omitting && !now.Before(s.t0.Add(s.omit)):
				s.sampleLocked(now, false)
				s.endOmitLocked(now)
			case end:
				s.mu.Unlock()
				s.endSample()
				s.mu.Lock()
			case s.nearEndLocked(now):
				// A tick the host ran this late, within a tenth
				// of an interval of the end: the end sample
				// closes this interval, not a sliver after it.
			default:
				s.sampleLocked(now, false)
			}
			s.mu.Unlock()
		}
	}
}

// nextTickLocked is when the ticker wakes next (zero: never again) and
// whether that is the test's end. An interval that would close within a
// tenth of an interval of the end is not closed: the end closes it.
func (s *session) nextTickLocked() (next time.Time, end bool) {
	if s.ended || s.finished {
		return time.Time{}, false
	}
	if s.interval > 0 {
		next = s.lastTick.Add(s.interval)
	}
	if s.omitting {
		if oe := s.t0.Add(s.omit); next.IsZero() || oe.Before(next) {
			return oe, false
		}
	}
	if !s.endAt.IsZero() && (next.IsZero() || s.nearEndLocked(next)) {
		if s.udp {
			// UDP's counts are read when the test is over (the
			// receiver's datagram counts are exact only then).
			return time.Time{}, false
		}
		return s.endAt, true
	}
	return next, false
}

// nearEndLocked says whether t is within a tenth of an interval of a
// time-limited test's end (or past it).
func (s *session) nearEndLocked(t time.Time) bool {
	return !s.endAt.IsZero() && !s.omitting && t.After(s.endAt.Add(-s.interval/10))
}

// endWait bounds how long the end sample waits for the senders to stop
// at the test's end (a sender returns within milliseconds of its time
// limit: see the backends' cancel timing checks).
const endWait = time.Second

// endSample takes a time-limited TCP test's end sample once its time is
// up: it waits (up to endWait) for this side's senders, which stop on
// their own at the end, so that every byte they wrote is in the test,
// then reads every stream's counts. A receiver's count then is what
// arrived in the test's time.
func (s *session) endSample() {
	t := time.NewTimer(endWait)
	defer t.Stop()
	s.each(true, func(st *stream) {
		select {
		case <-st.done:
		case <-t.C:
		}
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended && !s.finished {
		s.endLocked(time.Now())
	}
}

// endLocked takes the end sample of a time-limited test at now: it
// closes the last interval, and the counts now are the test's.
func (s *session) endLocked(now time.Time) {
	s.sampleLocked(now, true)
	s.ended, s.endTime = true, now
	for _, st := range s.streams {
		st.endSnap, st.endUDP = st.last, st.lastUDP
	}
}

// endOmitLocked starts the measured period: what was counted so far is
// forgotten, as iperf_reset_stats does.
func (s *session) endOmitLocked(now time.Time) {
	s.omitting = false
	s.start = now
	s.lastTick = now
	s.hostStart = s.hostLast
	for _, st := range s.streams {
		st.base = st.stats.Snapshot()
		st.last = st.base
		if ti, ok := readTCPInfo(st.sock); ok {
			st.retransBase = ti.TotalRetrans
			st.lastRetrans = ti.TotalRetrans
			st.ackBase = ti.BytesAcked
			st.limitBase = wire.LimitsOf(ti)
			st.limitLast = st.limitBase
		}
		st.ackCount = 0
		st.maxCwnd, st.maxWnd, st.minRTT, st.maxRT, st.sumRTT, st.nRTT = 0, 0, 0, 0, 0, 0
		if st.udp != nil {
			st.udpBase = st.udpStats(s.finished)
			st.lastUDP = st.udpBase
		}
	}
}

// sampleLocked closes the interval that ends at now. final is the
// closing sample of the test, which iperf3 drops when it is very short and
// moved nothing; sampleLocked reports whether it kept the interval.
func (s *session) sampleLocked(now time.Time, final bool) bool {
	iv := &result.Interval{Omitted: s.omitting}
	startSec := s.lastTick.Sub(s.start).Seconds()
	endSec := now.Sub(s.start).Seconds()
	if s.omitting {
		startSec = s.lastTick.Sub(s.t0).Seconds()
		endSec = now.Sub(s.t0).Seconds()
	}
	moved := false
	for _, st := range s.streams {
		cur := st.stats.Snapshot()
		d := cur.Sub(st.last)
		si := result.StreamInterval{ID: st.id, Socket: st.fd, Sender: st.sender, Start: startSec, End: endSec,
			Bytes: d.Bytes, Omitted: s.omitting, IO: d, Retransmits: -1}
		ti, tiOK := readTCPInfo(st.sock)
		if st.byAck {
			// Acknowledged, and never more than was written (the
			// FIN's sequence number is acknowledged too).
			count := cur.Bytes - st.base.Bytes
			if tiOK {
				count = min(ti.BytesAcked-st.ackBase, count)
			}
			count = max(count, st.ackCount)
			si.Bytes = count - st.ackCount
			st.ackCount = count
		}
		if si.Bytes > 0 {
			moved = true
		}
		if tiOK {
			st.haveTCP = true // retransmits before the first sample count in it
			if st.sender {
				t := ti
				si.TCP = &t
				si.Retransmits = ti.TotalRetrans - st.lastRetrans
				st.lastRetrans = ti.TotalRetrans
				st.maxCwnd = max(st.maxCwnd, ti.SndCwnd)
				st.maxWnd = max(st.maxWnd, ti.SndWnd)
				st.pmtu, st.mss, st.acked = ti.PMTU, ti.SndMSS, ti.BytesAcked
				st.limitLast = wire.LimitsOf(ti)
				st.maxRT = max(st.maxRT, ti.RTT)
				if st.minRTT == 0 || ti.RTT < st.minRTT {
					st.minRTT = ti.RTT
				}
				st.sumRTT += ti.RTT
				st.nRTT++
			}
		}
		st.last = cur
		if st.udp != nil {
			u := st.udpStats(s.finished)
			d := u.Sub(st.lastUDP)
			si.UDP = &d
			st.lastUDP = u
		}
		iv.Streams = append(iv.Streams, si)
	}
	iv.Load = s.sampleHost(false)
	length := now.Sub(s.lastTick)
	s.lastTick = now
	if final && (s.interval == 0 || (length < s.interval/10 && !moved)) {
		return false
	}
	s.res.Intervals = append(s.res.Intervals, iv)
	if s.onInterval != nil {
		s.onInterval(s.res, iv)
	}
	return true
}

// stopTicker stops interval reports (the test is ending).
func (s *session) stopTicker() {
	if s.tickStop == nil {
		return
	}
	select {
	case <-s.tickStop:
	default:
		close(s.tickStop)
	}
	<-s.tickDone
	s.mu.Lock()
	late := !s.ended && !s.finished && !s.omitting && !s.udp && !s.endAt.IsZero() && !time.Now().Before(s.endAt)
	s.mu.Unlock()
	if late {
		// The test's time is up and the ticker did not run in time to
		// see it: the end sample is now.
		s.endSample()
	}
}

// each calls fn on the streams of one direction.
func (s *session) each(sender bool, fn func(*stream)) {
	for _, st := range s.streams {
		if st.sender == sender {
			fn(st)
		}
	}
}

// allDone says whether every stream has ended (its byte count sent or
// received, or its file sent).
func (s *session) allDone() bool {
	for _, st := range s.streams {
		select {
		case <-st.done:
		default:
			return false
		}
	}
	return true
}

// stop cancels the streams of one direction and waits for them.
func (s *session) stop(sender bool) {
	s.each(sender, func(st *stream) {
		if st.cancel != nil {
			st.cancel()
		}
	})
	s.each(sender, func(st *stream) { <-st.done })
}

// wait waits up to d for the streams of one direction to end by
// themselves, and reports whether they all did.
func (s *session) wait(sender bool, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	ok := true
	s.each(sender, func(st *stream) {
		if !ok {
			return
		}
		select {
		case <-st.done:
		case <-t.C:
			ok = false
		}
	})
	return ok
}

// ackWait bounds waitAcked at the end of a test: the time the bytes still
// queued in the senders' sockets take at the rate the test was
// acknowledged at, twice over, from 1 s to 10 s. A slow link holds
// seconds of a socket buffer, and a --repeat run started while the last
// one's tail still crossed it would share the link with it.
func (s *session) ackWait() time.Duration {
	var left int
	var acked int64
	s.each(true, func(st *stream) {
		if n, err := queued(st.sock, false); err == nil {
			left += n
		}
		acked += st.ackCount
	})
	s.mu.Lock()
	secs := s.lastTick.Sub(s.start).Seconds()
	s.mu.Unlock()
	d := time.Second
	if acked > 0 && secs > 0 {
		d = max(d, time.Duration(2*float64(left)/(float64(acked)/secs)*float64(time.Second)))
	}
	return min(d, 10*time.Second)
}

// waitAcked waits up to d until the peer has acknowledged everything the
// sending streams wrote, so that the receiver has the bytes before the
// test ends.
func (s *session) waitAcked(d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		left := 0
		s.each(true, func(st *stream) {
			if n, err := queued(st.sock, false); err == nil {
				left += n
			}
		})
		if left == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// drain lets the receiving streams read what is already on its way, then
// stops them: it waits until no bytes are queued and none arrived for
// quiet, or until maxWait has passed. It returns when the last byte came
// in (or when it started, if none did): the end of the receivers' test.
func (s *session) drain(quiet, maxWait time.Duration) time.Time {
	start := time.Now()
	deadline := start.Add(maxWait)
	lastTotal := s.total(false)
	lastGrowth, still := start, start
	for time.Now().Before(deadline) {
		var total int64
		inq := 0
		live := false
		s.each(false, func(st *stream) {
			total += st.stats.Snapshot().Bytes
			if n, err := queued(st.sock, true); err == nil {
				inq += n
			}
			select {
			case <-st.done:
			default:
				live = true
			}
		})
		now := time.Now()
		if total != lastTotal {
			lastGrowth = now
		}
		if !live {
			break
		}
		if total != lastTotal || inq > 0 {
			lastTotal = total
			still = now
		} else if now.Sub(still) >= quiet {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	s.stop(false)
	if s.total(false) != lastTotal {
		lastGrowth = time.Now()
	}
	return lastGrowth
}

// finish takes the closing sample and fills the Result's streams. Call it
// once every stream goroutine is over.
func (s *session) finish(now time.Time) {
	s.stopTicker()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		return
	}
	s.finished = true
	if s.t0.IsZero() { // never started
		return
	}
	clamped := false
	lastByte := now
	if s.ended {
		// The end sample closed the last interval: the test ends
		// there, for senders and receivers alike.
		now = s.endTime
	} else if s.endAtStop && !s.sendEnd.IsZero() && s.sendEnd.Before(now) {
		// The counters are read now, the interval ends at the stop.
		now = s.sendEnd
		if now.Before(s.lastTick) {
			now = s.lastTick
		}
		clamped = true
	}
	if s.ended {
		// Nothing to sample: the end sample was the last.
	} else if s.omitting {
		// The test ended inside the omit period: nothing was measured.
		s.sampleLocked(now, true)
		s.endOmitLocked(now)
	} else if prev := s.lastTick; !s.sampleLocked(now, true) && clamped && len(s.res.Intervals) > 0 {
		// The test stopped just after an interval closed and nothing
		// moved since: the summary ends with that interval.
		now = prev
	}
	if s.sys && s.hostErr == nil {
		l := hostload.Between(s.hostStart, s.hostLast)
		s.res.Load = &l
	}
	secs := now.Sub(s.start).Seconds()
	s.res.Streams = nil
	for _, st := range s.streams {
		s.res.Streams = append(s.res.Streams, s.finishStreamLocked(st, secs, clamped, lastByte))
	}
	for _, st := range s.streams {
		if st.sender && st.haveTCP {
			s.res.HasRetransmits = true
		}
	}
}

// finishStreamLocked is one stream's totals at the test's end: secs is
// the test's measured time, clamped whether it ended at the senders'
// stop, lastByte when the last byte came (for what drained after the
// end).
func (s *session) finishStreamLocked(st *stream, secs float64, clamped bool, lastByte time.Time) *result.StreamResult {
	cur := st.stats.Snapshot()
	end := cur
	if s.ended {
		end = st.endSnap
	}
	d := end.Sub(st.base)
	if st.byAck {
		d.Bytes = st.ackCount
	}
	ssecs := secs
	if st.sender && !clamped && !s.ended && !s.sendEnd.IsZero() && s.sendEnd.After(s.start) {
		ssecs = s.sendEnd.Sub(s.start).Seconds()
	}
	if re := s.recvEnd.load(); !st.sender && !clamped && !s.ended && !re.IsZero() && re.After(s.start) {
		ssecs = re.Sub(s.start).Seconds()
	}
	sr := &result.StreamResult{ID: st.id, Socket: st.fd, Sender: st.sender, Local: st.local, Remote: st.remote,
		Bytes: d.Bytes, Seconds: ssecs, PeerBytes: -1, PeerSeconds: -1, Retransmits: -1, IO: cur, Facts: st.facts, Thread: st.thread}
	if s.ended && !st.sender && cur.Bytes > end.Bytes {
		// What arrived after the test's end: a queue on the path
		// draining. Reported apart, in none of the figures.
		sr.Drained = &wire.Drained{Bytes: cur.Bytes - end.Bytes, Seconds: max(lastByte.Sub(s.endTime).Seconds(), 0)}
	}
	if st.udp != nil {
		u := st.udpStats(true)
		if s.ended {
			if !st.sender && sr.Drained != nil {
				dr := u.Sub(st.endUDP)
				sr.Drained.Datagrams = dr.Packets
			}
			u = st.endUDP
		}
		u = u.Sub(st.udpBase)
		sr.UDP = &u
	}
	sr.Verify = st.verifyCounts()
	if st.sender && st.haveTCP {
		sr.Retransmits = st.lastRetrans - st.retransBase
		sr.MaxSndCwnd, sr.MaxSndWnd, sr.MinRTT, sr.MaxRTT = st.maxCwnd, st.maxWnd, st.minRTT, st.maxRT
		sr.PMTU, sr.MSS, sr.Acked = st.pmtu, st.mss, st.acked
		sr.Limits = st.limitLast.Sub(st.limitBase)
		if st.nRTT > 0 {
			sr.MeanRTT = st.sumRTT / st.nRTT
		}
	}
	return sr
}

// firstErr returns the first error a stream ended with.
func (s *session) firstErr() error {
	for _, st := range s.streams {
		select {
		case <-st.done:
			if st.err != nil {
				return st.err
			}
		default:
		}
	}
	return nil
}

// failed returns a channel closed when any stream ends with an error, and
// a stop function for the watcher.
func (s *session) watchErrors() (<-chan error, func()) {
	ch := make(chan error, 1)
	quit := make(chan struct{})
	go func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				if err := s.firstErr(); err != nil {
					ch <- err
					return
				}
			}
		}
	}()
	return ch, func() { close(quit) }
}

// announce lists the connected streams in the Result before the test
// runs, so the start of the output can name them.
func (s *session) announce() {
	s.res.Streams = nil
	for _, st := range s.streams {
		s.res.Streams = append(s.res.Streams, &result.StreamResult{ID: st.id, Socket: st.fd, Sender: st.sender,
			Local: st.local, Remote: st.remote, PeerBytes: -1, PeerSeconds: -1, Retransmits: -1})
	}
}

// watchCount records in recvEnd when the receivers have limit bytes, so
// a byte-count test's receive rate is not diluted by the end-of-test
// exchange. It stops when stop is closed.
func (s *session) watchCount(limit int64, stop <-chan struct{}) {
	hasRecv := false
	s.each(false, func(*stream) { hasRecv = true })
	if limit <= 0 || !hasRecv {
		return
	}
	go func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				if s.total(false) >= limit {
					s.recvEnd.store(now)
					return
				}
			}
		}
	}()
}

// atomicTime is a time.Time several goroutines read and write.
type atomicTime struct {
	mu sync.Mutex
	t  time.Time
}

func (a *atomicTime) load() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.t
}

func (a *atomicTime) store(t time.Time) {
	a.mu.Lock()
	a.t = t
	a.mu.Unlock()
}

// byID is the stream with that id (nil: none).
func (s *session) byID(id int) *stream {
	for _, st := range s.streams {
		if st.id == id {
			return st
		}
	}
	return nil
}

// closeAll closes every data connection.
func (s *session) closeAll() {
	for _, st := range s.streams {
		if st.release != nil {
			st.release() // a prepared flow that never ran (safe twice)
		}
		st.sock.Close()
	}
}

// sentTotal and receivedTotal sum this side's counters by direction.
func (s *session) total(sender bool) int64 {
	var t int64
	s.each(sender, func(st *stream) { t += st.stats.Snapshot().Bytes })
	return t
}

// results packages this side's totals for the peer.
func (s *session) results(cpu result.CPUUtil, congestion, backend string) *wire.Results {
	r := &wire.Results{
		CPUUtilTotal: cpu.Total, CPUUtilUser: cpu.User, CPUUtilSystem: cpu.System,
		CongestionUsed: congestion,
		Streams:        []wire.StreamResults{},
		Blast: &wire.BlastResults{Version: result.Version, Backend: backend, NIC: s.res.NIC,
			CPU: &wire.CPUSeconds{User: cpu.UserSeconds, System: cpu.SystemSeconds}, Pauses: cpu.Pauses, Host: s.res.Load,
			Path: s.res.Path, Sysctls: s.res.Sysctls, SndBuf: s.res.SndBufActual, RcvBuf: s.res.RcvBufActual},
	}
	for _, iv := range s.res.Intervals {
		if iv.Load != nil {
			r.Blast.HostIntervals = append(r.Blast.HostIntervals, *iv.Load)
		}
	}
	hasSender := false
	for _, st := range s.streams {
		if st.sender {
			hasSender = true
		}
	}
	switch {
	case !hasSender:
		r.SenderHasRetransmits = -1
	case s.res.HasRetransmits:
		r.SenderHasRetransmits = 1
	}
	for _, st := range s.streams {
		if st.err != nil {
			r.Blast.Errors = append(r.Blast.Errors, fmt.Sprintf("stream %d: %v", st.id, st.err))
		}
	}
	for _, sr := range s.res.Streams {
		retr := wire.Int(-1)
		if sr.Sender && sr.Retransmits >= 0 {
			retr = wire.Int(sr.Retransmits)
		}
		ws := wire.StreamResults{ID: wire.Int(sr.ID), Bytes: wire.Int(sr.Bytes), Retransmits: retr,
			StartTime: 0, EndTime: sr.Seconds}
		bs := wire.BlastStream{ID: wire.Int(sr.ID), IO: sr.IO, Verify: sr.Verify, Drained: sr.Drained, Thread: sr.Thread}
		if sr.Sender && sr.MeanRTT > 0 {
			bs.TCP = sr.TCPSummary()
		}
		if sr.UDP != nil {
			u := *sr.UDP
			ws.Jitter, ws.Errors, ws.Packets = u.Jitter, wire.Int(u.Lost), wire.Int(u.Packets)
			if st := s.byID(sr.ID); st != nil {
				oe, op := wire.Int(st.udpBase.Lost), wire.Int(st.udpBase.Packets)
				ws.OmittedErrors, ws.OmittedPackets = &oe, &op
			}
			bs.UDP = &u
		}
		r.Streams = append(r.Streams, ws)
		if len(sr.Facts.Counts) > 0 || len(sr.Facts.Notes) > 0 {
			f := sr.Facts
			bs.Facts = &f
		}
		r.Blast.Streams = append(r.Blast.Streams, bs)
	}
	return r
}

// merge takes in the peer's results.
func (s *session) merge(pr *wire.Results) error {
	r := s.res
	r.RemoteCPU = result.CPUUtil{Total: pr.CPUUtilTotal, User: pr.CPUUtilUser, System: pr.CPUUtilSystem}
	if pr.Blast != nil && pr.Blast.CPU != nil {
		r.RemoteCPU.UserSeconds, r.RemoteCPU.SystemSeconds = pr.Blast.CPU.User, pr.Blast.CPU.System
	}
	if pr.Blast != nil {
		r.RemoteCPU.Pauses = pr.Blast.Pauses
	}
	r.RemoteHasRetransmits = pr.SenderHasRetransmits == 1
	r.RemoteCongestion = pr.CongestionUsed
	r.ServerOutputText = pr.ServerOutputText
	r.ServerOutputJSON = pr.ServerOutputJSON
	if pr.Blast != nil {
		r.RemoteNIC = pr.Blast.NIC
		r.RemotePath, r.RemoteSysctls = pr.Blast.Path, pr.Blast.Sysctls
		r.RemoteSndBuf, r.RemoteRcvBuf = pr.Blast.SndBuf, pr.Blast.RcvBuf
		r.RemoteLoad, r.RemoteLoadIntervals = pr.Blast.Host, pr.Blast.HostIntervals
		r.RemoteBackend = pr.Blast.Backend
		r.RemoteVersion = pr.Blast.Version
		r.RemoteErrors = pr.Blast.Errors
		if pr.Blast.Note != "" {
			r.Notes = append(r.Notes, "peer: "+pr.Blast.Note)
		}
	}
	byID := map[int]*result.StreamResult{}
	for _, sr := range r.Streams {
		byID[sr.ID] = sr
	}
	for i, ps := range pr.Streams {
		sr := byID[int(ps.ID)]
		if sr == nil {
			return errStreamID(int(ps.ID))
		}
		sr.PeerBytes = int64(ps.Bytes)
		sr.PeerSeconds = ps.EndTime - ps.StartTime
		if !sr.Sender {
			sr.Retransmits = int64(ps.Retransmits)
		}
		if s.udp {
			sr.PeerUDP = &wire.UDPStats{Packets: int64(ps.Packets), Lost: int64(ps.Errors), Jitter: ps.Jitter}
		}
		if pr.Blast != nil && i < len(pr.Blast.Streams) && int(pr.Blast.Streams[i].ID) == sr.ID {
			io := pr.Blast.Streams[i].IO
			sr.PeerIO = &io
			sr.PeerFacts = pr.Blast.Streams[i].Facts
			sr.PeerVerify = pr.Blast.Streams[i].Verify
			sr.PeerTCP = pr.Blast.Streams[i].TCP
			sr.PeerDrained = pr.Blast.Streams[i].Drained
			sr.PeerThread = pr.Blast.Streams[i].Thread
			if u := pr.Blast.Streams[i].UDP; u != nil && sr.PeerUDP != nil {
				sr.PeerUDP.OutOfOrder, sr.PeerUDP.Duplicates, sr.PeerUDP.LossRuns = u.OutOfOrder, u.Duplicates, u.LossRuns
			}
		}
	}
	return nil
}

type errStreamID int

func (e errStreamID) Error() string {
	return "peer results name stream id " + strconv.Itoa(int(e)) + ", which this test does not have"
}
