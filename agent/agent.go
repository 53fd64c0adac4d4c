// Package agent is `blast agent`: a blast server (the data port, with all
// of the server's limits) beside a small control endpoint on which a
// mesh asks the agent to run a test to another agent and report it.
//
// The control endpoint speaks HTTP with JSON bodies: GET /v1/info says who
// the agent is, POST /v1/test runs one test as a client and answers with
// what it measured. Every request is signed with the mesh's token for one
// agent instance and taken once (see auth.go); the token itself never
// crosses the network. An agent runs at most MaxTests tests of its own at
// once and answers more with 429, and, with MaxTestSeconds, at most that
// many test-seconds a minute (429 with Retry-After). The control port is guarded like the
// data port (guard.go): the allow list, a bound on its connections and on
// those of one address, and deadlines on every request.
package agent

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/blastnet/blast/control"
	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/internal/clock"
)

// DefaultMaxTests is how many tests an agent runs as a client at once.
const DefaultMaxTests = 4

// Config is an agent's configuration.
type Config struct {
	// Server is the data server's configuration (port, limits, allow
	// list, authentication of iperf3 clients).
	Server control.ServerConfig
	// ControlPort is the control endpoint's port (0: the data port + 1);
	// it listens on Server.Bind.
	ControlPort int
	// Token signs the control requests (ReadToken).
	Token []byte
	// Name and Zone identify the agent in a mesh.
	Name, Zone string
	// MaxTests bounds the tests the agent runs as a client at once
	// (0: DefaultMaxTests).
	MaxTests int
	// MaxTestSeconds is the agent's budget of test-seconds a minute
	// (budget; 0: none, MaxTests alone bounds the load): a test asking
	// for more than the budget holds gets 429 and when to retry, and one
	// longer than a minute's budget is refused.
	MaxTestSeconds int
	// Log receives one line per control request that ran a test or was
	// refused (nil: none).
	Log io.Writer
	// Clock is what requests' times are checked against and what a test
	// waits for its start on (nil: the real clock).
	Clock clock.Clock
	// Control bounds the control endpoint's connections and requests
	// (zero fields: the defaults).
	Control ControlLimits
	// TLS serves the control endpoint over TLS with its certificates
	// (nil: plain HTTP, for labs; LoadTLS reads a certificate and key).
	TLS *tls.Config
}

// Agent is a listening agent.
type Agent struct {
	cfg      Config
	clk      clock.Clock
	srv      *control.Server
	ln       net.Listener
	instance string
	auth     *verifier
	guard    *connGuard
	slots    chan struct{}
	budget   *budget
	// proof is this agent's answer to a proof request, and what it
	// wants from the agents it tests to.
	proof control.ProofFunc
	logMu sync.Mutex
}

// Listen opens the data server and the control endpoint.
func Listen(cfg Config) (*Agent, error) {
	if len(cfg.Token) < MinTokenLen {
		return nil, fmt.Errorf("agent: a token of at least %d bytes is needed", MinTokenLen)
	}
	if cfg.Name == "" {
		return nil, errors.New("agent: no name")
	}
	if !printable(cfg.Name) || len(cfg.Name) > 253 {
		return nil, fmt.Errorf("agent: name %q: use at most 253 printable ASCII characters (a host or node name)", cfg.Name)
	}
	ctl, err := cfg.Control.withDefaults(cfg.Server.Allow)
	if err != nil {
		return nil, err
	}
	cfg.Control = ctl
	if cfg.MaxTests <= 0 {
		cfg.MaxTests = DefaultMaxTests
	}
	proof := proofFunc(cfg.Token)
	cfg.Server.AgentProof = proof
	srv, err := control.Listen(cfg.Server)
	if err != nil {
		return nil, err
	}
	dataPort := srv.Addr().(*net.TCPAddr).Port
	cport := cfg.ControlPort
	if cport == 0 {
		cport = dataPort + 1
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Server.Bind, strconv.Itoa(cport)))
	if err != nil {
		srv.Close()
		return nil, fmt.Errorf("agent: control port: %w (choose another with --control-port)", err)
	}
	a := &Agent{cfg: cfg, clk: clock.Or(cfg.Clock), srv: srv, ln: ln, instance: newInstance(), slots: make(chan struct{}, cfg.MaxTests), proof: proof}
	a.budget = newBudget(cfg.MaxTestSeconds, a.clk.Now())
	a.auth = newVerifier(cfg.Token, keyID(cfg.Name, a.instance))
	a.guard = newConnGuard(ctl, a.clk, a.logf)
	return a, nil
}

// DataAddr is the data server's address; ControlAddr the control
// endpoint's.
func (a *Agent) DataAddr() net.Addr    { return a.srv.Addr() }
func (a *Agent) ControlAddr() net.Addr { return a.ln.Addr() }

// Info is what GET /v1/info answers.
func (a *Agent) Info() Info {
	return Info{Name: a.cfg.Name, Instance: a.instance, Zone: a.cfg.Zone, Addrs: hostAddrs(), DataPort: a.srv.Addr().(*net.TCPAddr).Port,
		ControlPort: a.ln.Addr().(*net.TCPAddr).Port, Version: result.Version}
}

// Serve serves the data port and the control endpoint until ctx is done
// (nil then) or the data server fails; it closes both before it returns.
func (a *Agent) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	mux := http.NewServeMux()
	mux.HandleFunc(PathInfo, a.handleInfo)
	mux.HandleFunc(PathTest, a.handleTest)
	lim := a.cfg.Control
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: lim.HeaderTimeout, ReadTimeout: lim.BodyTimeout,
		IdleTimeout: lim.IdleTimeout, MaxHeaderBytes: maxHeaderBytes, ConnState: a.guard.state,
		BaseContext: func(net.Listener) context.Context { return ctx },
		// The HTTP server's own complaints (a failed TLS handshake) are
		// the agent's log lines.
		ErrorLog: log.New(logWriter{a}, "", 0)}
	httpDone := make(chan error, 1)
	var ln net.Listener = &guardListener{Listener: a.ln, g: a.guard}
	if a.cfg.TLS != nil {
		ln = tls.NewListener(ln, a.cfg.TLS)
	}
	go func() { httpDone <- hs.Serve(ln) }()
	err := a.srv.Serve(ctx)
	cancel()
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	herr := hs.Shutdown(sctx)
	if herr != nil {
		hs.Close()
	}
	if e := <-httpDone; !errors.Is(e, http.ErrServerClosed) && herr == nil {
		herr = e
	}
	if err != nil {
		return err
	}
	return herr
}

func (a *Agent) logf(format string, args ...any) {
	if a.cfg.Log == nil {
		return
	}
	a.logMu.Lock()
	defer a.logMu.Unlock()
	fmt.Fprintf(a.cfg.Log, "blast agent: "+format+"\n", args...)
}

// authorized reads the body (bounded, within the body timeout) and checks
// the request's signature; on a refusal it has answered.
func (a *Agent) authorized(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			answer(w, http.StatusRequestEntityTooLarge, map[string]string{"err": "request body over 64 KiB"})
		} else {
			answer(w, http.StatusRequestTimeout, map[string]string{"err": fmt.Sprintf("the request's body did not arrive within %v", a.cfg.Control.BodyTimeout)})
		}
		return nil, false
	}
	if err := a.auth.check(r, body, a.clk.Now()); err != nil {
		if errors.Is(err, errTooMany) {
			a.logf("refused %s %s from %s: %d requests within %v", r.Method, r.URL.Path, r.RemoteAddr, maxNonces, ClockSkew)
			answer(w, http.StatusTooManyRequests, map[string]string{"err": fmt.Sprintf("the agent took %d requests within %v: try later", maxNonces, ClockSkew)})
			return nil, false
		}
		if !errors.Is(err, errUnsigned) {
			a.logf("refused %s %s from %s: %v", r.Method, r.URL.Path, r.RemoteAddr, err)
		}
		w.Header().Set("Accept-Signature", acceptSignature(a.auth.keyid))
		answer(w, http.StatusUnauthorized, map[string]string{"err": "unauthorized"})
		return nil, false
	}
	return body, true
}

func answer(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

func (a *Agent) handleInfo(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		answer(w, http.StatusMethodNotAllowed, map[string]string{"err": "GET " + PathInfo})
		return
	}
	if _, ok := a.authorized(w, r); !ok {
		return
	}
	answer(w, http.StatusOK, a.Info())
}

func (a *Agent) handleTest(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		answer(w, http.StatusMethodNotAllowed, map[string]string{"err": "POST " + PathTest})
		return
	}
	body, ok := a.authorized(w, r)
	if !ok {
		return
	}
	var req TestRequest
	if err := json.Unmarshal(body, &req); err != nil {
		answer(w, http.StatusBadRequest, map[string]string{"err": "not a test request: " + err.Error()})
		return
	}
	cfg, err := req.config(a.clk.Now())
	if err != nil {
		answer(w, http.StatusBadRequest, map[string]string{"err": err.Error()})
		return
	}
	wait, never := a.budget.take(req.Seconds, a.clk.Now())
	switch {
	case never:
		answer(w, http.StatusBadRequest, map[string]string{"err": fmt.Sprintf("a test of %g s is more than the agent's budget of %g test-seconds a minute (its --max-test-seconds)", req.Seconds, a.budget.perMinute)})
		return
	case wait > 0:
		secs := int(math.Ceil(wait.Seconds()))
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		answer(w, http.StatusTooManyRequests, map[string]string{"err": fmt.Sprintf("the agent's budget of %g test-seconds a minute is spent: a test of %g s can start in %d s", a.budget.perMinute, req.Seconds, secs)})
		return
	}
	select {
	case a.slots <- struct{}{}:
		defer func() { <-a.slots }()
	default:
		a.budget.give(req.Seconds)
		answer(w, http.StatusTooManyRequests, map[string]string{"err": fmt.Sprintf("the agent runs %d tests already (its most at once)", cap(a.slots))})
		return
	}
	ctx := r.Context()
	if !req.StartAt.IsZero() {
		t := a.clk.NewTimer(req.StartAt.Sub(a.clk.Now()))
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
	// Test traffic goes only to an agent that proves it holds the token:
	// anything else gets the one error, and nothing past the proof's
	// request.
	var res *result.Result
	err = control.ProveAgent(ctx, &net.Dialer{}, net.JoinHostPort(req.Host, strconv.Itoa(req.Port)), a.proof)
	if err == nil {
		res, err = control.Run(ctx, cfg)
	}
	reply := newReply(res, err)
	a.logf("test to %s: %s", net.JoinHostPort(req.Host, strconv.Itoa(req.Port)), reply.line())
	answer(w, http.StatusOK, reply)
}

// config is the client configuration of a request, validated at now.
func (req *TestRequest) config(now time.Time) (control.Config, error) {
	switch {
	case req.Host == "":
		return control.Config{}, errors.New("no host to test to")
	case req.Port < 1 || req.Port > 65535:
		return control.Config{}, fmt.Errorf("port %d: must be 1 to 65535", req.Port)
	case !(req.Seconds >= 1 && req.Seconds <= 3600):
		return control.Config{}, fmt.Errorf("seconds %g: must be 1 to 3600", req.Seconds)
	case req.Streams < 1 || req.Streams > wire.MaxStreams:
		return control.Config{}, fmt.Errorf("streams %d: must be 1 to %d", req.Streams, wire.MaxStreams)
	case !req.StartAt.IsZero() && req.StartAt.Sub(now) > MaxStartWait:
		return control.Config{}, fmt.Errorf("start_at %s is more than %v ahead", req.StartAt.UTC().Format(time.RFC3339), MaxStartWait)
	}
	cfg := control.Config{Host: req.Host, Port: req.Port, UDP: req.UDP, Parallel: req.Streams,
		Duration: time.Duration(req.Seconds * float64(time.Second)), Reverse: req.Reverse, BlockLen: req.Len, Interval: 0}
	if req.Backend != "" {
		cfg.Backend = req.Backend
	}
	if req.Rate > 0 || req.UDP {
		cfg.Rate, cfg.RateSet = float64(req.Rate), req.Rate > 0
	}
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return control.Config{}, err
	}
	return cfg, nil
}

// logWriter writes the HTTP server's lines to the agent's log.
type logWriter struct{ a *Agent }

func (w logWriter) Write(p []byte) (int, error) {
	w.a.logf("control: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
