package mesh

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/blastnet/blast/agent"
	"github.com/blastnet/blast/internal/clock"
	"github.com/blastnet/blast/mesh/discover"
	"github.com/blastnet/blast/mesh/plan"
	"github.com/blastnet/blast/units"
)

// Defaults of a mesh's tests: several streams (one flow rarely fills a
// NIC), no fixed message size, and a few retries when a server is busy.
const (
	DefaultSeconds = 5
	DefaultStreams = 4
	DefaultRetries = 3
	// DefaultSlack is added to a test's seconds for its timeout: the
	// setup, the end and a slow agent.
	DefaultSlack = 30 * time.Second
	// startLead is how far ahead a step with several tests sets their
	// common start, so that every agent has its request in time.
	startLead = 500 * time.Millisecond
	// maxInfo bounds the agents asked who they are at once.
	maxInfo = 32
)

// Config is one mesh run.
type Config struct {
	// Peers is the discovery source as given (for the document); Found
	// the agents it gave.
	Peers string
	Found []discover.Peer
	// Mode and Options shape the plan (mesh/plan).
	Mode    plan.Mode
	Options plan.Options
	// Test is what every cell runs (Proto, Seconds, Streams, Rate,
	// Reverse, Len, Backend); Timeout and Retries are filled from it.
	Test Settings
	// Token signs the requests to the agents.
	Token []byte
	// TLS speaks HTTPS to the agents' control endpoints (nil: plain
	// HTTP; agent.ClientTLS).
	TLS *tls.Config
	// Log gets progress lines (nil: none).
	Log io.Writer
	// Version is blast's, for the document.
	Version string
	// Clock sets the common starts, the waits before a retry and the
	// document's times (nil: the real clock).
	Clock clock.Clock
}

// Runner runs a plan with agents; the zero value is not usable: see Run.
type runner struct {
	cfg     Config
	clk     clock.Clock
	nodes   []Node
	clients []*agent.Client
	logMu   sync.Mutex
}

// Run asks every agent who it is, plans the tests over the agents that
// answered, runs the plan round by round and step by step (a step's tests
// at once), and returns the document. A test that fails is a cell with
// its error; only a plan that cannot be made (fewer than two agents
// answered, a mode the nodes do not allow) or ctx's end stop the run.
func Run(ctx context.Context, cfg Config) (*Document, error) {
	s := &cfg.Test
	if s.Seconds == 0 {
		s.Seconds = DefaultSeconds
	}
	if s.Streams == 0 {
		s.Streams = DefaultStreams
	}
	if s.Proto == "" {
		s.Proto = "tcp"
	}
	if s.Timeout == 0 {
		s.Timeout = s.Seconds + DefaultSlack.Seconds()
	}
	s.Baseline = cfg.Options.Baseline
	r := &runner{cfg: cfg, clk: clock.Or(cfg.Clock)}
	doc := &Document{Meta: Meta{Tool: "blast", Version: cfg.Version, Peers: cfg.Peers, Mode: cfg.Mode.String(),
		Isolate: cfg.Options.Isolate, Zones: string(cfg.Options.Zones), Started: r.clk.Now().UTC(), Test: *s}}
	r.identify(ctx)
	doc.Nodes = r.nodes
	var live []int // indexes into r.nodes of the agents that answered
	var pnodes []plan.Node
	for i, n := range r.nodes {
		if n.Err == "" {
			live = append(live, i)
			pnodes = append(pnodes, plan.Node{Name: n.Name, Zone: n.Zone})
		}
	}
	if len(live) < 2 {
		var why []string
		for _, n := range r.nodes {
			if n.Err != "" {
				why = append(why, n.Name+": "+n.Err)
			}
		}
		return doc, fmt.Errorf("a mesh needs at least 2 agents that answer, %d of %d did%s", len(live), len(r.nodes), listed(why))
	}
	p, err := plan.Build(cfg.Mode, pnodes, cfg.Options)
	if err != nil {
		return doc, err
	}
	doc.Meta.Rounds, doc.Meta.Tests = len(p.Rounds), p.Tests()
	r.logf("%d agents, %s: %d rounds, %d tests of %g s, about %v", len(live), cfg.Mode, len(p.Rounds), p.Tests(), s.Seconds,
		p.Estimate(time.Duration((s.Seconds+1)*float64(time.Second))).Round(time.Second))
	for ri, round := range p.Rounds {
		for si, step := range round.Steps {
			if err := ctx.Err(); err != nil {
				doc.Meta.Finished = r.clk.Now().UTC()
				return doc, err
			}
			r.logf("round %d/%d, step %d/%d: %d test%s", ri+1, len(p.Rounds), si+1, len(round.Steps), len(step), plural(len(step)))
			doc.Cells = append(doc.Cells, r.step(ctx, ri+1, step, live)...)
		}
	}
	doc.Meta.Finished = r.clk.Now().UTC()
	return doc, ctx.Err()
}

func listed(why []string) string {
	if len(why) == 0 {
		return ""
	}
	return " (" + strings.Join(why, "; ") + ")"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func (r *runner) logf(format string, a ...any) {
	if r.cfg.Log == nil {
		return
	}
	r.logMu.Lock()
	defer r.logMu.Unlock()
	fmt.Fprintf(r.cfg.Log, "blast mesh: "+format+"\n", a...)
}

// identify asks each agent who it is, a few at a time.
func (r *runner) identify(ctx context.Context) {
	r.nodes = make([]Node, len(r.cfg.Found))
	r.clients = make([]*agent.Client, len(r.cfg.Found))
	sem := make(chan struct{}, maxInfo)
	var wg sync.WaitGroup
	for i, p := range r.cfg.Found {
		r.nodes[i] = Node{Name: p.Name, Addr: p.DataAddr(), Zone: p.Zone, Control: p.ControlAddr()}
		r.clients[i] = &agent.Client{Addr: p.ControlAddr(), Token: r.cfg.Token, TLS: r.cfg.TLS}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			in, err := r.clients[i].Info(ictx)
			n := &r.nodes[i]
			if err != nil {
				n.Err = err.Error()
				r.logf("%s: %v", n.Name, err)
				return
			}
			n.Addrs, n.Version = in.Addrs, in.Version
			if n.Zone == "" {
				n.Zone = in.Zone
			}
		}()
	}
	wg.Wait()
}

// step runs a step's tests at once, with a common start when there are
// several, and returns their cells in the step's order.
func (r *runner) step(ctx context.Context, round int, tests []plan.Test, live []int) []Cell {
	cells := make([]Cell, len(tests))
	var startAt time.Time
	if len(tests) > 1 {
		startAt = r.clk.Now().Add(startLead)
	}
	var wg sync.WaitGroup
	for i, t := range tests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cells[i] = r.test(ctx, round, live[t.Src], live[t.Dst], t.Phase, startAt)
		}()
	}
	wg.Wait()
	return cells
}

// test runs one test from node src to node dst, again while the server
// says it is busy or the source agent answers 429 (at most Retries times,
// waiting 1, 2, 4 ... s, or longer when the agent says when).
func (r *runner) test(ctx context.Context, round, src, dst int, phase string, startAt time.Time) Cell {
	s := r.cfg.Test
	dir := "up"
	if s.Reverse {
		dir = "down"
	}
	c := Cell{Src: r.nodes[src].Name, Dst: r.nodes[dst].Name, Proto: s.Proto, Dir: dir, Phase: phase, Round: round}
	to := r.cfg.Found[dst]
	req := agent.TestRequest{Host: to.Host, Port: to.DataPort, UDP: s.Proto == "udp", Seconds: s.Seconds, Streams: s.Streams,
		Rate: s.Rate, Reverse: s.Reverse, Len: s.Len, Backend: s.Backend, StartAt: startAt}
	wait := time.Second
	for {
		c.Attempts++
		limit := time.Duration(s.Timeout * float64(time.Second))
		if !req.StartAt.IsZero() {
			limit += max(r.clk.Until(req.StartAt), 0)
		}
		tctx, cancel := context.WithTimeout(ctx, limit)
		rep, err := r.clients[src].Test(tctx, req)
		cancel()
		var full *agent.BusyError
		switch {
		case errors.As(err, &full) && c.Attempts <= r.cfg.Test.Retries:
			// The source agent runs its most tests, or spent its
			// budget of test-seconds: again when it says.
			if !r.again(ctx, &c, full.Msg, max(wait, full.RetryAfter)) {
				return c
			}
			wait *= 2
			req.StartAt = time.Time{}
			continue
		case err != nil:
			if errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("no answer from agent %s within %g s (--test-timeout)", r.nodes[src].Name, s.Timeout)
			}
			c.Err = err.Error()
		case rep.Busy && c.Attempts <= r.cfg.Test.Retries:
			if !r.again(ctx, &c, rep.Err, wait) {
				return c
			}
			wait *= 2
			req.StartAt = time.Time{}
			continue
		default:
			c.fill(rep)
		}
		if c.Err != "" {
			r.logf("%s -> %s: failed: %s", c.Src, c.Dst, c.Err)
		} else {
			r.logf("%s -> %s: %s", c.Src, c.Dst, units.SIRate(c.Bps))
		}
		return c
	}
}

// again waits w before a test is tried again, for why; false (and the
// cell's error set) when ctx ended first.
func (r *runner) again(ctx context.Context, c *Cell, why string, w time.Duration) bool {
	r.logf("%s -> %s: %s; again in %v", c.Src, c.Dst, why, w)
	select {
	case <-r.clk.After(w):
		return true
	case <-ctx.Done():
		c.Err = ctx.Err().Error()
		return false
	}
}

// fill copies an agent's reply into the cell.
func (c *Cell) fill(rep *agent.Reply) {
	c.Start, c.Seconds, c.Bps, c.Bytes = rep.Start.UTC(), rep.Seconds, rep.Bps, rep.Bytes
	c.Retrans, c.RTTus, c.Loss, c.JitterMs = rep.Retrans, rep.RTTus, rep.Loss, rep.JitterMs
	c.CPU = CPU{Src: rep.CPUSrc, Dst: rep.CPUDst}
	if rep.NICSrc != "" || rep.NICDst != "" {
		c.NIC = rep.NICSrc + " -> " + rep.NICDst
	}
	c.Findings, c.Err = rep.Findings, rep.Err
}
