package control

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/blastnet/blast/internal/netlab"
	"github.com/blastnet/blast/internal/netlab/labtest"
)

// The lab's link goes down 1 s into a 4 s test, on the client's side or
// the server's: the client ends with an error and what it measured up to
// then, in a bounded time; the server frees the test too (its own
// --rcv-timeout, 1 s here). How soon the client notices depends on what
// watches for it: a receiving client's --rcv-timeout (its stall watch), a
// sending client's --snd-timeout (TCP_USER_TIMEOUT fails the stream); a
// sending client with neither runs to its time and then waits 3 ×
// StateTimeout for the server's answer to TEST_END.
func TestFaultLinkDown(t *testing.T) {
	const (
		testTime = 4 * time.Second
		downAt   = time.Second
	)
	for _, tc := range []struct {
		name string
		side func(*netlab.Lab) *netlab.Host // whose link goes down
		cfg  Config
		// The client's error wraps one of is (if any) and says want, at
		// most within after its test started.
		is     []error
		want   string
		within time.Duration
	}{
		{"client side, client sends, snd-timeout", func(l *netlab.Lab) *netlab.Host { return l.A },
			Config{SndTimeout: time.Second, StateTimeout: 2 * time.Second},
			// The unacknowledged data times out; the kernel reports the
			// route's error if it saw one.
			[]error{syscall.ETIMEDOUT, syscall.ENETUNREACH}, "data stream failed", testTime + 2*time.Second},
		{"server side, -R, rcv-timeout", func(l *netlab.Lab) *netlab.Host { return l.B },
			Config{Reverse: true, RcvTimeout: time.Second, StateTimeout: 2 * time.Second}, []error{ErrNoData}, "nothing arrived", testTime + 2*time.Second},
		// Nothing watches this one during the test: it ends at its time,
		// waits up to 1 s for its data to be acknowledged, sends TEST_END
		// and gives the server 3 × StateTimeout to answer.
		{"server side, client sends, state-timeout", func(l *netlab.Lab) *netlab.Host { return l.B },
			Config{StateTimeout: time.Second}, nil, "the server stopped answering after TEST_END", testTime + time.Second + 3*time.Second + 2*time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lab := labtest.New(t, netlab.Direct, netlab.Options{})
			port, rl := labServer(t, lab, ServerConfig{RcvTimeout: time.Second})
			started := make(chan time.Time, 1)
			cfg := tc.cfg
			cfg.Host, cfg.Port, cfg.Duration, cfg.Interval, cfg.NoNIC = lab.B.Addr4.String(), port, testTime, 250*time.Millisecond, true
			cfg.OnStart = func(*Result) { started <- time.Now() }
			type out struct {
				r   *Result
				err error
				at  time.Time
			}
			done := make(chan out, 1)
			go func() {
				var o out
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				o.err = lab.A.Do(func() (err error) {
					o.r, err = Run(ctx, cfg)
					return err
				})
				o.at = time.Now()
				done <- o
			}()
			var start time.Time
			select {
			case start = <-started:
			case o := <-done:
				t.Fatalf("the client ended before its streams were up: %v", o.err)
			case <-time.After(10 * time.Second):
				t.Fatal("the client's streams did not come up")
			}
			time.Sleep(time.Until(start.Add(downAt)))
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
			down := time.Now()
			if d := down.Sub(start); d > downAt+time.Second {
				t.Logf("the link went down only %v into the test", d.Round(time.Millisecond))
			}
			var o out
			select {
			case o = <-done:
			case <-time.After(testTime + 20*time.Second):
				t.Fatal("the client still runs 20 s after its test time, with the link down")
			}
			took := o.at.Sub(start)
			t.Logf("client: %v, %v after the link went down (%v after its test started)", o.err, o.at.Sub(down).Round(time.Millisecond), took.Round(time.Millisecond))
			if o.err == nil {
				t.Fatal("the client succeeded with the link down")
			}
			is := len(tc.is) == 0
			for _, e := range tc.is {
				is = is || errors.Is(o.err, e)
			}
			if !is || !strings.Contains(o.err.Error(), tc.want) {
				t.Errorf("client error %q, want %q (wrapping one of %v)", o.err, tc.want, tc.is)
			}
			if took > tc.within {
				t.Errorf("the client reported %v after its test started, want at most %v", took.Round(time.Millisecond), tc.within)
			}
			if o.r == nil || len(o.r.Streams) != 1 || o.r.Streams[0].Bytes == 0 || len(o.r.Intervals) < 2 || o.r.Err == nil {
				t.Fatalf("no partial results: %+v", o.r)
			}
			// The server ends the test too: nothing arrives, or nothing
			// moves, for its --rcv-timeout.
			s := rl.wait(t, 1)[0]
			if !errors.Is(s.Err, ErrNoData) || len(s.Streams) != 1 || s.Streams[0].Bytes == 0 {
				t.Errorf("server: %v, streams %+v; want ErrNoData with partial results", s.Err, s.Streams)
			} else {
				t.Logf("server: %v (%d bytes)", s.Err, s.Streams[0].Bytes)
			}
		})
	}
}
