// Package pathmtu measures the path MTU in both directions between a
// client and a blast server, as tracepath does, but from both ends: the
// sender sends UDP probes with the don't-fragment bit and without the
// kernel's path-MTU estimate (IP_PMTUDISC_PROBE, IPV6_PMTUDISC_PROBE), a
// binary search over packet sizes, and the receiver tells which sizes
// arrived. The largest size that arrived is the direction's path MTU; it
// is exact when the next size up was sent and lost.
//
// The client opens a TCP connection to the server's port and sends, where
// a test's cookie would be, a greeting that names its UDP port; blast
// server answers with its own UDP port and its interface's MTU. Upload
// (client to server): the client sends the probes, the server reports
// each one that arrived over the TCP connection. Download: the client asks
// the server to send a list of sizes to its UDP port and sees which
// arrive. Each round ends with a small marker datagram, so a round takes
// about a round trip, not a timeout; a marker that never comes ends the
// round after roundTimeout. A server that does not answer the greeting
// (iperf3, an older blast server) measures nothing: the caller says "not
// measured".
//
// What it promises: the server sends probes only to the address of the
// TCP connection's peer, at most maxSessionDatagrams of them in a session
// of at most MaxSession; the client's whole measurement ends within
// Config.Timeout; every socket is closed on return.
package pathmtu

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strconv"
	"time"
)

// GreetingSize is the length of the greeting (an iperf3 cookie's).
const GreetingSize = 37

// greetingPrefix opens the greeting and the server's answer. It cannot
// start an iperf3 cookie (36 characters of [a-z2-7] and a NUL) nor the
// latency greetings ("bLat ...").
var greetingPrefix = [14]byte{'b', 'M', 't', 'u', ' ', 'p', 'r', 'o', 'b', 'e', ' ', 'v', '1', '\n'}

// Greeting is what a client sends first: the prefix and its UDP port.
func Greeting(port uint16) [GreetingSize]byte {
	var g [GreetingSize]byte
	copy(g[:], greetingPrefix[:])
	binary.BigEndian.PutUint16(g[14:], port)
	return g
}

// ParseGreeting reads a client's greeting: its UDP port; ok is false for
// anything else (a test's cookie, another greeting).
func ParseGreeting(g [GreetingSize]byte) (port uint16, ok bool) {
	if [len(greetingPrefix)]byte(g[:len(greetingPrefix)]) != greetingPrefix {
		return 0, false
	}
	for _, b := range g[16:] {
		if b != 0 {
			return 0, false
		}
	}
	port = binary.BigEndian.Uint16(g[14:])
	return port, port != 0
}

// answer is the server's reply to the greeting: the prefix, its UDP port,
// its interface's MTU (0: unknown) and name (up to 16 bytes, NUL-padded).
func answer(port uint16, mtu int, iface string) [GreetingSize]byte {
	g := Greeting(port)
	binary.BigEndian.PutUint16(g[16:], uint16(min(max(mtu, 0), maxSize)))
	copy(g[18:34], iface)
	return g
}

func parseAnswer(g [GreetingSize]byte) (port uint16, mtu int, iface string, ok bool) {
	if [len(greetingPrefix)]byte(g[:len(greetingPrefix)]) != greetingPrefix {
		return 0, 0, "", false
	}
	port = binary.BigEndian.Uint16(g[14:])
	name := g[18:34]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	return port, int(binary.BigEndian.Uint16(g[16:])), string(name), port != 0
}

// The frames on the TCP connection after the greeting. The client sends
// opSend (round, count, then count sizes of 2 bytes each) and opMTU
// (zeros); the server sends 4-byte frames: opArrived (round, the size, 0
// for the round's marker) and opMTU (0, its socket's path MTU).
const (
	opSend    = 'S'
	opArrived = 'R'
	opMTU     = 'M'
	// maxSizes bounds the sizes of one opSend.
	maxSizes = 64
)

// The probe datagram: probeMagic, the round, flags (flagMarker), the
// size of the IP packet it was sent as; zeros fill it to that size.
var probeMagic = [4]byte{'b', 'M', 'T', 'P'}

const (
	probeHeader = 8
	flagMarker  = 1
	// maxSize is the largest IP packet (its total length is 16 bits).
	maxSize = 65535
)

// overhead is the IP and UDP headers in front of a probe's payload.
func overhead(v6 bool) int {
	if v6 {
		return 48
	}
	return 28
}

// minSize is the smallest size probed: the least MTU each version
// promises (576 bytes for IPv4's reassembly, 1280 for IPv6).
func minSize(v6 bool) int {
	if v6 {
		return 1280
	}
	return 576
}

// probe builds the datagram of one probe (its UDP payload) for an IP
// packet of size bytes.
func probe(buf []byte, round byte, size int, marker, v6 bool) []byte {
	n := max(size-overhead(v6), probeHeader)
	b := buf[:n]
	clear(b)
	copy(b, probeMagic[:])
	b[4] = round
	if marker {
		b[5] = flagMarker
	} else {
		binary.BigEndian.PutUint16(b[6:], uint16(size))
	}
	return b
}

// parseProbe reads a probe datagram: its round, its size (0 for a
// marker); ok is false for anything else, and for a probe whose length
// does not match the size it claims.
func parseProbe(b []byte, v6 bool) (round byte, size int, ok bool) {
	if len(b) < probeHeader || [4]byte(b[:4]) != probeMagic {
		return 0, 0, false
	}
	if b[5] == flagMarker {
		return b[4], 0, true
	}
	size = int(binary.BigEndian.Uint16(b[6:]))
	return b[4], size, size-overhead(v6) == len(b)
}

// Timing of a measurement.
const (
	// MaxSession bounds a server's session.
	MaxSession = 10 * time.Second
	// greetingTimeout bounds the wait for the server's answer: a server
	// that is no blast server (iperf3 takes the greeting for a cookie and
	// waits for parameters) costs no more.
	greetingTimeout = 2 * time.Second
	// roundTimeout bounds a round whose marker never came.
	roundTimeout = 500 * time.Millisecond
	// maxRounds bounds a direction's search (a search from 65535 bytes to
	// the byte takes 5, and 2 confirmations).
	maxRounds = 9
	// roundBytes bounds the bytes of one round's probes, so that a
	// receive buffer holds them while the receiver is busy.
	roundBytes = 512 << 10
	// maxSessionDatagrams bounds what one session makes a server send.
	maxSessionDatagrams = 2048
	// DefaultTimeout bounds a whole measurement, both directions.
	DefaultTimeout = 6 * time.Second
)

// commonMTUs are sizes the first round tries besides an even spread:
// links' and tunnels' usual MTUs, so that most searches end at once.
var commonMTUs = []int{576, 1280, 1281, 1400, 1420, 1450, 1460, 1480, 1492, 1500, 1501, 2000, 4352, 4470, 8000, 8192, 9000, 9001, 9216, 16384, 65535}

// search is a binary search, many sizes a round, for the largest size
// that passes between min and top (the sender's MTU).
type search struct {
	min, top int
	// lo is the largest size that arrived (min-1: none); lost are the
	// sizes sent that did not.
	lo   int
	lost []int
	// confirmed: hi was sent again, alone, and lost again.
	confirmed bool
	rounds    int
}

func newSearch(least, top int) *search {
	return &search{min: least, top: min(top, maxSize), lo: least - 1}
}

// hi is the smallest size sent above lo that did not arrive (top+1: none).
func (s *search) hi() int {
	h := s.top + 1
	for _, l := range s.lost {
		if l > s.lo && l < h {
			h = l
		}
	}
	return h
}

// exact: the path MTU is lo, and lo+1 was lost twice (or lo is the top).
func (s *search) exact() bool {
	return s.lo == s.top || s.lo >= s.min && s.hi() == s.lo+1 && s.confirmed
}

func (s *search) done() bool { return s.exact() || s.rounds >= maxRounds }

// next is the sizes of the next round: the first also tries the common
// MTUs and the top; a search down to one size sends it again, alone, to
// confirm it is lost and not a random drop.
func (s *search) next() []int {
	lo, hi := s.lo, s.hi()
	if hi == lo+1 {
		return []int{hi}
	}
	var out []int
	add := func(n int) {
		if n > lo && n < hi && n >= s.min && n <= s.top && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if s.rounds == 0 {
		add(s.top)
		for _, m := range commonMTUs {
			add(m)
		}
	}
	const k = 16
	if hi-lo-1 <= k {
		for n := lo + 1; n < hi; n++ {
			add(n)
		}
	} else {
		for i := 1; i <= k; i++ {
			add(lo + (hi-lo)*i/(k+1))
		}
	}
	slices.Sort(out)
	// Within roundBytes: the top first (most paths carry it), then the
	// smallest sizes.
	var keep []int
	total := 0
	if s.rounds == 0 && slices.Contains(out, s.top) {
		keep, total = []int{s.top}, s.top
	}
	for _, n := range out {
		if total+n > roundBytes && len(keep) > 0 {
			break
		}
		if !slices.Contains(keep, n) {
			total += n
			keep = append(keep, n)
		}
	}
	return keep
}

// update takes a round's sizes and those that arrived (in any round).
func (s *search) update(sent []int, arrived map[int]bool) {
	s.rounds++
	for n := range arrived {
		s.lo = max(s.lo, n)
	}
	single := len(sent) == 1
	for _, n := range sent {
		if arrived[n] {
			continue
		}
		if single && slices.Contains(s.lost, n) {
			s.confirmed = true
		}
		s.lost = append(s.lost, n)
	}
	if s.lo >= s.hi() {
		s.confirmed = false
	}
}

// Direction is what one direction's probes found.
type Direction struct {
	// Measured: probes crossed (at least one size arrived).
	Measured bool `json:"measured"`
	// NotMeasured says why, when the direction was not measured.
	NotMeasured string `json:"not_measured,omitempty"`
	// PMTU is the largest packet that arrived, in bytes (IP header
	// included); Exact when PMTU+1 was sent twice and lost (or PMTU is
	// the sender's MTU).
	PMTU  int  `json:"pmtu,omitempty"`
	Exact bool `json:"exact,omitempty"`
	// Lost is the smallest size sent above PMTU that did not arrive
	// (0: none).
	Lost int `json:"lost,omitempty"`
	// SenderMTU is the sending interface's MTU (0: unknown), the largest
	// size it could send.
	SenderMTU int `json:"sender_mtu,omitempty"`
	// SenderIface names that interface ("": unknown; the server's comes
	// from the server).
	SenderIface string `json:"sender_iface,omitempty"`
	// Learned is the path MTU the sender's kernel held for the receiver
	// after the probes (IP_MTU; 0: unknown): below SenderMTU, an ICMP
	// "fragmentation needed" (ICMPv6 "packet too big") came back.
	Learned int `json:"learned,omitempty"`
	// Rounds of probes sent.
	Rounds int `json:"rounds,omitempty"`
}

// Result is both directions.
type Result struct {
	Up   Direction `json:"upload"`
	Down Direction `json:"download"`
}

// finish fills d from a search that ended.
func (s *search) finish(d *Direction) {
	d.Rounds = s.rounds
	if s.lo < s.min {
		d.NotMeasured = "no probe arrived (UDP filtered, or a path MTU below " + strconv.Itoa(s.min) + ")"
		return
	}
	d.Measured, d.PMTU, d.Exact = true, s.lo, s.exact()
	if h := s.hi(); h <= s.top {
		d.Lost = h
	}
}
