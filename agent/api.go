package agent

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/internal/clock"
)

// The control endpoint's paths.
const (
	PathInfo = "/v1/info"
	PathTest = "/v1/test"
)

// maxBody bounds a reply body read from the network, maxRequestBody a
// request's, maxHeaderBytes a request's header.
const (
	maxBody        = 1 << 20
	maxRequestBody = 64 << 10
	maxHeaderBytes = 16 << 10
)

// Info is who an agent is (GET /v1/info). Instance is the id the agent
// drew when it started: requests are signed for Name/Instance.
type Info struct {
	Name        string   `json:"name"`
	Instance    string   `json:"instance"`
	Zone        string   `json:"zone,omitempty"`
	Addrs       []string `json:"addrs,omitempty"` // the host's global unicast addresses
	DataPort    int      `json:"data_port"`
	ControlPort int      `json:"control_port"`
	Version     string   `json:"version"`
}

// TestRequest asks an agent to run one test as a client against a blast
// server (another agent's data port) and report it (POST /v1/test).
type TestRequest struct {
	Host    string  `json:"host"` // the server's address
	Port    int     `json:"port"`
	UDP     bool    `json:"udp,omitempty"`
	Seconds float64 `json:"seconds"`
	Streams int     `json:"streams"`
	Rate    uint64  `json:"rate_bps,omitempty"` // -b per stream; 0: unpaced (TCP), iperf3's 1 Mbit/s (UDP)
	Reverse bool    `json:"reverse,omitempty"`
	Len     int     `json:"len,omitempty"`
	Backend string  `json:"backend,omitempty"`
	// StartAt is when the test starts (zero: at once): the tests of a
	// fan-in round start together. The agent waits for it, at most
	// MaxStartWait.
	StartAt time.Time `json:"start_at,omitzero"`
}

// MaxStartWait bounds how far ahead StartAt may be.
const MaxStartWait = time.Minute

// Reply is what one test measured, from the client's (the source's) side
// with its peer's (the destination's) figures. Busy: the server refused
// the test because it is busy (retry later); Err: the test failed.
type Reply struct {
	Start    time.Time `json:"start"`
	Seconds  float64   `json:"seconds"`
	Bps      float64   `json:"bps"`   // the receivers' goodput
	Bytes    uint64    `json:"bytes"` // received
	Retrans  int64     `json:"retrans"`
	RTTus    float64   `json:"rtt_us,omitempty"`
	Loss     float64   `json:"loss"` // UDP: lost / sent, 0..1
	JitterMs float64   `json:"jitter_ms,omitempty"`
	CPUSrc   float64   `json:"cpu_src"` // percent, each end's host
	CPUDst   float64   `json:"cpu_dst"`
	NICSrc   string    `json:"nic_src,omitempty"`
	NICDst   string    `json:"nic_dst,omitempty"`
	Findings []Finding `json:"findings,omitempty"`
	Busy     bool      `json:"busy,omitempty"`
	Err      string    `json:"err,omitempty"`
}

// Finding is one finding of the test's diagnosis, with the end that has
// it ("src", "dst", or "path" when it is about the path between them).
type Finding struct {
	Rule     finding.ID       `json:"rule"`
	Severity finding.Severity `json:"severity"`
	End      string           `json:"end"`
	Iface    string           `json:"iface,omitempty"`
	Summary  string           `json:"summary"`
	Evidence string           `json:"evidence,omitempty"`
	Fix      string           `json:"fix,omitempty"`
}

// Client talks to one agent's control endpoint. It signs each request for
// the agent instance it learnt from the agent's last refusal: the first
// request to an agent, and the first after the agent restarted, is refused
// with the agent's keyid and sent again signed for it.
type Client struct {
	Addr  string // host:port of the control endpoint
	Token []byte
	HTTP  *http.Client // nil: a client without a total timeout (each call takes a context)
	// TLS speaks HTTPS to the agent, checking its certificate with this
	// configuration (nil: plain HTTP). Ignored when HTTP is set.
	TLS *tls.Config
	// Clock signs requests' times (nil: the real clock).
	Clock clock.Clock

	mu    sync.Mutex
	keyid string       // the agent's, as its last refusal named it
	https *http.Client // tlsClient's
}

// ErrAuth is an agent's refusal of the token.
var ErrAuth = errors.New("the agent refused the token: give the mesh the agents' token (--token-file FILE or BLAST_TOKEN)")

// Info asks the agent who it is.
func (c *Client) Info(ctx context.Context) (*Info, error) {
	var in Info
	if err := c.call(ctx, http.MethodGet, PathInfo, nil, &in); err != nil {
		return nil, err
	}
	return &in, nil
}

// Test asks the agent to run req and waits for its reply. A test that ran
// and failed is a Reply with Err, not an error; an error is the agent not
// answering, or refusing the request.
func (c *Client) Test(ctx context.Context, req TestRequest) (*Reply, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var r Reply
	if err := c.call(ctx, http.MethodPost, PathTest, body, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// KeyID is the agent instance the client signs for ("": none learnt yet).
func (c *Client) KeyID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.keyid
}

func (c *Client) call(ctx context.Context, method, path string, body []byte, into any) error {
	var (
		status  int
		b       []byte
		lastHdr http.Header
	)
	for try := 0; ; try++ {
		keyid := c.KeyID()
		var hdr http.Header
		var err error
		status, hdr, b, err = c.send(ctx, method, path, body, keyid)
		if err != nil {
			return err
		}
		lastHdr = hdr
		if status != http.StatusUnauthorized {
			break
		}
		// The agent names the instance it takes requests for: learn
		// it and sign again, once.
		if k := challengeKeyID(hdr); k != "" && k != keyid && try == 0 {
			c.mu.Lock()
			c.keyid = k
			c.mu.Unlock()
			continue
		}
		return fmt.Errorf("agent %s: %w", c.Addr, ErrAuth)
	}
	switch {
	case status != http.StatusOK:
		var e struct {
			Err string `json:"err"`
		}
		msg := fmt.Sprintf("%d %s", status, http.StatusText(status))
		if json.Unmarshal(b, &e) == nil && e.Err != "" {
			msg = e.Err
		}
		if status == http.StatusTooManyRequests {
			return &BusyError{Agent: c.Addr, Msg: msg, RetryAfter: retryAfter(lastHdr)}
		}
		return fmt.Errorf("agent %s: %s", c.Addr, msg)
	}
	if err := json.Unmarshal(b, into); err != nil {
		return fmt.Errorf("agent %s: not an agent's answer: %w", c.Addr, err)
	}
	return nil
}

// send sends one request, signed for keyid (unsigned when "": the agent
// refuses it, naming its keyid), and returns the answer's status, header
// and body.
func (c *Client) send(ctx context.Context, method, path string, body []byte, keyid string) (int, http.Header, []byte, error) {
	scheme := "http://"
	if c.TLS != nil {
		scheme = "https://"
	}
	u := scheme + c.Addr + path
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("agent %s: %w", c.Addr, err)
	}
	req.Host = strings.ToLower(c.Addr)
	if keyid != "" {
		nonce := newNonce()
		signRequest(req, c.Token, keyid, clock.Or(c.Clock).Now(), nonce, body)
		// The nonce makes the request idempotent: the agent takes it
		// once. Said so, the transport may send it again when a kept
		// connection turns out closed before it was written.
		req.Header.Set("Idempotency-Key", nonce)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = c.tlsClient()
	}
	resp, err := hc.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return 0, nil, nil, fmt.Errorf("agent %s: %w (is blast agent running there, with --control-port %s?)", c.Addr, op.Err, portOf(c.Addr))
		}
		return 0, nil, nil, fmt.Errorf("agent %s: %w", c.Addr, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("agent %s: reading its answer: %w", c.Addr, err)
	}
	if len(b) > maxBody {
		return 0, nil, nil, fmt.Errorf("agent %s: its answer is over %d bytes", c.Addr, maxBody)
	}
	return resp.StatusCode, resp.Header, b, nil
}

func portOf(hostport string) string {
	_, p, err := net.SplitHostPort(hostport)
	if err != nil {
		return "?"
	}
	if _, err := strconv.Atoi(p); err != nil {
		return "?"
	}
	return p
}

// tlsClient is the HTTP client of c's TLS configuration, made once
// (http.DefaultClient without one).
func (c *Client) tlsClient() *http.Client {
	if c.TLS == nil {
		return http.DefaultClient
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.https == nil {
		c.https = &http.Client{Transport: &http.Transport{TLSClientConfig: c.TLS, ForceAttemptHTTP2: true}}
	}
	return c.https
}

// LoadTLS is the control endpoint's TLS configuration from a PEM
// certificate (with its chain) and key (blast agent --tls-cert, --tls-key).
func LoadTLS(certFile, keyFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert %s, --tls-key %s: %w", certFile, keyFile, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// ClientTLS is a mesh's TLS configuration: the agents' certificates are
// checked against the CA certificates in caFile (PEM; blast mesh
// --tls-ca), and against serverName when it is given (--tls-server-name:
// one name every agent's certificate carries), else against the address
// each agent is reached at.
func ClientTLS(caFile, serverName string) (*tls.Config, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", caFile)
	}
	return &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}, nil
}

// BusyError is an agent's 429: it runs its most tests at once, or its
// budget of test-seconds is spent; RetryAfter is when it said to try
// again (0: it did not say).
type BusyError struct {
	Agent, Msg string
	RetryAfter time.Duration
}

func (e *BusyError) Error() string { return fmt.Sprintf("agent %s: %s", e.Agent, e.Msg) }

// retryAfter reads a Retry-After header of whole seconds (0: none).
func retryAfter(h http.Header) time.Duration {
	n, err := strconv.Atoi(h.Get("Retry-After"))
	if err != nil || n < 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}
