package control

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/latency"
)

// UDP limits and defaults (iperf.h, iperf_api.c).
const (
	// DefaultUDPRate is iperf3's default UDP bitrate, bits per second.
	DefaultUDPRate = 1 << 20
)

// udpDefaultBackend is what moves UDP when nobody chose: sendmmsg and
// recvmmsg with GSO and GRO, which fall back by themselves where the
// kernel or the path refuses the offloads; readwrite where there is no
// mmsg.
func udpDefaultBackend() (name, opts string) {
	if _, err := engine.Usable("mmsg"); err == nil {
		return "mmsg", "gso,gro"
	}
	return engine.DefaultBackend, ""
}

// The UDP "connect" handshake (iperf_udp.c): the client sends udpHello on
// each new stream, the server answers udpReply from the socket it
// connected to the client. iperf3 before 3.12 answered udpLegacyReply.
var (
	udpHello       = [4]byte{0x39, 0x38, 0x37, 0x36} // "9876"
	udpReply       = [4]byte{0x36, 0x37, 0x38, 0x39} // "6789"
	udpLegacyReply = [4]byte{0xb1, 0x68, 0xde, 0x3a} // 987654321, little-endian
)

// udpMinHeader is the shortest header of a data datagram (iperf3's, with
// 32-bit counters; 16 with --udp-counters-64bit).
const udpMinHeader = 12

// udpFraming is iperf3's datagram header on one UDP stream (iperf_udp.c):
// seconds and microseconds of the send time (4 bytes each, big-endian; on
// engine.Mono's clock, as iperf3 uses CLOCK_MONOTONIC: only differences
// mean anything), then the sequence number from 1 (4 bytes, or 8 with
// udp_counters_64bit). The sender stamps it; the receiver counts loss,
// reordering, duplicates and jitter as iperf3 does.
//
// The receiver's counts live in plain fields of the flow's thread and are
// published to the interval reporter every publishEvery datagrams and at
// least every publishAfter: an atomic store per datagram would cost more
// than the rest of Receive at millions of datagrams a second. final reads
// the fields themselves once the flow is over.
type udpFraming struct {
	wide bool // 64-bit sequence numbers
	// repeat writes iperf3's repeating payload ('0' to '9' from the start
	// of the datagram) after the header of every datagram sent.
	repeat bool

	seq int64 // sender: the last sequence number stamped

	// Receiver. highest is iperf3's packet_count: the highest sequence
	// number seen.
	cur         wire.UDPStats
	prevTransit float64
	started     bool
	unpublished int
	publishedAt time.Duration
	// seen has a bit for each of the last len(seen)*64 sequence numbers
	// up to highest: a number seen twice is a duplicate, not reordering.
	seen [64]uint64

	pubMu sync.Mutex
	pub   wire.UDPStats
}

const (
	publishEvery = 256
	publishAfter = 10 * time.Millisecond
)

func newUDPFraming(wide bool) *udpFraming { return &udpFraming{wide: wide} }

// headerLen is the size of the header the sender writes.
func (u *udpFraming) headerLen() int {
	if u.wide {
		return 16
	}
	return udpMinHeader
}

// Stamp implements engine.Framing. A datagram too short for the header
// (the tail of a byte count) goes out unstamped and uncounted.
func (u *udpFraming) Stamp(p []byte, at time.Duration) {
	if len(p) < u.headerLen() {
		return
	}
	u.seq++
	if u.repeat {
		for h := u.headerLen(); h < len(p); {
			h += copy(p[h:], repeatingPayload[h%10:])
		}
	}
	binary.BigEndian.PutUint32(p[0:], uint32(at/time.Second))
	binary.BigEndian.PutUint32(p[4:], uint32(at%time.Second/time.Microsecond))
	if u.wide {
		binary.BigEndian.PutUint64(p[8:], uint64(u.seq))
	} else {
		binary.BigEndian.PutUint32(p[8:], uint32(u.seq))
	}
}

// Receive implements engine.Framing, as iperf_udp_recv does: a sequence
// number past the highest seen counts the gap as lost; one at or below it
// is out of order and takes one back from the lost count, or, when that
// number was already seen, is a duplicate and changes nothing else.
func (u *udpFraming) Receive(p []byte, at time.Duration) {
	if len(p) < u.headerLen() {
		return // a handshake datagram, or a tail too short to carry a header
	}
	sec := binary.BigEndian.Uint32(p[0:])
	usec := binary.BigEndian.Uint32(p[4:])
	var seq int64
	if u.wide {
		seq = int64(binary.BigEndian.Uint64(p[8:]))
	} else {
		seq = int64(binary.BigEndian.Uint32(p[8:]))
	}
	c := &u.cur
	window := int64(len(u.seen) * 64)
	switch {
	case seq > c.Packets:
		if seq > c.Packets+1 {
			c.Lost += seq - 1 - c.Packets
			c.LossRuns++
		}
		u.markForward(c.Packets, seq)
		c.Packets = seq
	case seq > c.Packets-window && u.marked(seq):
		c.Duplicates++
	default:
		c.OutOfOrder++
		if seq > c.Packets-window {
			u.mark(seq)
		}
		if c.Lost > 0 {
			c.Lost--
		}
	}
	// Jitter, RFC 3550 6.4.1 with iperf3's first-packet start.
	sent := time.Duration(sec)*time.Second + time.Duration(usec)*time.Microsecond
	transit := (at - sent).Seconds()
	if transit < 0 {
		transit = -transit
	}
	if !u.started {
		u.started = true
		u.prevTransit = transit
	}
	d := transit - u.prevTransit
	if d < 0 {
		d = -d
	}
	u.prevTransit = transit
	c.Jitter += (d - c.Jitter) / 16

	u.unpublished++
	if u.unpublished >= publishEvery || at-u.publishedAt >= publishAfter {
		u.pubMu.Lock()
		u.pub = *c
		u.pubMu.Unlock()
		u.unpublished, u.publishedAt = 0, at
	}
}

func (u *udpFraming) bit(seq int64) (int, uint64) {
	i := uint64(seq) % uint64(len(u.seen)*64)
	return int(i / 64), 1 << (i % 64)
}

func (u *udpFraming) marked(seq int64) bool {
	w, b := u.bit(seq)
	return u.seen[w]&b != 0
}

func (u *udpFraming) mark(seq int64) {
	w, b := u.bit(seq)
	u.seen[w] |= b
}

// markForward clears the bits of the numbers skipped from high to seq
// (they were not seen) and marks seq.
func (u *udpFraming) markForward(high, seq int64) {
	if seq-high >= int64(len(u.seen)*64) {
		clear(u.seen[:])
	} else {
		for n := high + 1; n < seq; n++ {
			w, b := u.bit(n)
			u.seen[w] &^= b
		}
	}
	u.mark(seq)
}

// stats are the receiver's counts as last published (at most
// publishEvery datagrams or publishAfter old), for the interval reporter.
func (u *udpFraming) stats() wire.UDPStats {
	u.pubMu.Lock()
	defer u.pubMu.Unlock()
	return u.pub
}

// final are the receiver's exact counts. Call it only once the flow is
// over (its Run has returned).
func (u *udpFraming) final() wire.UDPStats { return u.cur }

// udpHandshake is the client's side of a UDP stream's connect: send the
// hello until the server answers (every second, in case a datagram was
// lost), within the context's deadline. A data datagram in place of the
// answer (a reverse test's server sends once it has every stream) says
// the server has this one and its answer was lost: the handshake is done,
// and the datagram stays for the receiver. (Skipping them left a client
// whose answer a 1% lossy path dropped waiting for it until its deadline,
// while the server sent.)
func udpHandshake(ctx context.Context, sock *engine.Socket) error {
	if err := sock.SetTimeout(time.Second); err != nil {
		return err
	}
	defer sock.SetTimeout(0)
	stop := context.AfterFunc(ctx, func() { sock.Shutdown() })
	defer stop()
	var buf [64]byte
	for {
		if _, err := sock.Write(udpHello[:]); err != nil {
			return fmt.Errorf("send the UDP hello: %w", err)
		}
		for {
			n, err := sock.Peek(buf[:])
			if ctx.Err() != nil {
				if errors.Is(ctx.Err(), context.DeadlineExceeded) {
					return errors.New("the server did not answer the UDP hello: is UDP to its port blocked by a firewall?")
				}
				return ctx.Err()
			}
			if errors.Is(err, engine.ErrTimeout) {
				break // send the hello again
			}
			if err != nil {
				return fmt.Errorf("wait for the server's UDP answer: %w (is UDP to its port blocked?)", err)
			}
			if n >= udpMinHeader {
				return nil // data: the server has the stream
			}
			if _, err := sock.Read(buf[:]); err != nil {
				return fmt.Errorf("wait for the server's UDP answer: %w (is UDP to its port blocked?)", err)
			}
			if n == 4 && ([4]byte(buf[:4]) == udpReply || [4]byte(buf[:4]) == udpLegacyReply) {
				return nil
			}
		}
	}
}

// reanswerSlice is how long reanswer waits for a datagram at a time: how
// late its stop returns at most.
const reanswerSlice = 10 * time.Millisecond

// reanswer answers again the hellos the client sends on a stream the
// server has connected, until stop: when the first answer is lost, the
// client sends its hello again every second, and the kernel gives the
// datagrams of a connected client to the stream's socket, not the gate,
// so the client would wait for an answer to its deadline (30 s) while
// the server waited for its next stream. A data datagram (the test has
// begun) ends it, left for the receiver. stop returns within
// reanswerSlice and gives the socket its timeout back.
func reanswer(sock *engine.Socket) (stop func(), err error) {
	if err := sock.SetTimeout(reanswerSlice); err != nil {
		return nil, err
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		var buf [64]byte
		for {
			select {
			case <-quit:
				return
			default:
			}
			n, err := sock.Peek(buf[:])
			if errors.Is(err, engine.ErrTimeout) {
				continue
			}
			if err != nil || n != len(udpHello) {
				return // data, or a socket shut down: the flow's
			}
			if _, err := sock.Read(buf[:]); err != nil {
				return
			}
			if [4]byte(buf[:4]) == udpHello {
				sock.Write(udpReply[:])
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(quit)
			<-done
			sock.SetTimeout(0)
		})
	}, nil
}

// udpGate is the server's UDP listener on its port: it reads the hello
// of each new UDP stream and hands the sender's address to the test that
// is waiting for streams from that host. A hello from a host no test
// waits for is dropped.
type udpGate struct {
	sock *engine.Socket
	done chan struct{}

	mu      sync.Mutex
	waiting map[netip.Addr][]*udpWaiter
	// sessions are the blast lat clients the gate echoes: each opened a
	// latency session over TCP, which registered its address and port;
	// their rates run on the server's clock.
	sessions *latency.Sessions
}

type udpWaiter struct {
	ch   chan netip.AddrPort
	seen map[netip.AddrPort]bool
}

// openUDPGate binds the UDP port with opts and starts reading hellos,
// and echoing blast lat requests from the latency sessions (the time of
// their rates from now).
func openUDPGate(nw, address string, opts engine.SockOpts, now func() time.Time) (*udpGate, error) {
	sock, err := engine.ListenUDP(context.Background(), nw, address, opts)
	if err != nil {
		return nil, err
	}
	g := &udpGate{sock: sock, done: make(chan struct{}), waiting: map[netip.Addr][]*udpWaiter{},
		sessions: latency.NewSessions(now)}
	go g.loop()
	return g, nil
}

func (g *udpGate) loop() {
	defer close(g.done)
	buf := make([]byte, 64<<10) // a latency request may be as large as a datagram
	for {
		n, from, err := g.sock.ReadFrom(buf)
		if err != nil || (n == 0 && !from.IsValid()) {
			return // shut down (close), or the socket failed
		}
		if latency.IsUDPRequest(buf[:n]) {
			if g.sessions.MayEcho(from) {
				g.sock.WriteTo(buf[:n], from)
			}
			continue
		}
		if n != 4 {
			continue
		}
		from = unmap(from)
		g.mu.Lock()
		for _, w := range g.waiting[from.Addr()] {
			if w.seen[from] {
				break // a hello sent again: that stream is open already
			}
			select {
			case w.ch <- from:
				w.seen[from] = true
			default:
				continue // that test has all its streams: try the next
			}
			break
		}
		g.mu.Unlock()
	}
}

// wait registers a test that expects n streams from host.
func (g *udpGate) wait(host netip.Addr, n int) (*udpWaiter, func()) {
	w := &udpWaiter{ch: make(chan netip.AddrPort, n), seen: map[netip.AddrPort]bool{}}
	host = host.Unmap()
	g.mu.Lock()
	g.waiting[host] = append(g.waiting[host], w)
	g.mu.Unlock()
	return w, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		ws := g.waiting[host]
		for i, x := range ws {
			if x == w {
				g.waiting[host] = append(ws[:i:i], ws[i+1:]...)
				break
			}
		}
		if len(g.waiting[host]) == 0 {
			delete(g.waiting, host)
		}
	}
}

// close stops the gate and waits for its reader.
func (g *udpGate) close() {
	g.sock.Shutdown()
	<-g.done
	g.sock.Close()
}
