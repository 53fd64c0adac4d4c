package agent

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/internal/clock"
	"github.com/blastnet/blast/internal/testkit"
)

// TestSignatureRFC9421: the signature base and HMAC are RFC 9421's: its
// example B.2.5 (hmac-sha256 over date, @authority and content-type with
// the shared secret of B.1.5) comes out as the RFC has it.
func TestSignatureRFC9421(t *testing.T) {
	secret, err := base64.StdEncoding.DecodeString("uzvJfB4u3N0Jy4T7NZ75MDVcr8zSTInedJtkgcu46YW4XByzNJjxBdtjUkdJPBtbmHhIDi6pcl8jsasjlTMtDQ==")
	if err != nil {
		t.Fatal(err)
	}
	comps := []string{"date", "@authority", "content-type"}
	created, keyid := int64(1618884473), "test-shared-secret"
	in := serializeInput(comps, []param{{key: "created", num: &created}, {key: "keyid", str: &keyid}})
	if want := `("date" "@authority" "content-type");created=1618884473;keyid="test-shared-secret"`; in != want {
		t.Errorf("Signature-Input %s, want %s", in, want)
	}
	values := map[string]string{"date": "Tue, 20 Apr 2021 02:07:55 GMT", "@authority": "example.com", "content-type": "application/json"}
	base := signatureBase(comps, func(c string) string { return values[c] }, in)
	wantBase := `"date": Tue, 20 Apr 2021 02:07:55 GMT
"@authority": example.com
"content-type": application/json
"@signature-params": ("date" "@authority" "content-type");created=1618884473;keyid="test-shared-secret"`
	if diff := cmp.Diff(wantBase, base); diff != "" {
		t.Errorf("signature base (-want +got):\n%s", diff)
	}
	if got := base64.StdEncoding.EncodeToString(hmacSHA256(secret, base)); got != "pxcQw6G3AjtMBQjwo8XzkZf/bws5LelbaMk5rGIGtE8=" {
		t.Errorf("signature %s, want RFC 9421's pxcQw6G3AjtMBQjwo8XzkZf/bws5LelbaMk5rGIGtE8=", got)
	}
	// Its Signature-Input parses back to what made it.
	gotComps, params, err := parseInput(in)
	if err != nil || !cmp.Equal(gotComps, comps) || len(params) != 2 || *params[0].num != created || *params[1].str != keyid {
		t.Errorf("parseInput(%s) = %q, %+v, %v", in, gotComps, params, err)
	}
}

// TestContentDigestRFC9530: RFC 9530's example digest.
func TestContentDigestRFC9530(t *testing.T) {
	if got, want := contentDigest([]byte(`{"hello": "world"}`)), "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:"; got != want {
		t.Errorf("Content-Digest %s, want %s", got, want)
	}
}

// TestSignatureCovers: a request changed in any part the signature covers
// (method, authority, path, body, the parameters: time, nonce, keyid) or
// given a query is refused; the same request unchanged is taken.
func TestSignatureCovers(t *testing.T) {
	const keyid = `node-a "x"\y/0123456789abcdef`
	now := clock.Epoch
	body := []byte(`{"host":"198.18.0.2","port":5201,"seconds":1,"streams":1}`)
	mk := func() *http.Request {
		r, _ := http.NewRequest(http.MethodPost, "http://198.18.0.1:5202"+PathTest, bytes.NewReader(body))
		signRequest(r, token, keyid, now, "0123456789abcdef0123", body)
		return r
	}
	input := func(from, to string) func(*http.Request) {
		return func(r *http.Request) {
			r.Header.Set("Signature-Input", strings.Replace(r.Header.Get("Signature-Input"), from, to, 1))
		}
	}
	for _, tc := range []struct {
		what   string
		change func(*http.Request)
		body   []byte
		want   string
	}{
		{"nothing", func(*http.Request) {}, body, ""},
		{"method", func(r *http.Request) { r.Method = http.MethodPut }, body, "bad signature (another token?)"},
		{"authority", func(r *http.Request) { r.Host = "198.18.0.9:5202" }, body, "bad signature (another token?)"},
		{"authority's case", func(r *http.Request) { r.Host = "LOCALHOST:5202" }, body, "bad signature (another token?)"},
		{"path", func(r *http.Request) { r.URL.Path = PathInfo }, body, "bad signature (another token?)"},
		{"query", func(r *http.Request) { r.URL.RawQuery = "seconds=3600" }, body, "a query, which is not signed"},
		{"body", func(*http.Request) {}, []byte(`{}`), "the body does not match its Content-Digest"},
		{"body and digest", func(r *http.Request) { r.Header.Set("Content-Digest", contentDigest([]byte(`{}`))) }, []byte(`{}`), "bad signature (another token?)"},
		{"created", input("created=1767225600", "created=1767225601"), body, "bad signature (another token?)"},
		{"nonce", input(`nonce="0123456789abcdef0123"`, `nonce="0123456789abcdef0124"`), body, "bad signature (another token?)"},
		{"keyid", input(`keyid="node-a`, `keyid="node-b`), body, "bad signature (another token?)"},
		{"alg", input(`alg="hmac-sha256"`, `alg="hmac-sha512"`), body, `signature algorithm "hmac-sha512", want "hmac-sha256"`},
		{"components", input(`"@method" `, ``), body, `the signature covers ["@authority" "@path" "content-digest"], want ["@method" "@authority" "@path" "content-digest"]`},
		{"no nonce", input(`;nonce="0123456789abcdef0123"`, ``), body, "the signature has no nonce"},
		{"another parameter", input(`;alg=`, `;expires=1;alg=`), body, `signature parameter "expires": not one of created (an integer), nonce, keyid, alg (strings)`},
		{"trailing text", input(`"hmac-sha256"`, `"hmac-sha256", x=()`), body, "Signature-Input: text after the parameters"},
		{"unsigned", func(r *http.Request) { r.Header.Del("Signature-Input") }, body, "no signature"},
		{"two signatures", func(r *http.Request) { r.Header.Add("Signature", r.Header.Get("Signature")) }, body, "2 Signature headers, want 1"},
		{"another label", input("blast=", "sig1="), body, "no blast signature in Signature-Input"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			v := newVerifier(token, keyid)
			r := mk()
			tc.change(r)
			err := v.check(r, tc.body, now)
			if got := errText(err); got != tc.want {
				t.Errorf("%v, want %q", err, tc.want)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// recorder keeps the last request a client sent, as it crossed the wire.
type recorder struct {
	mu   sync.Mutex
	last *captured
}

type captured struct {
	method, host, path string
	header             http.Header
	body               []byte
}

func (rec *recorder) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	rec.mu.Lock()
	rec.last = &captured{r.Method, r.Host, r.URL.Path, r.Header.Clone(), body}
	rec.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// replay sends a captured request to the control endpoint at addr, word
// for word (its Host too), and returns the answer's status.
func (c *captured) replay(t *testing.T, addr string) int {
	t.Helper()
	req, _ := http.NewRequest(c.method, "http://"+addr+c.path, bytes.NewReader(c.body))
	req.Header, req.Host = c.header.Clone(), c.host
	return status(t, req)
}

// TestReplay: a request the mesh sent to one agent, seen on the wire, is
// refused by a second agent that shares the token, by the same agent
// again anywhere in the window, and by the same agent after a restart
// (a new instance on the same port); fresh requests are taken, also by
// the restarted agent from a client that knew the instance before.
func TestReplay(t *testing.T) {
	clk := fakeNow()
	var logA, logB syncBuffer
	cfgA := Config{Server: testServer(), ControlPort: testkit.FreePort(t), Token: token, Name: "node-a", Clock: clk, Log: &logA}
	cfgB := Config{Server: testServer(), ControlPort: testkit.FreePort(t), Token: token, Name: "node-b", Clock: clk, Log: &logB}
	a, stopA := run(t, cfgA)
	b, _ := run(t, cfgB)
	rec := &recorder{}
	ca := &Client{Addr: a.ControlAddr().String(), Token: token, Clock: clk, HTTP: &http.Client{Transport: rec}}
	ctx := context.Background()
	in, err := ca.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if in.Name != "node-a" || in.Instance != a.instance {
		t.Fatalf("info %+v, want node-a's instance %s", in, a.instance)
	}
	// What crossed the wire last: the signed request, the mesh's second
	// after the agent named its keyid.
	wire := rec.last
	if got := wire.header.Get("Signature-Input"); !strings.Contains(got, `keyid="node-a/`+a.instance+`"`) {
		t.Fatalf("the captured request is not signed for node-a's instance: %s", got)
	}

	if got := wire.replay(t, b.ControlAddr().String()); got != http.StatusUnauthorized {
		t.Errorf("the request replayed to a second agent with the token: status %d, want 401", got)
	}
	if want := "signed for agent node-a instance " + a.instance + ", this is agent node-b instance " + b.instance; !strings.Contains(logB.String(), want) {
		t.Errorf("node-b's log does not say %q:\n%s", want, logB.String())
	}
	for _, d := range []time.Duration{0, ClockSkew} {
		clk.Set(time.Unix(wire.created(t), 0).Add(d)) // the window's start and end
		if got := wire.replay(t, a.ControlAddr().String()); got != http.StatusUnauthorized {
			t.Errorf("the request replayed to its agent %v after it was signed: status %d, want 401", d, got)
		}
	}
	if !strings.Contains(logA.String(), "replayed request") {
		t.Errorf("node-a's log does not say replayed request:\n%s", logA.String())
	}

	// The agent restarts on the same ports: a new instance.
	stopA()
	a2, _ := run(t, cfgA)
	if a2.instance == a.instance {
		t.Errorf("the restarted agent drew the same instance %s", a.instance)
	}
	if got := wire.replay(t, a2.ControlAddr().String()); got != http.StatusUnauthorized {
		t.Errorf("the request replayed to its agent after a restart: status %d, want 401", got)
	}
	// A fresh request is taken: the client learns the new instance from
	// the refusal of its first.
	in, err = ca.Info(ctx)
	if err != nil {
		t.Fatalf("a fresh request after the restart: %v", err)
	}
	if in.Instance != a2.instance || ca.KeyID() != "node-a/"+a2.instance {
		t.Errorf("after the restart: info instance %s, client signs for %s; want %s", in.Instance, ca.KeyID(), a2.instance)
	}
	// Another token is still refused, with ErrAuth.
	bad := &Client{Addr: ca.Addr, Token: []byte("another-token-of-32-bytes-length"), Clock: clk}
	if _, err := bad.Info(ctx); !errors.Is(err, ErrAuth) {
		t.Errorf("another token: %v, want ErrAuth", err)
	}
}

// created is the time a captured request was signed at.
func (c *captured) created(t *testing.T) int64 {
	t.Helper()
	v, _ := strings.CutPrefix(c.header.Get("Signature-Input"), sigLabel+"=")
	_, params, err := parseInput(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range params {
		if p.key == "created" && p.num != nil {
			return *p.num
		}
	}
	t.Fatal("no created")
	return 0
}

// syncBuffer is a log the agent writes from its handlers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
