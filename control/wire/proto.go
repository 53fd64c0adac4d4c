package wire

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// State is one control message: a signed byte on the control connection.
type State int8

// The states of iperf3's control protocol (iperf_api.h).
const (
	TestStart       State = 1
	TestRunning     State = 2
	ResultRequest   State = 3 // unused by iperf3
	TestEnd         State = 4
	StreamBegin     State = 5 // unused
	StreamRunning   State = 6 // unused
	StreamEnd       State = 7 // unused
	AllStreamsEnd   State = 8 // unused
	ParamExchange   State = 9
	CreateStreams   State = 10
	ServerTerminate State = 11
	ClientTerminate State = 12
	ExchangeResults State = 13
	DisplayResults  State = 14
	IperfStart      State = 15 // server-internal
	IperfDone       State = 16
	AccessDenied    State = -1
	ServerError     State = -2
)

var stateNames = map[State]string{
	TestStart: "TEST_START", TestRunning: "TEST_RUNNING", ResultRequest: "RESULT_REQUEST",
	TestEnd: "TEST_END", StreamBegin: "STREAM_BEGIN", StreamRunning: "STREAM_RUNNING",
	StreamEnd: "STREAM_END", AllStreamsEnd: "ALL_STREAMS_END", ParamExchange: "PARAM_EXCHANGE",
	CreateStreams: "CREATE_STREAMS", ServerTerminate: "SERVER_TERMINATE",
	ClientTerminate: "CLIENT_TERMINATE", ExchangeResults: "EXCHANGE_RESULTS",
	DisplayResults: "DISPLAY_RESULTS", IperfStart: "IPERF_START", IperfDone: "IPERF_DONE",
	AccessDenied: "ACCESS_DENIED", ServerError: "SERVER_ERROR",
}

func (s State) String() string {
	if n, ok := stateNames[s]; ok {
		return n
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// Protocol limits and defaults (iperf.h, iperf_api.h).
const (
	DefaultPort     = 5201
	CookieSize      = 37
	DefaultTCPBlock = 128 * 1024
	MaxStreams      = 128
	MaxTime         = 86400
	MaxOmit         = 600
	MaxMSS          = 32767
	MaxParamsJSON   = 8192
	// MaxResultsJSON bounds what this side accepts as results; iperf3 3.18
	// dropped its limit, but a peer must not make us allocate without end.
	MaxResultsJSON = 64 << 20
)

// Errors a peer can cause.
var (
	// ErrBusy: the server answered ACCESS_DENIED.
	ErrBusy = errors.New("the server is busy running a test; try again later or raise its --max-clients")
	// ErrTooLarge: a framed JSON message is longer than allowed.
	ErrTooLarge = errors.New("JSON message too large")
)

const cookieChars = "abcdefghijklmnopqrstuvwxyz234567"

// NewCookie returns a fresh cookie as iperf3 makes it: 36 characters from
// the base32 alphabet and a NUL.
func NewCookie() [CookieSize]byte {
	var c [CookieSize]byte
	var r [CookieSize - 1]byte
	rand.Read(r[:])
	for i, b := range r {
		c[i] = cookieChars[int(b)%len(cookieChars)]
	}
	return c
}

// CookieString is the printable part of a cookie (up to the NUL).
func CookieString(c [CookieSize]byte) string {
	for i, b := range c {
		if b == 0 {
			return string(c[:i])
		}
	}
	return string(c[:])
}

// StreamID returns the id of the i-th stream (0-based) of a test: 1, 3, 4,
// 5, ... iperf_add_stream skips 2 and keeps doing so for compatibility, and
// results are matched by these ids.
func StreamID(i int) int {
	if i == 0 {
		return 1
	}
	return i + 2
}

// ReadState reads one state byte.
func ReadState(r io.Reader) (State, error) {
	var b [1]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, err
	}
	return State(int8(b[0])), nil
}

// WriteState writes one state byte.
func WriteState(w io.Writer, s State) error {
	_, err := w.Write([]byte{byte(s)})
	return err
}

// WriteJSON frames v as iperf3 does: a 4-byte big-endian length, then the
// unformatted JSON without a trailing NUL.
func WriteJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	msg := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(msg, uint32(len(b)))
	copy(msg[4:], b)
	_, err = w.Write(msg)
	return err
}

// ReadFrame reads one framed JSON message of at most limit bytes. A longer
// message is refused (wrapping ErrTooLarge) without reading its body.
func ReadFrame(r io.Reader, limit int) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(h[:])
	if uint64(n) > uint64(limit) {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, n, limit)
	}
	// The body is held as it arrives, in a buffer that doubles up to n:
	// a header alone (4 bytes from a peer) costs frameChunk, not n.
	size := int(n) // at most limit, an int
	b := make([]byte, min(size, frameChunk))
	got := 0
	for {
		m, err := io.ReadFull(r, b[got:])
		got += m
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if got == size {
			return b, nil
		}
		more := make([]byte, min(2*len(b), size))
		copy(more, b)
		b = more
	}
}

// frameChunk is what ReadFrame holds before a frame's bytes arrive.
const frameChunk = 64 << 10

// ReadJSON reads one framed JSON message of at most limit bytes into v.
func ReadJSON(r io.Reader, limit int, v any) error {
	b, err := ReadFrame(r, limit)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("parse JSON: %w", err)
	}
	return nil
}

// ServerErrorCode is what follows SERVER_ERROR: iperf3's i_errno and the
// errno of the failing call.
type ServerErrorCode struct {
	Ierrno int32
	Errno  int32
	// Reason is why, in words, from a blast server (which follows the
	// numbers with a frame of JSON {"reason": ...} for a blast client);
	// empty from iperf3.
	Reason string
}

var ierrnoText = map[int32]string{
	5: "test duration too long", 6: "too many parallel streams", 7: "block size too large",
	10: "MSS too large", 12: "bogus --omit value", 21: "bad TOS value",
	13: "an option you are trying to set is not implemented yet", 15: "invalid burst count (maximum = 1000)",
	20: "block size invalid (minimum = 16 bytes, maximum = 65507 bytes)", 131: "protocol does not exist",
	IENewTest: "unable to create a new test", 102: "unable to start listener for connections", 114: "unable to receive parameters from client",
	119: "the client has terminated", 120: "the server has terminated",
	121: "the server is busy running a test", 123: "unable to set TCP MSS",
	124: "unable to set socket buffer size", 125: "unable to set IP TOS",
	134: "unable to set TCP congestion control", 142: "test authorization failed",
	IETotalRate:   "total required bandwidth is larger than server limit",
	IEMaxDuration: "client's requested duration exceeds the server's maximum permitted limit",
	IENoMsg:       "idle timeout for receiving data", IEDurationExpired: "server test duration expired",
	201: "unable to initialize stream", 202: "unable to start stream listener",
	204: "unable to accept stream connection",
}

func (e ServerErrorCode) Error() string {
	what := ierrnoText[e.Ierrno]
	if what == "" {
		what = "iperf3 error " + strconv.Itoa(int(e.Ierrno))
	}
	if e.Errno != 0 {
		what = fmt.Sprintf("%s (errno %d)", what, e.Errno)
	}
	if e.Reason != "" {
		what += ": " + e.Reason
	}
	return "server error: " + what
}

// maxReasonJSON bounds the reason frame after SERVER_ERROR.
const maxReasonJSON = 4096

type serverReason struct {
	Reason string `json:"reason"`
}

// WriteReason follows SERVER_ERROR with why, for a blast client: without
// the control characters the client would drop, cut short (at a
// character) until its JSON fits maxReasonJSON, which escaping can make
// six times longer than the text.
func WriteReason(w io.Writer, why string) error {
	why = ReasonText(why)
	n := len(why)
	for {
		for n > 0 && n < len(why) && !utf8.RuneStart(why[n]) {
			n--
		}
		b, err := json.Marshal(serverReason{why[:n]})
		if err != nil {
			return err
		}
		if len(b) <= maxReasonJSON {
			return WriteJSON(w, serverReason{why[:n]})
		}
		n = n * maxReasonJSON / len(b)
	}
}

// ReadReason reads the reason a blast server sends after SERVER_ERROR,
// waiting at most wait; "" when none comes (iperf3 sends none, and
// closes). Control characters are dropped: it goes to a terminal.
func ReadReason(c net.Conn, wait time.Duration) string {
	c.SetReadDeadline(time.Now().Add(wait))
	var r serverReason
	if err := ReadJSON(c, maxReasonJSON, &r); err != nil {
		return ""
	}
	return ReasonText(r.Reason)
}

// ReasonText is s without control characters (C0, DEL, C1).
func ReasonText(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, s)
}

func ReadServerError(r io.Reader) error {
	var b [8]byte
	if n, err := io.ReadFull(r, b[:]); err != nil {
		if n >= 4 && errors.Is(err, io.ErrUnexpectedEOF) && binary.BigEndian.Uint32(b[:4]) == IEAuthTest {
			// iperf3 before 3.17 sends IEAUTHTEST without an errno,
			// and closes.
			return ServerErrorCode{Ierrno: IEAuthTest}
		}
		return fmt.Errorf("server error (details unreadable: %v)", err)
	}
	return ServerErrorCode{Ierrno: int32(binary.BigEndian.Uint32(b[:4])), Errno: int32(binary.BigEndian.Uint32(b[4:]))}
}

func WriteServerError(w io.Writer, ierrno, errno int32) error {
	var b [9]byte
	st := ServerError
	b[0] = byte(st)
	binary.BigEndian.PutUint32(b[1:5], uint32(ierrno))
	binary.BigEndian.PutUint32(b[5:], uint32(errno))
	_, err := w.Write(b[:])
	return err
}

func itoa(i int) string { return strconv.Itoa(i) }
