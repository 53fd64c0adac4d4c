package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/blastnet/blast/control/render"
	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
)

// What a server does as a service (iperf3's -D, --idle-timeout,
// --rcv-timeout, --server-max-duration, -V, -d): its limits, how it
// shuts down, and the console that prints its tests as they run.

var (
	// ErrShutdown ends the tests that were running (or being set up) when
	// the server was told to stop: their clients were told
	// SERVER_TERMINATE.
	ErrShutdown = errors.New("the server is shutting down")
	// ErrIdle: a one-off server saw no client within its IdleTimeout.
	ErrIdle = errors.New("idle timeout")
)

// checkDuration refuses a test longer than MaxDuration, or without a time
// limit, as iperf3's --server-max-duration does.
func (s *Server) checkDuration(p *wire.Params) error {
	max := s.cfg.MaxDuration
	switch {
	case max <= 0:
		return nil
	case p.Time == 0:
		return fmt.Errorf("the client asked for a test that ends at a byte or block count (-n, -k), which has no time limit; --server-max-duration %g refuses those, as iperf3 does", max.Seconds())
	case time.Duration(p.Time+p.Omit)*time.Second > max:
		return fmt.Errorf("the client asked for %d s (-t %d, -O %d), more than --server-max-duration %g", p.Time+p.Omit, p.Time, p.Omit, max.Seconds())
	}
	return nil
}

// watchIdle is IdleTimeout: it waits until no connection has come for
// that long while no test runs, then ends a one-off server, or restarts
// an idle one (closes the UDP port) and waits again. It returns when done
// is closed.
func (s *Server) watchIdle(done <-chan struct{}) {
	restarts := 0
	for {
		wait := s.cfg.IdleTimeout
		s.mu.Lock()
		busy := s.active > 0 || s.echoes.Len() > 0 || (s.cfg.OneOff && s.started > 0)
		if left := s.cfg.IdleTimeout - s.clk.Since(s.lastConn); !busy && left <= 0 {
			if s.cfg.OneOff {
				s.mu.Unlock()
				s.trace("No connection request was received for %g sec in one-off mode; exiting.", s.cfg.IdleTimeout.Seconds())
				close(s.idleDone)
				return
			}
			// Under s.mu no test can start, so none is using the UDP
			// port while it closes.
			restarts++
			s.closeUDP()
			s.lastConn = s.clk.Now()
			s.mu.Unlock()
			s.trace("Server restart (#%d) in idle state as no connection request was received for %g sec", restarts, s.cfg.IdleTimeout.Seconds())
			continue
		} else if !busy {
			wait = left
		}
		s.mu.Unlock()
		t := s.clk.NewTimer(wait)
		select {
		case <-done:
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// trace writes one of the server's own debug lines.
func (s *Server) trace(format string, args ...any) {
	if s.cfg.Trace != nil {
		s.cfg.Trace(nil, fmt.Sprintf(format, args...))
	}
}

// ConsoleOptions say what a Console prints.
type ConsoleOptions struct {
	JSON  bool // -J: each test's -J document, on one line
	Debug bool // -d: the Trace lines
	// Text renders the tests: Verbose is -V (iperf3's verbose details,
	// and blast's lines after the summary), Format is -f.
	Text render.Text
	// OneOff (-1) and MaxClients go into the banner.
	OneOff     bool
	MaxClients int
}

// Console prints a server's tests as they run, as `iperf3 -s` does: the
// connection and its streams, the interval lines, the summary, then the
// banner again once no test runs; with JSON, each test's -J document on
// one line when it ends.
//
// Tests that run at the same time stay readable by their number: each
// line of a test that runs alongside another starts with "#N: ", from its
// first line printed in company until its end. A test alone prints just
// what iperf3 prints.
type Console struct {
	w    io.Writer
	opts ConsoleOptions

	mu    sync.Mutex
	addr  net.Addr
	tests map[*result.Result]*consoleTest
	seen  int // tests numbered so far
}

type consoleTest struct {
	n       int
	tagged  bool // its lines carry its number
	started bool // its start was printed
	first   bool // its next interval is its first
}

// NewConsole prints to w.
func NewConsole(w io.Writer, o ConsoleOptions) *Console {
	return &Console{w: w, opts: o, tests: map[*result.Result]*consoleTest{}}
}

// Attach makes cfg's hooks print on the console, after any cfg had.
func (c *Console) Attach(cfg *ServerConfig) {
	chain := func(prev, next func(*result.Result)) func(*result.Result) {
		if prev == nil {
			return next
		}
		return func(r *result.Result) { prev(r); next(r) }
	}
	if !c.opts.JSON {
		cfg.OnStart = chain(cfg.OnStart, c.start)
		prevIv := cfg.OnInterval
		cfg.OnInterval = func(r *result.Result, iv *result.Interval) {
			if prevIv != nil {
				prevIv(r, iv)
			}
			c.interval(r, iv)
		}
		prevRef := cfg.OnRefused
		cfg.OnRefused = func(peer netip.AddrPort, why string) {
			if prevRef != nil {
				prevRef(peer, why)
			}
			c.Println(fmt.Sprintf("Refused connection from %s, port %d: the server is %s", peer.Addr(), peer.Port(), why))
		}
	}
	if c.opts.Debug {
		prevTr := cfg.Trace
		cfg.Trace = func(r *result.Result, line string) {
			if prevTr != nil {
				prevTr(r, line)
			}
			c.trace(r, line)
		}
	}
	cfg.OnResult = chain(cfg.OnResult, c.result)
}

// Listening prints what iperf3 prints once it listens: with Verbose the
// version and the system first, then the banner.
func (c *Console) Listening(addr net.Addr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addr = addr
	if c.opts.JSON {
		return
	}
	var b bytes.Buffer
	if c.opts.Text.Verbose {
		fmt.Fprintf(&b, "%s\n%s\n", result.Version, systemInfo())
	}
	what := fmt.Sprintf("up to %d tests at once", c.opts.MaxClients)
	if c.opts.OneOff {
		what = "one test: -1"
	}
	c.banner(&b, what)
	c.w.Write(b.Bytes())
}

const bannerRule = "-----------------------------------------------------------\n"

func (c *Console) banner(b *bytes.Buffer, what string) {
	fmt.Fprintf(b, "%sServer listening on %v (%s)\n%s", bannerRule, c.addr, what, bannerRule)
}

// Println prints a line of the server's own (not of a test).
func (c *Console) Println(line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	io.WriteString(c.w, line+"\n")
}

// test is r's console state; a test seen for the first time is numbered.
// A test printed while another runs is tagged from then on.
func (c *Console) test(r *result.Result) *consoleTest {
	t := c.tests[r]
	if t == nil {
		c.seen++
		t = &consoleTest{n: c.seen, first: true}
		c.tests[r] = t
	}
	if len(c.tests) > 1 {
		t.tagged = true
	}
	return t
}

// emit writes what a test printed, each line tagged if the test is.
func (c *Console) emit(t *consoleTest, b []byte) {
	if len(b) == 0 {
		return
	}
	if t != nil && t.tagged {
		tag := fmt.Sprintf("#%d: ", t.n)
		var tb bytes.Buffer
		for _, line := range strings.SplitAfter(string(b), "\n") {
			if line != "" {
				tb.WriteString(tag)
				tb.WriteString(line)
			}
		}
		b = tb.Bytes()
	}
	c.w.Write(b)
}

func (c *Console) start(r *result.Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.test(r)
	t.started = true
	var b bytes.Buffer
	c.opts.Text.WriteStart(&b, r)
	c.emit(t, b.Bytes())
}

func (c *Console) interval(r *result.Result, iv *result.Interval) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.test(r)
	var b bytes.Buffer
	c.opts.Text.WriteInterval(&b, r, iv, t.first)
	t.first = false
	c.emit(t, b.Bytes())
}

func (c *Console) trace(r *result.Result, line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var t *consoleTest
	if r != nil {
		t = c.test(r)
	}
	c.emit(t, []byte(line+"\n"))
}

// result prints a test's end: its summary (or -J document) and how it
// failed, then the banner if no other test runs.
func (c *Console) result(r *result.Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.test(r)
	delete(c.tests, r)
	var b bytes.Buffer
	if c.opts.JSON {
		if j, err := json.Marshal(render.JSONDoc(r)); err == nil {
			b.Write(j)
			b.WriteByte('\n')
		}
		c.w.Write(b.Bytes())
		return
	}
	switch {
	case !t.started && r.Err != nil:
		fmt.Fprintf(&b, "Test from %s, port %d ended before it started: %v\n", r.Peer.Addr(), r.Peer.Port(), r.Err)
	case len(r.Streams) > 0:
		c.opts.Text.WriteSummary(&b, r)
	}
	if t.started && r.Err != nil {
		fmt.Fprintf(&b, "blast server: error - %v\n", r.Err)
	}
	c.emit(t, b.Bytes())
	if len(c.tests) == 0 && !c.opts.OneOff && c.addr != nil && !errors.Is(r.Err, ErrShutdown) {
		b.Reset()
		c.banner(&b, fmt.Sprintf("test #%d", c.seen+1))
		c.w.Write(b.Bytes())
	}
}
