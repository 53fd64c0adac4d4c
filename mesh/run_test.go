package mesh_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/agent"
	"github.com/blastnet/blast/internal/clock"
	"github.com/blastnet/blast/internal/testkit"
	"github.com/blastnet/blast/mesh"
	"github.com/blastnet/blast/mesh/discover"
	"github.com/blastnet/blast/mesh/plan"
)

// request is what a fake agent was asked: when, on the mesh's clock, and
// the test.
type request struct {
	At  time.Duration // since clock.Epoch
	Req agent.TestRequest
}

// fakeAgents answers the control endpoint of n agents on loopback,
// node-0 .. node-(n-1), with reply (called with the agent's index and
// its attempt, from 1), and records every test request.
type fakeAgents struct {
	clk   *clock.Fake
	found []discover.Peer
	mu    sync.Mutex
	asked map[string][]request
	// full, when set, makes an agent answer an attempt with 429 and
	// that Retry-After ("": none) where it says so.
	full func(i, attempt int) (retryAfter string, refuse bool)
}

func newFakeAgents(t *testing.T, clk *clock.Fake, n int, reply func(i, attempt int) agent.Reply) *fakeAgents {
	f := &fakeAgents{clk: clk, asked: map[string][]request{}}
	for i := range n {
		name := "node-" + string(rune('0'+i))
		mux := http.NewServeMux()
		mux.HandleFunc(agent.PathInfo, func(w http.ResponseWriter, r *http.Request) {
			json.NewEncoder(w).Encode(agent.Info{Name: name, Version: "test"})
		})
		mux.HandleFunc(agent.PathTest, func(w http.ResponseWriter, r *http.Request) {
			var req agent.TestRequest
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			f.mu.Lock()
			f.asked[name] = append(f.asked[name], request{clk.Elapsed(), req})
			attempt := len(f.asked[name])
			full := f.full
			f.mu.Unlock()
			if full != nil {
				if ra, refuse := full(i, attempt); refuse {
					if ra != "" {
						w.Header().Set("Retry-After", ra)
					}
					w.WriteHeader(http.StatusTooManyRequests)
					json.NewEncoder(w).Encode(map[string]string{"err": "the agent's budget is spent"})
					return
				}
			}
			json.NewEncoder(w).Encode(reply(i, attempt))
		})
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		ap := netip.MustParseAddrPort(srv.Listener.Addr().String())
		f.found = append(f.found, discover.Peer{Name: name, Host: "127.0.0.1", DataPort: 5201 + i, ControlPort: int(ap.Port())})
	}
	return f
}

func (f *fakeAgents) requests(name string) []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.asked[name])
}

func ok() agent.Reply { return agent.Reply{Seconds: 1, Bps: 8e6, Bytes: 1e6} }

// run runs a mesh over the fake agents with mode and settings.
func (f *fakeAgents) run(t *testing.T, mode string, opts plan.Options, s mesh.Settings) *mesh.Document {
	t.Helper()
	m, err := plan.ParseMode(mode)
	if err != nil {
		t.Fatal(err)
	}
	d, err := mesh.Run(context.Background(), mesh.Config{Peers: "test", Found: f.found, Mode: m, Options: opts, Test: s,
		Token: []byte("0123456789abcdef"), Clock: f.clk})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestRunCommonStart: the tests of a step run at once get one start, the
// mesh's clock plus half a second; a step of one test starts at once.
func TestRunCommonStart(t *testing.T) {
	clk := clock.NewFake()
	f := newFakeAgents(t, clk, 4, func(int, int) agent.Reply { return ok() })
	d := f.run(t, "fan-in:node-0", plan.Options{Baseline: true}, mesh.Settings{Seconds: 1, Streams: 1, Retries: 3})
	if len(d.Cells) != 6 {
		t.Fatalf("%d cells, want 3 alone and 3 at once", len(d.Cells))
	}
	if !d.Meta.Started.Equal(clock.Epoch) || !d.Meta.Finished.Equal(clock.Epoch) {
		t.Errorf("started %v, finished %v: want the mesh's clock, %v", d.Meta.Started, d.Meta.Finished, clock.Epoch)
	}
	common := clock.Epoch.Add(500 * time.Millisecond)
	for _, name := range []string{"node-1", "node-2", "node-3"} {
		got := f.requests(name)
		if len(got) != 2 {
			t.Fatalf("%s was asked %d tests, want 2 (alone, then with the others)", name, len(got))
		}
		if !got[0].Req.StartAt.IsZero() {
			t.Errorf("%s alone: start_at %v, want none", name, got[0].Req.StartAt)
		}
		if !got[1].Req.StartAt.Equal(common) {
			t.Errorf("%s with the others: start_at %v, want %v", name, got[1].Req.StartAt, common)
		}
	}
	if got := f.requests("node-0"); len(got) != 0 {
		t.Errorf("the fan-in's server was asked %d tests, want none", len(got))
	}
	for _, c := range d.Cells {
		if c.Err != "" || c.Attempts != 1 || c.Dst != "node-0" || c.Bps != 8e6 {
			t.Errorf("cell %+v", c)
		}
	}
}

// TestRunRetriesBusy: a test the server refuses as busy is asked again
// after 1, 2, 4 s (on the mesh's clock), without the common start, at most
// Retries times; then the cell says busy.
func TestRunRetriesBusy(t *testing.T) {
	clk := clock.NewFake()
	f := newFakeAgents(t, clk, 3, func(i, attempt int) agent.Reply {
		if i == 1 && attempt == 3 {
			return ok()
		}
		return agent.Reply{Busy: true, Err: "the server is busy running a test"}
	})
	done := make(chan *mesh.Document)
	go func() {
		done <- f.run(t, "fan-in:node-0", plan.Options{}, mesh.Settings{Seconds: 1, Streams: 1, Retries: 3})
	}()
	// node-1 and node-2 test to node-0 at once. node-1's test succeeds
	// on its third attempt, node-2's is busy four times: two wait 1 s,
	// then 2 s, then node-2's alone 4 s. The clock moves once the
	// agents were asked what they are asked at this time (an answer
	// recorded later would have a later time) and the retries wait.
	for _, step := range []struct {
		asked, waiting int
		wait           time.Duration
	}{{2, 2, time.Second}, {4, 2, 2 * time.Second}, {6, 1, 4 * time.Second}} {
		testkit.WaitFor(t, time.Minute, fmt.Sprintf("%d tests asked", step.asked), func() bool {
			return len(f.requests("node-1"))+len(f.requests("node-2")) >= step.asked
		})
		select {
		case <-clk.Armed(step.waiting):
		case <-time.After(time.Minute):
			t.Fatalf("%d retries never waited %v", step.waiting, step.wait)
		}
		if next, _ := clk.Next(); next.Sub(clk.Now()) != step.wait {
			t.Errorf("the next retry waits %v, want %v", next.Sub(clk.Now()), step.wait)
		}
		clk.Advance(step.wait)
	}
	var d *mesh.Document
	select {
	case d = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the mesh never ended")
	}
	common := clock.Epoch.Add(500 * time.Millisecond)
	at := func(rs []request) (ds []time.Duration) {
		for i, r := range rs {
			ds = append(ds, r.At)
			if want := common; i > 0 {
				want = time.Time{}
				if !r.Req.StartAt.Equal(want) {
					t.Errorf("attempt %d: start_at %v, want none", i+1, r.Req.StartAt)
				}
			} else if !r.Req.StartAt.Equal(want) {
				t.Errorf("attempt 1: start_at %v, want %v", r.Req.StartAt, want)
			}
		}
		return ds
	}
	s := time.Second
	if diff := cmp.Diff([]time.Duration{0, s, 3 * s}, at(f.requests("node-1"))); diff != "" {
		t.Errorf("node-1's attempts, since the start (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]time.Duration{0, s, 3 * s, 7 * s}, at(f.requests("node-2"))); diff != "" {
		t.Errorf("node-2's attempts, since the start (-want +got):\n%s", diff)
	}
	if len(d.Cells) != 2 {
		t.Fatalf("%d cells, want 2", len(d.Cells))
	}
	for _, c := range d.Cells {
		switch c.Src {
		case "node-1":
			if c.Attempts != 3 || c.Err != "" || c.Bps != 8e6 {
				t.Errorf("node-1's cell: %d attempts, err %q, %g bit/s: want 3, none, 8e6", c.Attempts, c.Err, c.Bps)
			}
		case "node-2":
			if c.Attempts != 4 || c.Err != "the server is busy running a test" {
				t.Errorf("node-2's cell: %d attempts, err %q: want 4, busy", c.Attempts, c.Err)
			}
		default:
			t.Errorf("a cell from %s", c.Src)
		}
	}
	if !d.Meta.Finished.Equal(clock.Epoch.Add(7 * s)) {
		t.Errorf("finished %v, want 7 s after the start", d.Meta.Finished.Sub(clock.Epoch))
	}
}

// TestRunRetriesFullAgent: an agent that answers 429 (its most tests at
// once, or its budget of test-seconds spent) is asked again when it says
// (Retry-After: 30 s, more than the 1 s a busy server gets), then 2 s
// later when it does not say.
func TestRunRetriesFullAgent(t *testing.T) {
	clk := clock.NewFake()
	f := newFakeAgents(t, clk, 2, func(int, int) agent.Reply { return ok() })
	f.full = func(i, attempt int) (string, bool) {
		switch attempt {
		case 1:
			return "30", true
		case 2:
			return "", true
		}
		return "", false
	}
	done := make(chan *mesh.Document)
	go func() {
		done <- f.run(t, "fan-in:node-0", plan.Options{}, mesh.Settings{Seconds: 1, Streams: 1, Retries: 2})
	}()
	for _, wait := range []time.Duration{30 * time.Second, 2 * time.Second} {
		select {
		case <-clk.Armed(1):
		case <-time.After(time.Minute):
			t.Fatalf("the retry after %v never waited", wait)
		}
		if next, _ := clk.Next(); next.Sub(clk.Now()) != wait {
			t.Errorf("the next attempt waits %v, want %v", next.Sub(clk.Now()), wait)
		}
		clk.Advance(wait)
	}
	var d *mesh.Document
	select {
	case d = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the mesh never ended")
	}
	if len(d.Cells) != 1 || d.Cells[0].Attempts != 3 || d.Cells[0].Err != "" || d.Cells[0].Bps != 8e6 {
		t.Errorf("cells %+v: want one of 3 attempts, no error, 8e6 bit/s", d.Cells)
	}
}
