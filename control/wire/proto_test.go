package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStreamIDQuirk(t *testing.T) {
	var got []int
	for i := range 6 {
		got = append(got, StreamID(i))
	}
	want := []int{1, 3, 4, 5, 6, 7}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stream ids (-want +got):\n%s", diff)
	}
}

func TestCookie(t *testing.T) {
	c := NewCookie()
	if c[CookieSize-1] != 0 {
		t.Errorf("cookie does not end in NUL: %q", c)
	}
	s := CookieString(c)
	if len(s) != CookieSize-1 {
		t.Errorf("cookie text %q: %d characters, want %d", s, len(s), CookieSize-1)
	}
	for _, r := range s {
		if !strings.ContainsRune(cookieChars, r) {
			t.Errorf("cookie %q has %q, outside iperf3's alphabet", s, r)
		}
	}
	if NewCookie() == c {
		t.Error("two cookies are equal")
	}
}

func TestStateBytes(t *testing.T) {
	for _, tc := range []struct {
		s    State
		wire byte
	}{
		{TestStart, 1}, {TestRunning, 2}, {TestEnd, 4}, {ParamExchange, 9}, {CreateStreams, 10},
		{ServerTerminate, 11}, {ClientTerminate, 12}, {ExchangeResults, 13}, {DisplayResults, 14},
		{IperfDone, 16}, {AccessDenied, 0xff}, {ServerError, 0xfe},
	} {
		var b bytes.Buffer
		if err := WriteState(&b, tc.s); err != nil {
			t.Fatal(err)
		}
		if got := b.Bytes(); len(got) != 1 || got[0] != tc.wire {
			t.Errorf("%v on the wire: % x, want %02x", tc.s, got, tc.wire)
		}
		back, err := ReadState(&b)
		if err != nil || back != tc.s {
			t.Errorf("read back %v: %v, %v", tc.s, back, err)
		}
	}
}

func TestFraming(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, map[string]int{"parallel": 4}); err != nil {
		t.Fatal(err)
	}
	raw := b.Bytes()
	if n := binary.BigEndian.Uint32(raw); int(n) != len(raw)-4 {
		t.Errorf("length prefix %d, body %d bytes", n, len(raw)-4)
	}
	if raw[len(raw)-1] == 0 {
		t.Error("frame ends in NUL; iperf3 sends none")
	}
	if string(raw[4:]) != `{"parallel":4}` {
		t.Errorf("body %q is not unformatted JSON", raw[4:])
	}
	var got map[string]int
	if err := ReadJSON(&b, MaxParamsJSON, &got); err != nil || got["parallel"] != 4 {
		t.Errorf("read back: %v, %v", got, err)
	}
}

func frame(body []byte) []byte {
	h := make([]byte, 4, 4+len(body))
	binary.BigEndian.PutUint32(h, uint32(len(body)))
	return append(h, body...)
}

func TestFramingLimit(t *testing.T) {
	for _, tc := range []struct {
		size int
		ok   bool
	}{{MaxParamsJSON, true}, {MaxParamsJSON + 1, false}, {1 << 30, false}} {
		if tc.size >= 1<<20 {
			// Only the header: a refused frame must not be read.
			h := make([]byte, 4)
			binary.BigEndian.PutUint32(h, uint32(tc.size))
			_, err := ReadFrame(bytes.NewReader(h), MaxParamsJSON)
			if !errors.Is(err, ErrTooLarge) {
				t.Errorf("%d-byte header: %v, want ErrTooLarge", tc.size, err)
			}
			continue
		}
		body := []byte(`"` + strings.Repeat("x", tc.size-2) + `"`)
		_, err := ReadFrame(bytes.NewReader(frame(body)), MaxParamsJSON)
		if tc.ok && err != nil {
			t.Errorf("%d bytes: %v, want accepted", tc.size, err)
		}
		if !tc.ok && !errors.Is(err, ErrTooLarge) {
			t.Errorf("%d bytes: %v, want ErrTooLarge", tc.size, err)
		}
	}
	if _, err := ReadFrame(bytes.NewReader(frame([]byte("{}"))[:5]), 100); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated frame: %v, want unexpected EOF", err)
	}
}

func TestParamsDecode(t *testing.T) {
	// As iperf3 3.12 sends them for -P 4 -R -n 1M -w 256K, plus odd
	// number forms cJSON can produce.
	in := `{"tcp":true,"omit":0,"time":0,"num":1048576,"blockcount":0,"parallel":4,"reverse":true,` +
		`"window":262144,"len":131072,"bandwidth":1e+09,"pacing_timer":1000,"client_version":"3.12","unknown":{"x":1}}`
	var p Params
	if err := json.Unmarshal([]byte(in), &p); err != nil {
		t.Fatal(err)
	}
	want := Params{TCP: true, Num: 1048576, Parallel: 4, Reverse: true, Window: 262144, Len: 131072,
		Bandwidth: 1000000000, PacingTimer: 1000, ClientVersion: "3.12"}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("params (-want +got):\n%s", diff)
	}
	if p.ByteLimit() != 1048576 || p.BlockLen() != 131072 {
		t.Errorf("limit %d, block %d", p.ByteLimit(), p.BlockLen())
	}
	// Presence is what counts for iperf3's flags.
	var q Params
	json.Unmarshal([]byte(`{"tcp":1,"nodelay":"yes","bidirectional":false}`), &q)
	if !q.TCP || !q.NoDelay || q.Bidirectional {
		t.Errorf("flags: tcp %v nodelay %v bidir %v", q.TCP, q.NoDelay, q.Bidirectional)
	}
}

func TestIntDecode(t *testing.T) {
	for in, want := range map[string]Int{
		"42": 42, "-1": -1, "18446744073709551615": -1, "1e+09": 1000000000, "3.0": 3, "true": 1, "null": 0,
	} {
		var n Int
		if err := json.Unmarshal([]byte(in), &n); err != nil || n != want {
			t.Errorf("%s: %d, %v; want %d", in, n, err, want)
		}
	}
	var n Int
	if err := json.Unmarshal([]byte(`"12"`), &n); err == nil {
		t.Error(`"12" decoded as a number`)
	}
}

func TestParamsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Params
		code int32
	}{
		{"ok", Params{TCP: true, Parallel: 1, Time: 10}, 0},
		{"udp", Params{UDP: true, Parallel: 1, Len: 1460, Bandwidth: 1 << 20}, 0},
		{"sctp", Params{SCTP: true, Parallel: 1}, 13},
		{"udp and tcp", Params{UDP: true, TCP: true, Parallel: 1}, 131},
		{"udp block too small", Params{UDP: true, Parallel: 1, Len: 15}, 20},
		{"udp block too large", Params{UDP: true, Parallel: 1, Len: 65508}, 20},
		{"burst", Params{UDP: true, Parallel: 1, Burst: 1001}, 15},
		{"negative bitrate", Params{UDP: true, Parallel: 1, Bandwidth: -1}, 114}, // IERECVPARAMS, as iperf3 3.17+
		{"bitrate over 10T", Params{UDP: true, Parallel: 1, Bandwidth: 2e13}, 27},
		{"too many streams", Params{TCP: true, Parallel: 129}, 6},
		{"no streams", Params{TCP: true, Parallel: 0}, 6},
		{"too long", Params{TCP: true, Parallel: 1, Time: MaxTime + 1}, 5},
		{"omit", Params{TCP: true, Parallel: 1, Omit: 601}, 12},
		{"mss", Params{TCP: true, Parallel: 1, MSS: 40000}, 10},
		{"reverse and bidir", Params{TCP: true, Parallel: 1, Reverse: true, Bidirectional: true}, 25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, err := tc.p.Validate()
			if code != tc.code || (code == 0) != (err == nil) {
				t.Errorf("Validate: %d, %v; want code %d", code, err, tc.code)
			}
		})
	}
}

func TestResultsDecode(t *testing.T) {
	// iperf3 3.12's results as a receiver, with its unsigned -1.
	in := `{"cpu_util_total":61.7,"cpu_util_user":3.9,"cpu_util_system":57.8,"sender_has_retransmits":18446744073709551615,` +
		`"congestion_used":"bbr","streams":[{"id":1,"bytes":1888616448,"retransmits":18446744073709551615,"jitter":0,"errors":0,` +
		`"packets":0,"start_time":0,"end_time":1.00099}]}`
	r, err := DecodeResults([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if r.SenderHasRetransmits != -1 || r.Streams[0].Retransmits != -1 || r.Streams[0].Bytes != 1888616448 {
		t.Errorf("decoded %+v", r)
	}
	if _, err := DecodeResults([]byte(`{"cpu_util_total":1,"streams":[]}`)); err == nil {
		t.Error("results without cpu_util_user accepted")
	}
}
