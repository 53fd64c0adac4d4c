package latency

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/clock"
)

// Result is what a client run measured. Every duration is a full round
// trip.
type Result struct {
	Protocol string // "tcp" or "udp"
	Remote   string // the server's address
	Local    string
	Size     int // request and reply payload, bytes
	Warmup   int // round trips before measuring, not recorded
	Timeout  time.Duration

	Requests   int64 // measured requests sent
	RoundTrips int64 // replies received in time; RTT.Count
	Lost       int64 // UDP: requests without a reply within Timeout
	Late       int64 // UDP: replies seen after their request was counted lost
	Elapsed    time.Duration
	// Interrupted is set when the run was cut short (Ctrl-C); the figures
	// cover what ran.
	Interrupted bool
	// Rate is the requests a second asked for (0: closed loop); LoadBps
	// the bulk stream's rate beside the ping-pong (--load), both
	// directions together, in bit/s.
	Rate    float64
	LoadBps float64
	// Idle is the phase a --load run measures first, before the bulk
	// stream starts, with the same count, time and rate: the baseline of
	// the loaded figures of this Result. Nil without --load.
	Idle *Result

	RTT       Stats
	Buckets   []Bucket
	Intervals []Interval
}

// PerSecond is completed round trips (transactions) per second.
func (r *Result) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.RoundTrips) / r.Elapsed.Seconds()
}

// Interval is one -i report: the round trips that ended between Start and
// End (offsets from the start of measuring).
type Interval struct {
	Start, End time.Duration
	Requests   int64
	RoundTrips int64
	Lost       int64
	RTT        Stats
}

// roundTripper runs one request/response exchange on an open flow.
type roundTripper interface {
	// roundTrip sends request seq and waits for its reply. ok is false
	// when the reply did not come within the timeout (UDP only). end is
	// when the exchange ended (the reply came or the wait gave up).
	roundTrip(seq uint64) (end time.Time, rtt time.Duration, ok bool, err error)
	// interrupt makes a blocked roundTrip (and every later one) return
	// an error at once; any goroutine may call it.
	interrupt()
	// close releases the flow, once no roundTrip is running.
	close() error
}

// errInterrupted is what a flow returns once interrupt has run.
var errInterrupted = errors.New("interrupted")

// Run measures round trips to cfg.Host and returns the result. progress,
// if not nil, is called with each interval report (cfg.Interval > 0).
func Run(ctx context.Context, cfg Config, progress func(Interval)) (*Result, error) {
	if cfg.Server {
		return nil, usagef("latency.Run is the client; the server is Serve")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rt, res, err := dial(ctx, cfg)
	if errors.Is(err, errGreetingInterrupted) {
		return res, nil
	}
	if err != nil {
		return nil, err
	}
	// Cancellation interrupts the flow's wait: the blocked read returns
	// and the loop sees ctx.Err(). The flow is closed once the loop is
	// done (and the interrupt, if it started, has finished).
	stop := context.AfterFunc(ctx, rt.interrupt)
	defer func() {
		stop()
		rt.close()
	}()

	var seq uint64
	for range cfg.Warmup {
		seq++
		if _, _, _, err := rt.roundTrip(seq); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}

	if cfg.Load {
		// The idle phase first, on the same flow and with the same
		// count, time and rate, so that the loaded one has a baseline.
		idle := *res
		err := measure(ctx, clock.Real, rt, cfg, &seq, &idle, progress)
		res.Idle = &idle
		if err != nil || idle.Interrupted {
			res.Interrupted = idle.Interrupted
			return res, err
		}
		stopLoad, err := startLoad(ctx, cfg)
		if err != nil {
			return nil, err
		}
		err = measure(ctx, clock.Real, rt, cfg, &seq, res, progress)
		res.LoadBps = stopLoad()
		if err != nil {
			return res, err
		}
	} else if err := measure(ctx, clock.Real, rt, cfg, &seq, res, progress); err != nil {
		return res, err
	}
	if u, ok := rt.(interface{ lateReplies() int64 }); ok {
		res.Late = u.lateReplies()
	}
	return res, nil
}

// measure is one measuring phase on rt: round trips for cfg's count or
// time, at its rate, numbered from *seq on, into res (its counts, times,
// histogram and intervals). An error of the flow is returned; an
// interruption only marks res. clk paces the requests and times the
// phase; rt's round trips are on the same clock (Run passes clock.Real
// with its sockets, a test a fake clock with a flow of its own).
func measure(ctx context.Context, clk clock.Clock, rt roundTripper, cfg Config, seq *uint64, res *Result, progress func(Interval)) error {
	res.Intervals = nil
	all, iv := NewHistogram(), NewHistogram()
	begin := clk.Now()
	deadline := begin.Add(cfg.Duration)
	nextIv, ivStart := begin.Add(cfg.Interval), begin
	var ivReq, ivLost int64
	report := func(now time.Time) {
		if ivReq > 0 {
			i := Interval{Start: ivStart.Sub(begin), End: now.Sub(begin), Requests: ivReq,
				RoundTrips: iv.Count(), Lost: ivLost, RTT: iv.Stats()}
			res.Intervals = append(res.Intervals, i)
			if progress != nil {
				progress(i)
			}
		}
		iv.Reset()
		ivReq, ivLost, ivStart = 0, 0, now
	}
	var runErr error
	now := begin
	lastYield := now
	for {
		if cfg.Count > 0 && res.Requests >= cfg.Count || cfg.Count == 0 && !now.Before(deadline) {
			break
		}
		var slot time.Time
		if cfg.Rate > 0 {
			slot = begin.Add(time.Duration(float64(res.Requests) * float64(time.Second) / cfg.Rate))
			if cfg.Count == 0 && !slot.Before(deadline) {
				// The schedule's slots end with the time: --rate 5000
				// -t 2 sends 10000 requests, and the run lasts its 2 s.
				waitUntil(clk, deadline)
				now = clk.Now()
				break
			}
			waitUntil(clk, slot)
		}
		*seq++
		end, rtt, ok, err := rt.roundTrip(*seq)
		if cfg.Rate > 0 && ok {
			rtt = end.Sub(slot) // from the request's slot: see Config.Rate
		}
		now = end
		if now.Sub(lastYield) > yieldEvery {
			runtime.Gosched()
			lastYield = now
		}
		if err != nil {
			if ctx.Err() != nil {
				res.Interrupted = true
			} else {
				runErr = err
			}
			break
		}
		res.Requests++
		ivReq++
		if ok {
			all.Record(rtt)
			if cfg.Interval > 0 {
				iv.Record(rtt)
			}
		} else {
			res.Lost++
			ivLost++
		}
		if cfg.Interval > 0 && !now.Before(nextIv) {
			report(now)
			for !nextIv.After(now) {
				nextIv = nextIv.Add(cfg.Interval)
			}
		}
	}
	if cfg.Interval > 0 {
		report(now)
	}
	res.Elapsed = now.Sub(begin)
	res.RoundTrips = all.Count()
	res.RTT = all.Stats()
	res.Buckets = all.Buckets()
	return runErr
}

func dial(ctx context.Context, cfg Config) (roundTripper, *Result, error) {
	network := "tcp"
	if cfg.UDP {
		network = "udp"
	}
	addr := hostPort(cfg.Host, cfg.Port)
	opts := cfg.Sock
	d := net.Dialer{Control: opts.Control(), Timeout: 10 * time.Second}
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, nil, explain("connect to", addr, err)
	}
	res := &Result{Protocol: network, Remote: c.RemoteAddr().String(), Local: c.LocalAddr().String(),
		Size: cfg.Size, Warmup: cfg.Warmup, Timeout: cfg.Timeout, Rate: cfg.Rate}
	if !cfg.UDP {
		err := hello(ctx, c, addr, max(cfg.Timeout, 5*time.Second))
		if err != nil {
			c.Close()
			if ctx.Err() != nil {
				// Interrupted before the first round trip: a result
				// with nothing in it, as an interrupt later gives one
				// with what ran.
				res.Interrupted = true
				return nil, res, errGreetingInterrupted
			}
			return nil, nil, err
		}
	}
	var session net.Conn
	if cfg.UDP {
		session, err = udpSession(ctx, c, addr, opts, cfg.Rate, max(cfg.Timeout, 5*time.Second))
		if err != nil {
			c.Close()
			res.Interrupted = true
			return nil, res, err
		}
	}
	rt, err := newRawFlow(c, res.Remote, cfg)
	switch {
	case err == nil:
		return withSession(rt, session), res, nil
	case !errors.Is(err, engine.ErrNotSupported):
		if session != nil {
			session.Close()
		}
		return nil, nil, err // newRawFlow closed c
	}
	if cfg.UDP {
		return withSession(newUDPFlow(c.(*net.UDPConn), cfg), session), res, nil
	}
	return &tcpFlow{c: c.(*net.TCPConn), addr: res.Remote, req: pattern(cfg.Size), reply: make([]byte, cfg.Size), timeout: cfg.Timeout}, res, nil
}

// sessionFlow is a UDP flow with its latency session (udpSession), which
// it closes after the flow.
type sessionFlow struct {
	roundTripper
	session net.Conn
}

func withSession(rt roundTripper, session net.Conn) roundTripper {
	if session == nil {
		return rt
	}
	return &sessionFlow{rt, session}
}

func (s *sessionFlow) close() error { return errors.Join(s.roundTripper.close(), s.session.Close()) }

func (s *sessionFlow) lateReplies() int64 {
	if u, ok := s.roundTripper.(interface{ lateReplies() int64 }); ok {
		return u.lateReplies()
	}
	return 0
}

// pattern is a request payload: bytes that are not all zero.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}

// tcpFlow writes the request and reads exactly as many bytes back.
type tcpFlow struct {
	c          *net.TCPConn
	addr       string
	req, reply []byte
	timeout    time.Duration
}

func (t *tcpFlow) roundTrip(uint64) (time.Time, time.Duration, bool, error) {
	start := time.Now()
	if err := t.c.SetDeadline(start.Add(t.timeout)); err != nil {
		return start, 0, false, err
	}
	if _, err := t.c.Write(t.req); err != nil {
		return time.Now(), 0, false, explain("send to", t.addr, err)
	}
	if _, err := io.ReadFull(t.c, t.reply); err != nil {
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return time.Now(), 0, false, fmt.Errorf("receive from %s: no reply within %s: is the server an echo server (blast lat -s)? raise --timeout for slow paths", t.addr, t.timeout)
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return time.Now(), 0, false, fmt.Errorf("receive from %s: the server closed the connection mid-run: is it blast lat -s?", t.addr)
		}
		return time.Now(), 0, false, explain("receive from", t.addr, err)
	}
	end := time.Now()
	return end, end.Sub(start), true, nil
}

func (t *tcpFlow) interrupt()   { t.c.Close() }
func (t *tcpFlow) close() error { return t.c.Close() }

// udpFlow sends numbered requests and matches replies by their number.
type udpFlow struct {
	c          *net.UDPConn
	addr       string
	req, reply []byte
	timeout    time.Duration
	late       int64
	lastLost   uint64 // highest sequence counted lost
	closeOnce  sync.Once
	closeErr   error
}

func newUDPFlow(c *net.UDPConn, cfg Config) *udpFlow {
	return &udpFlow{c: c, addr: c.RemoteAddr().String(), req: pattern(cfg.Size),
		reply: make([]byte, max(cfg.Size, UDPHeader)+1), timeout: cfg.Timeout}
}

func (u *udpFlow) roundTrip(seq uint64) (time.Time, time.Duration, bool, error) {
	putHeader(u.req, kindRequest, seq)
	start := time.Now()
	if err := u.c.SetReadDeadline(start.Add(u.timeout)); err != nil {
		return start, 0, false, err
	}
	if _, err := u.c.Write(u.req); err != nil {
		return time.Now(), 0, false, explain("send to", u.addr, err)
	}
	for {
		n, err := u.c.Read(u.reply)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				u.lastLost = seq
				return time.Now(), 0, false, nil
			}
			return time.Now(), 0, false, explain("receive from", u.addr, err)
		}
		kind, got, ok := header(u.reply[:n])
		switch {
		case !ok || kind != kindRequest || n != len(u.req):
			// not a reply to us: ignore it
		case got == seq:
			end := time.Now()
			return end, end.Sub(start), true, nil
		case got <= u.lastLost:
			u.late++
		}
	}
}

func (u *udpFlow) lateReplies() int64 { return u.late }
func (u *udpFlow) interrupt()         { u.close() }

// close tells the server this client is done (three times: a datagram
// may be lost), then closes the socket.
func (u *udpFlow) close() error {
	u.closeOnce.Do(func() {
		bye := make([]byte, UDPHeader)
		putHeader(bye, kindBye, 0)
		for range 3 {
			u.c.Write(bye)
		}
		u.closeErr = u.c.Close()
	})
	return u.closeErr
}

// yieldEvery is how often a measuring loop passes through the scheduler
// (runtime.Gosched, between round trips). A goroutine that only ever
// makes syscalls keeps one scheduling tick; after 10 ms of that the
// runtime's monitor takes its P away in the middle of a syscall and
// polls every 20 us for a while after, which on a small machine competes
// with the flow for the CPU and shows in every percentile above p50.
const yieldEvery = 2 * time.Millisecond

// yieldRequests is the same for the server's echo loops, counted in
// requests (they read no clock): 64 requests take 10 ms only on a path
// slower than 150 us per round trip.
const yieldRequests = 64
