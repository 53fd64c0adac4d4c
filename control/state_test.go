package control

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blastnet/blast/control/wire"
)

// A raw client walks a blast server through iperf3's states.

type rawClient struct {
	t      *testing.T
	port   int
	ctrl   net.Conn
	cookie [wire.CookieSize]byte
}

func dialRaw(t *testing.T, port int) *rawClient {
	t.Helper()
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	rc := &rawClient{t: t, port: port, ctrl: c, cookie: wire.NewCookie()}
	if _, err := c.Write(rc.cookie[:]); err != nil {
		t.Fatal(err)
	}
	return rc
}

func (rc *rawClient) expect(want ...wire.State) {
	rc.t.Helper()
	for _, w := range want {
		s, err := wire.ReadState(rc.ctrl)
		if err != nil || s != w {
			rc.t.Fatalf("state %v, %v; want %v", s, err, w)
		}
	}
}

func (rc *rawClient) stream() net.Conn {
	rc.t.Helper()
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(rc.port))
	if err != nil {
		rc.t.Fatal(err)
	}
	rc.t.Cleanup(func() { c.Close() })
	c.Write(rc.cookie[:])
	return c
}

func TestServerStateMachine(t *testing.T) {
	_, port, log := blastServer(t, ServerConfig{Interval: 0})
	rc := dialRaw(t, port)
	rc.expect(wire.ParamExchange)
	if err := wire.WriteJSON(rc.ctrl, map[string]any{"tcp": true, "omit": 0, "time": 0, "num": 3 << 20, "blockcount": 0, "parallel": 3, "len": 65536, "client_version": "3.12"}); err != nil {
		t.Fatal(err)
	}
	rc.expect(wire.CreateStreams)
	var streams []net.Conn
	for range 3 {
		streams = append(streams, rc.stream())
	}
	rc.expect(wire.TestStart, wire.TestRunning)
	buf := make([]byte, 1<<20)
	for i, c := range streams {
		if _, err := c.Write(buf[:(i+1)*1000]); err != nil {
			t.Fatal(err)
		}
	}
	// On loopback the bytes are in the server's sockets once written;
	// after TEST_END the server drains what its streams have queued.
	wire.WriteState(rc.ctrl, wire.TestEnd)
	rc.expect(wire.ExchangeResults)
	mine := wire.Results{CPUUtilTotal: 1, SenderHasRetransmits: 0, Streams: []wire.StreamResults{
		{ID: 1, Bytes: 1000, Retransmits: 0, EndTime: 1}, {ID: 3, Bytes: 2000, EndTime: 1}, {ID: 4, Bytes: 3000, EndTime: 1}}}
	if err := wire.WriteJSON(rc.ctrl, mine); err != nil {
		t.Fatal(err)
	}
	b, err := wire.ReadFrame(rc.ctrl, wire.MaxResultsJSON)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := wire.DecodeResults(b)
	if err != nil {
		t.Fatal(err)
	}
	rc.expect(wire.DisplayResults)
	wire.WriteState(rc.ctrl, wire.IperfDone)
	// The stream-id quirk on the wire, in connect order, and the bytes
	// each stream carried.
	var ids []int
	for i, st := range theirs.Streams {
		ids = append(ids, int(st.ID))
		if want := int64(i+1) * 1000; int64(st.Bytes) != want {
			t.Errorf("stream %d: server counted %d bytes, want %d", st.ID, st.Bytes, want)
		}
	}
	if stringOf(ids) != "[1,3,4]" {
		t.Errorf("stream ids %v, want [1 3 4]", ids)
	}
	if theirs.SenderHasRetransmits != -1 {
		t.Errorf("a receiving server says sender_has_retransmits %d, want -1", theirs.SenderHasRetransmits)
	}
	if theirs.Blast == nil || theirs.Blast.Backend != "readwrite" {
		t.Errorf("blast results: %+v", theirs.Blast)
	}
	if r := log.wait(t, 1)[0]; r.Err != nil {
		t.Errorf("server: %v", r.Err)
	}
}

func stringOf(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestServerRefusesBadParams(t *testing.T) {
	_, port, log := blastServer(t, ServerConfig{Interval: 0})
	for i, tc := range []struct {
		name   string
		body   []byte
		ierrno int32
	}{
		{"over 8 KiB", []byte(`{"tcp":true,"parallel":1,"title":"` + strings.Repeat("x", wire.MaxParamsJSON) + `"}`), 114},
		{"not JSON", []byte(`{tcp`), 114},
		{"129 streams", []byte(`{"tcp":true,"parallel":129,"time":1}`), 6},
		{"sctp", []byte(`{"sctp":true,"parallel":1,"time":1}`), 13},
		{"udp block of 8 bytes", []byte(`{"udp":true,"parallel":1,"time":1,"len":8}`), 20},
		{"reverse and bidir", []byte(`{"tcp":true,"parallel":1,"reverse":true,"bidirectional":true}`), 25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := dialRaw(t, port)
			rc.expect(wire.ParamExchange)
			rc.ctrl.Write(frame(tc.body))
			s, err := wire.ReadState(rc.ctrl)
			if err != nil || s != wire.ServerError {
				t.Fatalf("state %v, %v; want SERVER_ERROR", s, err)
			}
			err = wire.ReadServerError(rc.ctrl)
			var se wire.ServerErrorCode
			if !errors.As(err, &se) || se.Ierrno != tc.ierrno {
				t.Errorf("server error %v, want i_errno %d", err, tc.ierrno)
			}
			// Closed: EOF, or a reset when the refused frame was left unread.
			if _, err := wire.ReadState(rc.ctrl); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("after SERVER_ERROR: %v, want the connection closed", err)
			}
			if r := log.wait(t, i+1)[i]; r.Err == nil {
				t.Error("the server logged success")
			}
		})
	}
	// Still serving.
	if _, err := Run(context.Background(), Config{Host: "127.0.0.1", Port: port, Bytes: 1 << 20}); err != nil {
		t.Errorf("after refusals: %v", err)
	}
}

// A fake server walks a blast client into each failure.
func fakeServer(t *testing.T, script func(c net.Conn)) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		var ck [wire.CookieSize]byte
		io.ReadFull(c, ck[:])
		script(c)
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestClientStateFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script func(c net.Conn)
		check  func(error) bool
	}{
		{"access denied", func(c net.Conn) { wire.WriteState(c, wire.AccessDenied) }, func(err error) bool { return errors.Is(err, wire.ErrBusy) }},
		{"server error", func(c net.Conn) {
			wire.WriteState(c, wire.ParamExchange)
			wire.ReadFrame(c, wire.MaxParamsJSON)
			wire.WriteServerError(c, 6, 0)
		}, func(err error) bool {
			var se wire.ServerErrorCode
			return errors.As(err, &se) && se.Ierrno == 6 && strings.Contains(err.Error(), "too many parallel streams")
		}},
		{"closed during setup", func(c net.Conn) { wire.WriteState(c, wire.ParamExchange) }, func(err error) bool {
			return strings.Contains(err.Error(), "closed the control connection")
		}},
		{"unknown state", func(c net.Conn) { wire.WriteState(c, wire.State(99)) }, func(err error) bool {
			return strings.Contains(err.Error(), "unexpected state(99)")
		}},
		{"server terminates", func(c net.Conn) {
			wire.WriteState(c, wire.ParamExchange)
			wire.ReadFrame(c, wire.MaxParamsJSON)
			wire.WriteState(c, wire.ServerTerminate)
		}, func(err error) bool { return strings.Contains(err.Error(), "server has terminated") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port := fakeServer(t, tc.script)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := Run(ctx, Config{Host: "127.0.0.1", Port: port, Duration: time.Second})
			if err == nil || !tc.check(err) {
				t.Errorf("error %v", err)
			}
		})
	}
}
