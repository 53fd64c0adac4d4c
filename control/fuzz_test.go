package control

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/control/render"
	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
)

// The fuzz targets of what a peer or a user hands the control protocol:
// every one must hold for any input, never panic, and keep its errors to
// one line (they are printed as one, and logged by the server as one).

// oneLine fails t when err's text spans lines.
func oneLine(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil && strings.ContainsAny(err.Error(), "\r\n") {
		t.Errorf("%s: error of more than one line: %q", what, err)
	}
}

// FuzzReadFrame: the framing of JSON messages (a 4-byte length, then the
// body). A frame over the limit is refused from its header alone, so a
// peer's 4 bytes cannot make the reader allocate what they claim; one
// within it is read whole or not at all, and written again by WriteJSON
// it reads back the same.
func FuzzReadFrame(f *testing.F) {
	for _, b := range [][]byte{
		frame([]byte(`{"tcp":true,"omit":0,"time":10,"num":0,"blockcount":0,"parallel":1,"len":131072,"client_version":"3.16"}`)),
		frame([]byte(`{}`)),
		frame([]byte(`"x"`))[:5],
		{0, 0, 0, 0},
		{0, 0, 0x20, 0x01}, // MaxParamsJSON + 1
		{0xff, 0xff, 0xff, 0xff},
		{0x04, 0x00, 0x00, 0x00, '{'}, // claims 64 MiB, brings one byte
		{0, 0, 0},
	} {
		f.Add(b, uint16(wire.MaxParamsJSON))
		f.Add(b, uint16(0))
		f.Add(b, uint16(math.MaxUint16))
	}
	f.Fuzz(func(t *testing.T, in []byte, limit16 uint16) {
		// The two limits the protocol uses; limit16 picks one (or a small
		// one of its own, to reach the boundary).
		limit := int(limit16)
		if limit16 == math.MaxUint16 {
			limit = wire.MaxResultsJSON
		}
		b, err := wire.ReadFrame(bytes.NewReader(in), limit)
		oneLine(t, "ReadFrame", err)
		var n uint32
		if len(in) >= 4 {
			n = binary.BigEndian.Uint32(in)
		}
		switch {
		case len(in) < 4:
			if err == nil {
				t.Fatalf("a %d-byte header was read as a frame", len(in))
			}
		case uint64(n) > uint64(limit):
			if !errors.Is(err, wire.ErrTooLarge) {
				t.Fatalf("a %d-byte frame over the limit %d: %v, want ErrTooLarge", n, limit, err)
			}
		case uint64(len(in)-4) < uint64(n):
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("a %d-byte frame cut to %d: %v, want unexpected EOF", n, len(in)-4, err)
			}
		default:
			if err != nil {
				t.Fatalf("a whole %d-byte frame: %v", n, err)
			}
			if !bytes.Equal(b, in[4:4+n]) {
				t.Fatalf("frame body %q, want %q", b, in[4:4+n])
			}
			if cap(b) > 2*len(b)+4096 {
				t.Errorf("a %d-byte frame holds %d bytes", len(b), cap(b))
			}
		}
		// JSON in a frame: what ReadJSON decodes, WriteJSON frames so that
		// it decodes the same again.
		var v any
		if err := wire.ReadJSON(bytes.NewReader(in), limit, &v); err != nil {
			oneLine(t, "ReadJSON", err)
			return
		}
		var w bytes.Buffer
		if err := wire.WriteJSON(&w, v); err != nil {
			t.Fatalf("WriteJSON of what ReadJSON read: %v", err)
		}
		var back any
		if err := wire.ReadJSON(&w, wire.MaxResultsJSON, &back); err != nil {
			t.Fatalf("ReadJSON of what WriteJSON wrote: %v", err)
		}
		if diff := cmp.Diff(v, back); diff != "" {
			t.Errorf("JSON framed again reads back otherwise (-first +again):\n%s", diff)
		}
	})
}

// FuzzServerError: a state byte, and after SERVER_ERROR the two error
// numbers, as the client reads them. Any bytes make a state and a
// one-line error; wire.WriteServerError's bytes read back as they were
// written.
func FuzzServerError(f *testing.F) {
	f.Add([]byte{0xfe, 0, 0, 0, 121, 0, 0, 0, 0})
	f.Add([]byte{0xfe, 0, 0, 0, 6, 0, 0, 0, 22})
	f.Add([]byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0x80, 0, 0, 0})
	f.Add([]byte{0xfe, 0, 0, 0})
	f.Add([]byte{0xfe, 0, 0, 0, 142})
	f.Add([]byte{0xff})
	f.Add([]byte{13})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		s, err := wire.ReadState(r)
		if len(in) == 0 {
			if err == nil {
				t.Fatal("a state read from nothing")
			}
			return
		}
		if err != nil || s != wire.State(int8(in[0])) {
			t.Fatalf("state byte %#x read as %v, %v", in[0], s, err)
		}
		if name := s.String(); name == "" || strings.ContainsAny(name, "\r\n") {
			t.Errorf("state %d named %q", s, name)
		}
		if s != wire.ServerError {
			return
		}
		err = wire.ReadServerError(r)
		if err == nil {
			t.Fatal("SERVER_ERROR read as no error")
		}
		oneLine(t, "wire.ReadServerError", err)
		var se wire.ServerErrorCode
		if len(in) < 9 {
			// iperf3 before 3.17 sends IEAUTHTEST without an errno.
			auth := len(in) >= 5 && binary.BigEndian.Uint32(in[1:]) == wire.IEAuthTest
			if got := errors.As(err, &se); got != auth || (auth && se != wire.ServerErrorCode{Ierrno: wire.IEAuthTest}) {
				t.Errorf("%d bytes of error numbers read as %v", len(in)-1, err)
			}
			return
		}
		if !errors.As(err, &se) {
			t.Fatalf("9 bytes read as %v, want a ServerErrorCode", err)
		}
		var w bytes.Buffer
		if err := wire.WriteServerError(&w, se.Ierrno, se.Errno); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(w.Bytes(), in[:9]) {
			t.Errorf("%+v written as %x, read from %x", se, w.Bytes(), in[:9])
		}
		// A blast server follows with its reason, in a frame: whatever
		// the rest holds, the error stays one line.
		se.Reason = fuzzReadReason(t, in[9:])
		oneLine(t, "SERVER_ERROR with a reason", se)
	})
}

// fuzzReadReason reads a reason from b as a client does after
// SERVER_ERROR and checks it holds nothing a terminal would act on.
func fuzzReadReason(t *testing.T, b []byte) string {
	t.Helper()
	c, peer := net.Pipe()
	defer c.Close()
	go func() {
		peer.Write(b)
		peer.Close()
	}()
	r := wire.ReadReason(c, time.Second)
	if strings.ContainsFunc(r, func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }) {
		t.Errorf("reason %q holds control characters", r)
	}
	return r
}

// FuzzReason: the reason a blast server sends after SERVER_ERROR, for
// any error text: it arrives (cut short if need be, never lost) and
// reads as the text without its control characters.
func FuzzReason(f *testing.F) {
	for _, s := range []string{"parameters refused: duration 90000 s: must be 0 to 86400", "", "\x1b[2J\n\r", "é\u2028x",
		strings.Repeat("<", 3000), strings.Repeat("é", 1500), strings.Repeat("\x01", 800) + "tail"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, why string) {
		if !utf8.ValidString(why) {
			return // error texts are UTF-8; JSON would replace the rest
		}
		var w bytes.Buffer
		if err := wire.WriteReason(&w, why); err != nil {
			t.Fatal(err)
		}
		got := fuzzReadReason(t, w.Bytes())
		want := strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				return -1
			}
			return r
		}, why)
		if !strings.HasPrefix(want, got) || (got == "" && want != "") {
			t.Errorf("reason %.60q read as %.60q", why, got)
		}
	})
}

// FuzzParams: the parameters a client sends, as the server decodes and
// validates them. Whatever Validate accepts is bounded (the server sizes
// buffers and byte counts from it) and encodes to JSON that decodes and
// validates the same.
func FuzzParams(f *testing.F) {
	for _, s := range []string{
		`{"tcp":true,"omit":0,"time":10,"num":0,"blockcount":0,"parallel":1,"len":131072,"pacing_timer":1000,"client_version":"3.16"}`,
		`{"tcp":true,"omit":0,"time":0,"num":1048576,"blockcount":0,"parallel":4,"reverse":true,"window":262144,"len":131072,"bandwidth":1e+09,"client_version":"3.12","unknown":{"x":1}}`,
		`{"udp":true,"omit":0,"time":3,"num":0,"blockcount":0,"parallel":2,"len":1460,"bandwidth":10000000,"burst":10,"udp_counters_64bit":1,"repeating_payload":1,"gso":1,"gso_dg_size":1460,"gso_bf_size":65000,"gro":1,"gro_bf_size":65000}`,
		`{"tcp":1,"omit":0,"time":2,"num":0,"blockcount":100,"parallel":1,"len":8192,"bidirectional":true,"TOS":184,"flowlabel":5,"congestion":"bbr","MSS":1400,"nodelay":"yes","zerocopy":1}`,
		`{"tcp":true,"time":1,"parallel":1,"blast":{"version":"blast 0.1","sys":true,"backend":"mmsg","backend_options":"batch=8,gso","rx_backend":"readwrite"}}`,
		`{"time":18446744073709551615,"parallel":true,"num":null,"blockcount":false}`,
		`{"time":{"a":` + "\n" + `1},"parallel":1}`,
		`{"parallel":1,"blockcount":70368744177664,"len":131072}`,
		`{"parallel":1,"num":9.223372036854775807e18}`,
		`{"sctp":true}`,
		`[]`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > wire.MaxParamsJSON {
			return // ReadFrame refuses it
		}
		var p wire.Params
		if err := json.Unmarshal(b, &p); err != nil {
			oneLine(t, "parameters", err)
			return
		}
		if p.Parallel == 0 {
			p.Parallel = 1 // as the server does
		}
		code, err := p.Validate()
		if (code == 0) != (err == nil) {
			t.Fatalf("Validate: code %d with error %v", code, err)
		}
		if err != nil {
			oneLine(t, "Validate", err)
			return
		}
		if n := p.BlockLen(); n < 1 || n > 1<<20 {
			t.Errorf("accepted parameters with a %d-byte block", n)
		}
		if l := p.ByteLimit(); l < 0 || (l == 0 && (p.Num > 0 || p.BlockCount > 0)) {
			t.Errorf("num %d, blockcount %d of %d bytes: byte limit %d", p.Num, p.BlockCount, p.BlockLen(), l)
		}
		enc, err := json.Marshal(&p)
		if err != nil {
			t.Fatalf("encode accepted parameters: %v", err)
		}
		var q wire.Params
		if err := json.Unmarshal(enc, &q); err != nil {
			t.Fatalf("decode %s: %v", enc, err)
		}
		if diff := cmp.Diff(p, q); diff != "" {
			t.Errorf("parameters encoded as %s decode otherwise (-first +again):\n%s", enc, diff)
		}
		if c, err := q.Validate(); c != 0 {
			t.Errorf("parameters encoded again: refused with %d, %v", c, err)
		}
	})
}

// FuzzInt: iperf3's JSON integers (cJSON writes any number, and -1
// through an unsigned type). A number decodes to the same value on every
// platform (no float to int conversion out of range), and what decodes
// encodes back to itself.
func FuzzInt(f *testing.F) {
	for _, s := range []string{"42", "-1", "18446744073709551615", "1e+09", "3.0", "true", "null", "false",
		`"12"`, "9.223372036854775807e18", "-9.223372036854775808e18", "1e300", "-0.5", "{\"a\":\n1}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var n wire.Int
		if err := n.UnmarshalJSON(b); err != nil {
			oneLine(t, "Int", err)
			return
		}
		s := strings.TrimSpace(string(b))
		if v, err := strconv.ParseFloat(s, 64); err == nil {
			_, intErr := strconv.ParseInt(s, 10, 64)
			_, uintErr := strconv.ParseUint(s, 10, 64)
			// A number that is no int64 nor uint64 in digits keeps its
			// sign (rounded toward zero).
			if intErr != nil && uintErr != nil && ((v >= 1 && n <= 0) || (v <= -1 && n >= 0)) {
				t.Errorf("%s decoded as %d", b, n)
			}
		}
		enc, err := json.Marshal(n)
		if err != nil {
			t.Fatal(err)
		}
		var back wire.Int
		if err := back.UnmarshalJSON(enc); err != nil || back != n {
			t.Errorf("%d encoded as %s decodes as %d, %v", n, enc, back, err)
		}
	})
}

// resultsSeeds are results as iperf3 and blast send them.
var resultsSeeds = []string{
	// iperf3 3.12 as a receiver, with its unsigned -1.
	`{"cpu_util_total":61.7,"cpu_util_user":3.9,"cpu_util_system":57.8,"sender_has_retransmits":18446744073709551615,` +
		`"congestion_used":"bbr","streams":[{"id":1,"bytes":1888616448,"retransmits":18446744073709551615,"jitter":0,"errors":0,` +
		`"packets":0,"start_time":0,"end_time":1.00099}]}`,
	// iperf3 3.16 as a UDP receiver of two streams, with the omitted counts.
	`{"cpu_util_total":2.1,"cpu_util_user":0.4,"cpu_util_system":1.7,"sender_has_retransmits":-1,"streams":[` +
		`{"id":1,"bytes":2920000,"retransmits":-1,"jitter":0.000183,"errors":412,"omitted_errors":0,"packets":34247,"omitted_packets":0,"start_time":0,"end_time":2.000842},` +
		`{"id":3,"bytes":2920000,"retransmits":-1,"jitter":0.000247,"errors":1389,"packets":34239,"start_time":0,"end_time":2.000842}]}`,
	// blast, with its own part.
	`{"cpu_util_total":55.2,"cpu_util_user":2.1,"cpu_util_system":53.1,"sender_has_retransmits":0,"congestion_used":"cubic",` +
		`"streams":[{"id":1,"bytes":3456106496,"retransmits":-1,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":3.041}],` +
		`"blast":{"version":"blast 0.1 (iperf3 3.x protocol)","backend":"readwrite","streams":[{"id":1,"io":{"bytes":3456106496,"calls":41237,"min_io":1448,"max_io":131072},` +
		`"facts":{"counts":{"syscalls":41237}},"udp":{"packets":5,"lost":1,"out_of_order":2,"duplicates":3,"jitter":0.5}}],` +
		`"note":"the server cannot send with afxdp","cpu_seconds":{"user":0.06,"system":1.61},"errors":["stream 1: boom"]}}`,
	// The server's output for --get-server-output.
	`{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":1,"sender_has_retransmits":1,"server_output_json":{"start":{},"end":{}},` +
		`"server_output_text":"Accepted connection\n","streams":[]}`,
	// Peers' mistakes: a stream this test does not have, a zero-length
	// stream time, a missing key, numbers out of range.
	`{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":1,"sender_has_retransmits":1,"streams":[{"id":9}]}`,
	`{"cpu_util_total":1e308,"cpu_util_user":-1,"cpu_util_system":1,"sender_has_retransmits":1,"streams":[{"id":1,"bytes":-5,"start_time":3,"end_time":3,"packets":-1,"errors":9e18}]}`,
	`{"cpu_util_total":1,"streams":[]}`,
	`{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":1,"sender_has_retransmits":1,"streams":null}`,
}

// FuzzResults: the peer's results at the end of a test, decoded as both
// sides do and merged into a test's Result, which then renders as text
// and JSON. Decoded results encode to JSON that decodes to the same.
func FuzzResults(f *testing.F) {
	for _, s := range resultsSeeds {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(3))
	}
	tests := []func() *result.Result{
		func() *result.Result { return fuzzResult("client", wire.Params{TCP: true, Parallel: 1}) },
		func() *result.Result {
			return fuzzResult("client", wire.Params{TCP: true, Parallel: 2, Bidirectional: true})
		},
		func() *result.Result { return fuzzResult("server", wire.Params{TCP: true, Parallel: 2}) },
		func() *result.Result { return fuzzResult("client", wire.Params{UDP: true, Parallel: 2}) },
		func() *result.Result {
			return fuzzResult("client", wire.Params{UDP: true, Parallel: 2, Bidirectional: true})
		},
		func() *result.Result { return fuzzResult("server", wire.Params{UDP: true, Parallel: 2}) },
	}
	f.Fuzz(func(t *testing.T, b []byte, which uint8) {
		pr, err := wire.DecodeResults(b)
		if err != nil {
			oneLine(t, "wire.DecodeResults", err)
			return
		}
		enc, err := json.Marshal(pr)
		if err != nil {
			t.Fatalf("encode decoded results: %v", err)
		}
		again, err := wire.DecodeResults(enc)
		if err != nil {
			t.Fatalf("results encoded as %s do not decode: %v", enc, err)
		}
		enc2, err := json.Marshal(again)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc, enc2) {
			t.Errorf("results encode as\n%s\nthen as\n%s", enc, enc2)
		}

		r := tests[int(which)%len(tests)]()
		s := &session{res: r, udp: r.UDP()}
		if err := s.merge(pr); err != nil {
			oneLine(t, "merge", err)
			return
		}
		if txt := render.TextString(r); txt == "" {
			t.Error("no text")
		}
		if _, err := render.JSONBytes(r); err != nil {
			t.Errorf("the JSON of a test merged with %s: %v", b, err)
		}
	})
}

// fuzzResult is a finished test of role with p's streams (ids from 1,
// the client's senders first), 1 MB each over 1 s, for FuzzResults to
// merge the peer's results into (the render package's goldens hold the
// renderings themselves).
func fuzzResult(role string, p wire.Params) *result.Result {
	p.Blast = &wire.BlastParams{Version: result.Version}
	r := &result.Result{Role: role, Version: result.Version, Time: time.Unix(1700000000, 0), Params: p}
	n := int(p.Parallel)
	if p.Bidirectional {
		n *= 2
	}
	for i := range n {
		sender := (i < int(p.Parallel)) == (role == "client")
		st := &result.StreamResult{ID: wire.StreamID(i), Socket: 5 + i, Sender: sender, Bytes: 1 << 20, Seconds: 1, PeerBytes: -1, PeerSeconds: -1, Retransmits: -1}
		if p.UDP {
			st.UDP = &wire.UDPStats{Packets: 700}
		}
		r.Streams = append(r.Streams, st)
	}
	return r
}

// FuzzUDPReceive: the datagram header of a UDP stream, as the receiver
// counts it. in holds datagrams, each a length byte and that many bytes
// (wide: 64-bit sequence numbers). Whatever arrives, every datagram with
// a header is counted exactly once (in order, out of order or a
// duplicate), a duplicate is what a model of the last 4096 sequence
// numbers says it is, and the counts stay consistent: loss never
// negative, never more than the sequence numbers skipped.
func FuzzUDPReceive(f *testing.F) {
	dg := func(seq uint64, wide bool) []byte {
		p := datagram(time.Second, seq, wide)[:16]
		if !wide {
			p = p[:12]
		}
		return append([]byte{byte(len(p))}, p...)
	}
	cat := func(ps ...[]byte) []byte { return bytes.Join(ps, nil) }
	f.Add(cat(dg(1, false), dg(2, false), dg(3, false)), false)
	f.Add(cat(dg(1, false), dg(3, false), dg(2, false), dg(2, false), dg(5000, false), dg(4, false)), false)
	f.Add(cat(dg(1, true), dg(1<<63, true), dg(0, true), dg(1<<64-1, true)), true)
	f.Add(cat(dg(7, true), dg(1<<63-1, true), dg(2, true)), true)
	f.Add(cat(dg(0, false), dg(1<<32-1, false), []byte{3, 1, 2, 3}), false)
	f.Fuzz(func(t *testing.T, in []byte, wide bool) {
		u := newUDPFraming(wide)
		seen := map[int64]bool{}
		var high, lost int64
		var got, inOrder int64
		at := time.Duration(0)
		for len(in) > 0 {
			n := min(int(in[0]), len(in)-1)
			p := in[1 : 1+n]
			in = in[1+n:]
			at += 37 * time.Microsecond
			before := u.cur
			u.Receive(p, at)
			c := u.cur
			if len(p) < u.headerLen() {
				if c != before {
					t.Fatalf("a %d-byte datagram changed the counts: %+v to %+v", len(p), before, c)
				}
				continue
			}
			got++
			var seq int64
			if wide {
				seq = int64(binary.BigEndian.Uint64(p[8:]))
			} else {
				seq = int64(binary.BigEndian.Uint32(p[8:]))
			}
			// The model: iperf3's counts, and a set of the numbers seen.
			want := "out of order"
			switch {
			case seq > high:
				want = "in order"
				lost += seq - 1 - high
				high = seq
				inOrder++
			case seq > high-4096 && seen[seq]:
				want = "duplicate"
			default:
				if lost > 0 {
					lost--
				}
			}
			seen[seq] = true
			var is string
			switch {
			case c.Packets != before.Packets && c.OutOfOrder == before.OutOfOrder && c.Duplicates == before.Duplicates:
				is = "in order"
			case c.Packets == before.Packets && c.OutOfOrder == before.OutOfOrder+1 && c.Duplicates == before.Duplicates:
				is = "out of order"
			case c.Packets == before.Packets && c.OutOfOrder == before.OutOfOrder && c.Duplicates == before.Duplicates+1:
				is = "duplicate"
			default:
				t.Fatalf("sequence number %d: counts went from %+v to %+v", seq, before, c)
			}
			if is != want {
				t.Fatalf("sequence number %d after %d: counted %s, want %s", seq, before.Packets, is, want)
			}
			if c.Packets != high || c.Lost != lost {
				t.Fatalf("sequence number %d: highest %d lost %d, want %d and %d", seq, c.Packets, c.Lost, high, lost)
			}
			if c.Lost < 0 || c.Lost > c.Packets || c.Packets < 0 {
				t.Fatalf("sequence number %d: %+v", seq, c)
			}
			if math.IsNaN(c.Jitter) || math.IsInf(c.Jitter, 0) || c.Jitter < 0 {
				t.Fatalf("jitter %v", c.Jitter)
			}
		}
		c := u.final()
		if inOrder+c.OutOfOrder+c.Duplicates != got {
			t.Errorf("%d datagrams received, counted %d in order + %d out of order + %d duplicates", got, inOrder, c.OutOfOrder, c.Duplicates)
		}
		if p := u.stats(); p.Packets > c.Packets || p.OutOfOrder > c.OutOfOrder || p.Duplicates > c.Duplicates {
			t.Errorf("published %+v, more than the final %+v", p, c)
		}
	})
}

// FuzzUDPRoundTrip: datagrams a sender stamps, delivered in any order
// (each once, or some twice), are counted without loss: every one in
// order or out of order, the repeated ones as duplicates.
func FuzzUDPRoundTrip(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3}, false, uint16(100))
	f.Add([]byte{3, 2, 1, 0, 0}, true, uint16(16))
	f.Add([]byte{200, 1, 7, 7, 7, 9, 0}, false, uint16(1460))
	f.Fuzz(func(t *testing.T, order []byte, wide bool, size uint16) {
		tx, rx := newUDPFraming(wide), newUDPFraming(wide)
		n := len(order)
		if n == 0 || n > 2048 {
			return
		}
		size = max(size%2048, uint16(tx.headerLen()))
		dgs := make([][]byte, n)
		for i := range dgs {
			dgs[i] = make([]byte, size)
			tx.Stamp(dgs[i], time.Duration(i)*time.Millisecond)
		}
		// order[i] swaps datagram i with one up to 255 later, and a
		// repeated swap target sends one twice.
		perm := make([]int, n)
		for i := range perm {
			perm[i] = i
		}
		var extra []int
		sent := map[int]bool{}
		for i, o := range order {
			j := min(i+int(o), n-1)
			perm[i], perm[j] = perm[j], perm[i]
			if o == 7 {
				extra = append(extra, perm[i])
			}
		}
		all := append(perm, extra...)
		dups := int64(0)
		for k, i := range all {
			if sent[i] {
				dups++
			}
			sent[i] = true
			rx.Receive(dgs[i], time.Duration(n+k)*time.Millisecond)
		}
		c := rx.final()
		if c.Packets != int64(n) || c.Lost != 0 || c.Duplicates != dups {
			t.Errorf("%d datagrams, %d of them twice: counted %+v", n, dups, c)
		}
	})
}

// FuzzUnits: the server's --server-bitrate-limit (package units fuzzes
// the sizes, rates, TOS and DSCP values of the command line). Any text is
// parsed or refused in one line; what parses, validate accepts.
func FuzzUnits(f *testing.F) {
	for _, s := range []string{"100", "1K", "1.5M", "2g", "0", "1T", "", "x", "-1", "1Q", "1e30", "1e300T", "NaN", "Inf",
		"0x10", "020", "256", "EF", "af11", "cs7", "63", "64", "0x3f",
		"100M", "1G/10", "10M/1001", "/5", "10T", "10.1T", "1e-320", "100M/5", "1G/0.05", "1G/60", "1G/NaN", "1G/", "\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if l, err := ParseRateLimit(s); err != nil {
			oneLine(t, "ParseRateLimit", err)
		} else if err := l.validate(); err != nil {
			t.Errorf("ParseRateLimit(%q) = %+v, which validate refuses: %v", s, l, err)
		}
	})
}

// A frame's header alone, claiming the most a results message may hold,
// costs the reader a chunk, not what it claims.
func TestReadFrameHeaderAlone(t *testing.T) {
	var h [4]byte
	binary.BigEndian.PutUint32(h[:], wire.MaxResultsJSON)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := wire.ReadFrame(bytes.NewReader(h[:]), wire.MaxResultsJSON)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a header alone: %v, want unexpected EOF", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("a header alone allocated %d bytes", n)
	}
}
