package control

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

// faultCase is a lab test whose link goes down while the test runs, on
// the client's side or the server's.
type faultCase struct {
	name string
	side func(*netlab.Lab) *netlab.Host // whose link goes down
	cfg  Config
	// The client's error wraps one of is (if any) and says want.
	is   []error
	want string
	// timed: nothing watches for the fault during the test, which runs
	// to its time (else the fault ends it, however long -t is).
	timed bool
}

// How soon the client notices depends on what watches for it: a
// receiving client's --rcv-timeout (its stall watch), a sending client's
// --snd-timeout (TCP_USER_TIMEOUT fails the stream); a sending client
// with neither runs to its time, waits up to 1 s for its data to be
// acknowledged, sends TEST_END and gives the server 3 × StateTimeout to
// answer.
var faultCases = []faultCase{
	{"client side, client sends, snd-timeout", func(l *netlab.Lab) *netlab.Host { return l.A },
		Config{SndTimeout: time.Second, StateTimeout: 2 * time.Second},
		// The unacknowledged data times out; the kernel reports the
		// route's error if it saw one.
		[]error{syscall.ETIMEDOUT, syscall.ENETUNREACH}, "data stream failed", false},
	{"server side, -R, rcv-timeout", func(l *netlab.Lab) *netlab.Host { return l.B },
		Config{Reverse: true, RcvTimeout: time.Second, StateTimeout: 2 * time.Second}, []error{ErrNoData}, "nothing arrived", false},
	{"server side, client sends, state-timeout", func(l *netlab.Lab) *netlab.Host { return l.B },
		Config{StateTimeout: time.Second}, nil, "the server stopped answering after TEST_END", true},
}

// faultRun is one run of a faultCase: the client's Result and error, the
// server's Result, and when the client's streams were up, when the link
// went down and when the client returned.
type faultRun struct {
	r, srv           *result.Result
	err              error
	start, down, end time.Time
	testTime         time.Duration
}

// runFault runs tc on a lab of its own for testTime, the server freeing
// the test after 1 s without data (--rcv-timeout). The link goes down
// once the client has reported two intervals of 250 ms: the client's
// interval report waits for it, so the link is down before the client
// can end the test (the report is part of its end).
func runFault(t *testing.T, tc faultCase, testTime time.Duration) faultRun {
	t.Helper()
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	port, rl := labServer(t, lab, ServerConfig{RcvTimeout: time.Second})
	var run faultRun
	started := make(chan time.Time, 1)
	downNow, downDone, gone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	defer close(gone)
	cfg := tc.cfg
	cfg.Host, cfg.Port, cfg.Duration, cfg.Interval, cfg.NoNIC = lab.B.Addr4.String(), port, testTime, 250*time.Millisecond, true
	cfg.OnStart = func(*result.Result) { started <- time.Now() }
	intervals := 0
	cfg.OnInterval = func(*result.Result, *result.Interval) {
		if intervals++; intervals != 2 {
			return
		}
		close(downNow)
		select {
		case <-downDone:
		case <-gone:
		}
	}
	type out struct {
		r   *result.Result
		err error
		at  time.Time
	}
	done := make(chan out, 1)
	go func() {
		var o out
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		o.err = lab.A.Do(func() (err error) {
			o.r, err = Run(ctx, cfg)
			return err
		})
		o.at = time.Now()
		done <- o
	}()
	select {
	case <-downNow:
	case o := <-done:
		t.Fatalf("the client ended before two intervals were reported: %v", o.err)
	case <-time.After(time.Minute):
		t.Fatal("the client reported no two intervals in a minute")
	}
	run.start = <-started
	// ip link set dev IFACE down, in the host's namespace (in this
	// process: a command may take seconds to start on a busy VM).
	h := tc.side(lab)
	if err := h.Do(func() error {
		l, err := netlink.LinkByName(h.Iface)
		if err != nil {
			return err
		}
		return netlink.LinkSetDown(l)
	}); err != nil {
		t.Fatalf("set %s down in %s: %v", h.Iface, h.Name, err)
	}
	run.down = time.Now()
	close(downDone)
	var o out
	select {
	case o = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the client still runs two minutes after its link went down")
	}
	run.r, run.err, run.end, run.testTime = o.r, o.err, o.at, testTime
	t.Logf("client: %v, %v after the link went down (%v after its test started)", o.err, o.at.Sub(run.down).Round(time.Millisecond), o.at.Sub(run.start).Round(time.Millisecond))
	if o.err == nil {
		t.Fatal("the client succeeded with the link down")
	}
	// The server ends the test too: nothing arrives, or nothing moves,
	// for its --rcv-timeout.
	run.srv = rl.wait(t, 1)[0]
	return run
}

// The lab's link goes down while a test runs, on the client's side or the
// server's: the client ends with the error that says what happened, and
// what it measured up to then; the server frees the test too. How soon
// the client reports the fault is a timing property
// (TestTimingFaultReported).
func TestFaultLinkDown(t *testing.T) {
	for _, tc := range faultCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each on a lab of its own
			// A test that the fault ends runs far longer than the fault
			// takes to notice: it ends by the fault, or fails.
			testTime := 5 * time.Minute
			if tc.timed {
				testTime = 2 * time.Second
			}
			run := runFault(t, tc, testTime)
			is := len(tc.is) == 0
			for _, e := range tc.is {
				is = is || errors.Is(run.err, e)
			}
			if !is || !strings.Contains(run.err.Error(), tc.want) {
				t.Errorf("client error %q, want %q (wrapping one of %v)", run.err, tc.want, tc.is)
			}
			if r := run.r; r == nil || len(r.Streams) != 1 || r.Streams[0].Bytes == 0 || len(r.Intervals) < 2 || r.Err == nil {
				t.Fatalf("no partial results: %+v", r)
			}
			if s := run.srv; !errors.Is(s.Err, ErrNoData) || len(s.Streams) != 1 || s.Streams[0].Bytes == 0 {
				t.Errorf("server: %v, streams %+v; want ErrNoData with partial results", s.Err, s.Streams)
			} else {
				t.Logf("server: %v (%d bytes)", s.Err, s.Streams[0].Bytes)
			}
		})
	}
}
