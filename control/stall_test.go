package control

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/internal/clock"
)

// stallingServer plays iperf3's server for one client test of one TCP
// stream up to stage, then says nothing more until the test ends. With
// read false it never reads the data stream either.
func stallingServer(t *testing.T, stage int, read bool) int {
	t.Helper()
	port, _ := stallingServerSaw(t, stage, read)
	return port
}

// stallingServerSaw is stallingServer, and tells on the channel it
// returns (closed) once the server got the client's cookie and, from
// stage 3, the first byte of the data stream (read false: the only one
// it reads).
func stallingServerSaw(t *testing.T, stage int, read bool) (int, <-chan struct{}) {
	t.Helper()
	saw := make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close() })
	go func() {
		ctrl, err := ln.Accept()
		if err != nil {
			return
		}
		defer ctrl.Close()
		var ck [wire.CookieSize]byte
		io.ReadFull(ctrl, ck[:])
		step := func(n int) bool { return stage >= n }
		if stage < 3 {
			close(saw)
		}
		defer func() { <-done }()
		if !step(1) {
			return
		}
		wire.WriteState(ctrl, wire.ParamExchange)
		if _, err := wire.ReadFrame(ctrl, wire.MaxParamsJSON); err != nil || !step(2) {
			return
		}
		wire.WriteState(ctrl, wire.CreateStreams)
		data, err := ln.Accept()
		if err != nil {
			return
		}
		defer data.Close()
		if read {
			go io.Copy(io.Discard, data)
		}
		if !step(3) {
			return
		}
		wire.WriteState(ctrl, wire.TestStart)
		wire.WriteState(ctrl, wire.TestRunning)
		if read {
			close(saw)
		} else {
			var b [1]byte
			if _, err := io.ReadFull(data, b[:]); err != nil {
				return
			}
			close(saw)
		}
		if st, err := wire.ReadState(ctrl); err != nil || st != wire.TestEnd || !step(4) {
			return
		}
		wire.WriteState(ctrl, wire.ExchangeResults)
		if _, err := wire.ReadFrame(ctrl, wire.MaxResultsJSON); err != nil || !step(5) {
			return
		}
		wire.WriteJSON(ctrl, wire.Results{SenderHasRetransmits: -1, Streams: []wire.StreamResults{{ID: 1, Bytes: 64 << 10, Retransmits: -1, EndTime: 0.1}}})
	}()
	return ln.Addr().(*net.TCPAddr).Port, saw
}

// A server that stops answering in any state ends the test with an error
// that names the state and the deadline that passed (StateTimeout, three
// times it from TEST_END on); from the test on, with what was measured.
// The deadlines are the control socket's: the test waits for the client
// to give up, however long a busy host makes that take.
func TestClientStalledServer(t *testing.T) {
	const wait = 300 * time.Millisecond
	for stage, want := range []string{
		"the server stopped answering after the cookie (no PARAM_EXCHANGE) for 300ms: it stalled, or the path to it is down",
		"the server stopped answering after the parameters (no CREATE_STREAMS) for 300ms: it stalled, or the path to it is down",
		"the server stopped answering after its streams were connected (no TEST_START) for 300ms: it stalled, or the path to it is down",
		"the server stopped answering after TEST_END (no EXCHANGE_RESULTS) for 900ms: it stalled, or the path to it is down",
		"the server stopped answering after the client's results (no results of its own) for 900ms: it stalled, or the path to it is down",
		"the server stopped answering after the results (no DISPLAY_RESULTS) for 900ms: it stalled, or the path to it is down",
	} {
		port := stallingServer(t, stage, true)
		// The bound only matters when the client never gives up: then
		// the error is ErrInterrupted, not want.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		r, err := Run(ctx, Config{Host: "127.0.0.1", Port: port, Bytes: 64 << 10, StateTimeout: wait, NoNIC: true})
		cancel()
		if err == nil || err.Error() != want {
			t.Errorf("stage %d: error %v\nwant %s", stage, err, want)
		}
		if stage >= 3 && (r == nil || len(r.Streams) != 1 || r.Streams[0].Bytes != 64<<10) {
			t.Errorf("stage %d: no partial result with the 64 KiB sent: %+v", stage, r)
		}
	}
}

// Interrupted while the server is silent: a word, not a Go error string.
func TestClientInterruptedInSetup(t *testing.T) {
	port, saw := stallingServerSaw(t, 0, true)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// The client is set up as far as the cookie, and waits.
		<-saw
		cancel()
	}()
	_, err := Run(ctx, Config{Host: "127.0.0.1", Port: port, Bytes: 64 << 10, NoNIC: true})
	if !errors.Is(err, ErrInterrupted) || err.Error() != "interrupted while the test was being set up: nothing was measured" {
		t.Errorf("error %v", err)
	}
	if err != nil && strings.Contains(err.Error(), "context") {
		t.Errorf("a Go error string: %v", err)
	}
}

// A server that stops reading mid-test (a -n test with no time limit)
// ends the client's test once nothing moved either way for the stall
// timeout, with what was measured. The client's checks run on a fake
// clock, one at a time: the test ends at the first check 500 ms of the
// clock's time after the last byte moved.
func TestClientStalledSendEnds(t *testing.T) {
	port, saw := stallingServerSaw(t, 3, false)
	fake := clock.NewFake()
	type out struct {
		r   *result.Result
		err error
	}
	done := make(chan out, 1)
	// The client has counted bytes sent (its interval reports run on the
	// real clock).
	sent := make(chan struct{})
	var once sync.Once
	go func() {
		r, err := Run(context.Background(), Config{Host: "127.0.0.1", Port: port, Bytes: 100 << 30, StallTimeout: 500 * time.Millisecond, NoNIC: true, Clock: fake,
			Interval: 100 * time.Millisecond, OnInterval: func(_ *result.Result, iv *result.Interval) {
				for _, st := range iv.Streams {
					if st.Bytes > 0 {
						once.Do(func() { close(sent) })
					}
				}
			}})
		done <- out{r, err}
	}()
	waitClosed(t, saw, "the first byte of the data stream")
	waitClosed(t, sent, "the client's count of bytes sent")
	var o out
	for ended := false; !ended; {
		// The check's timer is armed: move the clock to it.
		select {
		case o = <-done:
			ended = true
		case <-fake.Armed(1):
			fake.Advance(100 * time.Millisecond)
		case <-time.After(30 * time.Second):
			t.Fatal("the client neither armed its stall check nor ended")
		}
	}
	want := "idle timeout for receiving data: the server neither took nor sent a byte for 500ms: it stalled, or the path is down"
	if !errors.Is(o.err, ErrNoData) || o.err.Error() != want {
		t.Errorf("error %v\nwant %s", o.err, want)
	}
	if o.r == nil || len(o.r.Streams) != 1 || o.r.Streams[0].Bytes == 0 {
		t.Errorf("no partial result: %+v", o.r)
	}
}

// waitClosed waits (30 s at most) until ch is closed.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("waited 30s for %s", what)
	}
}

// The kernel giving the control connection up (ETIMEDOUT, from
// --snd-timeout or keepalive) is said as such, not as a silent server.
func TestClientControlTimedOut(t *testing.T) {
	err := peerStateError(stateMsg{err: &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ETIMEDOUT)}}, "ending the test")
	want := "the control connection to the server timed out while ending the test (the kernel gave it up: --snd-timeout, or keepalive found no answer): the path to it is down"
	if err == nil || err.Error() != want {
		t.Errorf("error %v\nwant %s", err, want)
	}
	if deadlinePassed(os.NewSyscallError("read", syscall.ETIMEDOUT)) {
		t.Error("ETIMEDOUT taken for a deadline of ours")
	}
}
