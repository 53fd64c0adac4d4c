package agent

import (
	"github.com/blastnet/blast/control"

	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The control endpoint never sees the token itself. Each request is signed
// as an HTTP message signature (RFC 9421) with HMAC-SHA256 under the token:
//
//	Content-Digest: sha-256=:BASE64(SHA-256 of the body):
//	Signature-Input: blast=("@method" "@authority" "@path" "content-digest");created=UNIX;nonce="HEX";keyid="NAME/INSTANCE";alg="hmac-sha256"
//	Signature: blast=:BASE64(HMAC):
//
// The HMAC is over RFC 9421's signature base: a line per covered component
// and the parameters last. keyid names the agent the request is for: its
// name and the instance id it drew when it started (Info.Instance). An
// agent takes a request only when keyid is its own, created is within
// ClockSkew of its clock, and the nonce is one it has not taken: a request
// seen on the wire can be neither changed, nor sent to another agent, nor
// sent again to the same one, also after it restarted (a new instance id;
// no nonce needs to outlive the process). Its refusal (401) carries
// Accept-Signature (RFC 9421 §5.1) with its keyid, from which a client
// that does not know it, or knew an instance before a restart, learns it.
const (
	sigLabel = "blast"
	sigAlg   = "hmac-sha256"
	// ClockSkew is how far a request's time may be from the agent's.
	ClockSkew = 2 * time.Minute
	// MinTokenLen is the shortest token taken: 16 bytes, such as
	// `openssl rand -hex 16` gives twice over.
	MinTokenLen = 16
	// maxNonces bounds the nonces remembered (ClockSkew of requests).
	maxNonces = 1 << 16
)

// covered are the components every request signs, in this order.
var covered = []string{"@method", "@authority", "@path", "content-digest"}

// TokenEnv is the environment variable a token may come from.
const TokenEnv = "BLAST_TOKEN"

// ReadToken reads the token from file (its surrounding white space
// dropped), or from $BLAST_TOKEN when file is "". It refuses a missing or
// short token, saying how to make one.
func ReadToken(file string) ([]byte, error) {
	var t string
	from := "$" + TokenEnv
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--token-file: %w", err)
		}
		t, from = string(b), file
	} else {
		t = os.Getenv(TokenEnv)
		if t == "" {
			return nil, errors.New("no token: give --token-file FILE or set " + TokenEnv + " (the same on every agent and the mesh; make one with: openssl rand -hex 32)")
		}
	}
	t = strings.TrimSpace(t)
	if len(t) < MinTokenLen {
		return nil, fmt.Errorf("the token in %s is %d bytes: use at least %d (openssl rand -hex 32)", from, len(t), MinTokenLen)
	}
	return []byte(t), nil
}

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func newNonce() string { return randomHex(16) }

// newInstance is the id an agent draws when it starts.
func newInstance() string { return randomHex(16) }

// keyID is the keyid of requests for agent name's instance.
func keyID(name, instance string) string { return name + "/" + instance }

// contentDigest is RFC 9530's Content-Digest of body, with SHA-256.
func contentDigest(body []byte) string {
	sum := sha256.Sum256(body)
	return "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
}

// param is a signature parameter: an integer, a string, or (bare, a
// boolean true) neither.
type param struct {
	key  string
	num  *int64
	str  *string
	bare bool
}

// sfString serializes s as a structured-field string (RFC 8941 §3.3.3);
// s is printable ASCII (checked by the callers).
func sfString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// printable says whether s can be a structured-field string.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// serializeInput serializes an inner list of components with its
// parameters, as Signature-Input's member and @signature-params carry it.
func serializeInput(components []string, params []param) string {
	var b strings.Builder
	b.WriteByte('(')
	for i, c := range components {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(sfString(c))
	}
	b.WriteByte(')')
	for _, p := range params {
		b.WriteString(";" + p.key)
		switch {
		case p.num != nil:
			b.WriteString("=" + strconv.FormatInt(*p.num, 10))
		case p.str != nil:
			b.WriteString("=" + sfString(*p.str))
		}
	}
	return b.String()
}

// signatureBase is RFC 9421's signature base (§2.5): a line per component,
// `"NAME": VALUE`, then the parameters' line, without a final newline.
func signatureBase(components []string, value func(string) string, input string) string {
	var b strings.Builder
	for _, c := range components {
		b.WriteString(sfString(c) + ": " + value(c) + "\n")
	}
	b.WriteString(`"@signature-params": ` + input)
	return b.String()
}

func hmacSHA256(key []byte, s string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return m.Sum(nil)
}

// sigParams are the parameters of a request's signature.
type sigParams struct {
	created      int64
	nonce, keyid string
}

func (p sigParams) input() string {
	alg := sigAlg
	return serializeInput(covered, []param{{key: "created", num: &p.created}, {key: "nonce", str: &p.nonce},
		{key: "keyid", str: &p.keyid}, {key: "alg", str: &alg}})
}

// components are the values of a request's covered components.
func components(method, authority, path, digest string) func(string) string {
	return func(c string) string {
		switch c {
		case "@method":
			return method
		case "@authority":
			return strings.ToLower(authority)
		case "@path":
			return path
		case "content-digest":
			return digest
		}
		return ""
	}
}

// signRequest signs req, whose body is body, for the agent keyid at now
// with nonce. req.Host is the authority signed.
func signRequest(req *http.Request, token []byte, keyid string, now time.Time, nonce string, body []byte) {
	if req.Host == "" {
		req.Host = req.URL.Host
	}
	digest := contentDigest(body)
	p := sigParams{created: now.Unix(), nonce: nonce, keyid: keyid}
	in := p.input()
	sig := hmacSHA256(token, signatureBase(covered, components(req.Method, req.Host, req.URL.EscapedPath(), digest), in))
	req.Header.Set("Content-Digest", digest)
	req.Header.Set("Signature-Input", sigLabel+"="+in)
	req.Header.Set("Signature", sigLabel+"=:"+base64.StdEncoding.EncodeToString(sig)+":")
}

// acceptSignature is the Accept-Signature an agent answers a refused
// request with: what to sign, and for which keyid.
func acceptSignature(keyid string) string {
	alg := sigAlg
	return sigLabel + "=" + serializeInput(covered, []param{{key: "created", bare: true}, {key: "keyid", str: &keyid}, {key: "alg", str: &alg}})
}

// challengeKeyID is the keyid an agent's Accept-Signature asks for ("":
// none).
func challengeKeyID(h http.Header) string {
	v := h.Get("Accept-Signature")
	rest, ok := strings.CutPrefix(v, sigLabel+"=")
	if !ok {
		return ""
	}
	_, params, err := parseInput(rest)
	if err != nil {
		return ""
	}
	for _, p := range params {
		if p.key == "keyid" && p.str != nil && printable(*p.str) {
			return *p.str
		}
	}
	return ""
}

// parseInput reads an inner list of strings with its parameters (integers,
// strings or bare), strictly: nothing may follow it.
func parseInput(s string) ([]string, []param, error) {
	bad := func(what string) ([]string, []param, error) {
		return nil, nil, fmt.Errorf("Signature-Input: %s", what)
	}
	if !strings.HasPrefix(s, "(") {
		return bad("not an inner list")
	}
	s = s[1:]
	var comps []string
	for {
		if strings.HasPrefix(s, ")") {
			s = s[1:]
			break
		}
		if len(comps) > 0 {
			if !strings.HasPrefix(s, " ") {
				return bad("components not separated by a space")
			}
			s = s[1:]
		}
		str, rest, ok := cutSFString(s)
		if !ok {
			return bad("a component is not a string")
		}
		comps, s = append(comps, str), rest
		if len(comps) > 16 {
			return bad("too many components")
		}
	}
	var params []param
	for s != "" {
		if s[0] != ';' {
			return bad("text after the parameters")
		}
		s = s[1:]
		i := 0
		for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= '0' && s[i] <= '9' || s[i] == '-' || s[i] == '_' || s[i] == '.' || s[i] == '*') {
			i++
		}
		if i == 0 {
			return bad("a parameter without a key")
		}
		p := param{key: s[:i]}
		s = s[i:]
		switch {
		case !strings.HasPrefix(s, "="):
			p.bare = true
		case strings.HasPrefix(s, `="`):
			str, rest, ok := cutSFString(s[1:])
			if !ok {
				return bad("parameter " + p.key + ": a bad string")
			}
			p.str, s = &str, rest
		default:
			j := 1
			for j < len(s) && j < 17 && (s[j] >= '0' && s[j] <= '9' || j == 1 && s[j] == '-') {
				j++
			}
			n, err := strconv.ParseInt(s[1:j], 10, 64)
			if err != nil {
				return bad("parameter " + p.key + ": not an integer or a string")
			}
			p.num, s = &n, s[j:]
		}
		for _, q := range params {
			if q.key == p.key {
				return bad("parameter " + p.key + " twice")
			}
		}
		params = append(params, p)
		if len(params) > 8 {
			return bad("too many parameters")
		}
	}
	return comps, params, nil
}

// cutSFString reads a structured-field string at the start of s.
func cutSFString(s string) (string, string, bool) {
	if !strings.HasPrefix(s, `"`) {
		return "", s, false
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			if i+1 >= len(s) || s[i+1] != '"' && s[i+1] != '\\' {
				return "", s, false
			}
			b.WriteByte(s[i+1])
			i++
		case c == '"':
			return b.String(), s[i+1:], true
		case c < 0x20 || c > 0x7e:
			return "", s, false
		default:
			b.WriteByte(c)
		}
	}
	return "", s, false
}

// errTooMany refuses a request when the nonce memory is full: a client
// sent more than maxNonces requests within the window.
var errTooMany = errors.New("too many requests")

// verifier checks requests' signatures for one agent instance and
// remembers the nonces it took.
type verifier struct {
	token []byte
	keyid string
	mu    sync.Mutex
	seen  map[string]time.Time // nonce -> its request's time
}

func newVerifier(token []byte, keyid string) *verifier {
	return &verifier{token: token, keyid: keyid, seen: map[string]time.Time{}}
}

// one is a request's only value of header h.
func one(r *http.Request, h string) (string, error) {
	vs := r.Header.Values(h)
	if len(vs) != 1 {
		return "", fmt.Errorf("%d %s headers, want 1", len(vs), h)
	}
	return vs[0], nil
}

// check reports why request r, with body, is refused (nil: taken), at now.
func (v *verifier) check(r *http.Request, body []byte, now time.Time) error {
	if len(r.Header.Values("Signature-Input")) == 0 {
		return errUnsigned
	}
	in, err := one(r, "Signature-Input")
	if err != nil {
		return err
	}
	rest, ok := strings.CutPrefix(in, sigLabel+"=")
	if !ok {
		return errors.New("no " + sigLabel + " signature in Signature-Input")
	}
	comps, params, err := parseInput(rest)
	if err != nil {
		return err
	}
	if !slices.Equal(comps, covered) {
		return fmt.Errorf("the signature covers %q, want %q", comps, covered)
	}
	var p sigParams
	var alg string
	got := map[string]bool{}
	for _, q := range params {
		got[q.key] = true
		switch {
		case q.key == "created" && q.num != nil:
			p.created = *q.num
		case q.key == "nonce" && q.str != nil:
			p.nonce = *q.str
		case q.key == "keyid" && q.str != nil:
			p.keyid = *q.str
		case q.key == "alg" && q.str != nil:
			alg = *q.str
		default:
			return fmt.Errorf("signature parameter %q: not one of created (an integer), nonce, keyid, alg (strings)", q.key)
		}
	}
	for _, k := range []string{"created", "nonce", "keyid", "alg"} {
		if !got[k] {
			return fmt.Errorf("the signature has no %s", k)
		}
	}
	if alg != sigAlg {
		return fmt.Errorf("signature algorithm %q, want %q", alg, sigAlg)
	}
	if len(p.nonce) < 16 || len(p.nonce) > 64 {
		return errors.New("bad nonce: 16 to 64 characters")
	}
	sigHdr, err := one(r, "Signature")
	if err != nil {
		return err
	}
	b64, ok := strings.CutPrefix(sigHdr, sigLabel+"=:")
	if !ok || !strings.HasSuffix(b64, ":") {
		return errors.New("no " + sigLabel + " signature in Signature")
	}
	sig, err := base64.StdEncoding.DecodeString(strings.TrimSuffix(b64, ":"))
	if err != nil {
		return errors.New("Signature: not base64")
	}
	digest, err := one(r, "Content-Digest")
	if err != nil {
		return err
	}
	if digest != contentDigest(body) {
		return errors.New("the body does not match its Content-Digest")
	}
	if r.URL.RawQuery != "" || r.URL.ForceQuery {
		return errors.New("a query, which is not signed")
	}
	base := signatureBase(covered, components(r.Method, r.Host, r.URL.EscapedPath(), digest), p.input())
	if !hmac.Equal(sig, hmacSHA256(v.token, base)) {
		return errors.New("bad signature (another token?)")
	}
	if p.keyid != v.keyid {
		return fmt.Errorf("signed for %s, this is %s: a request copied to another agent, or from before the agent restarted", describeKey(p.keyid), describeKey(v.keyid))
	}
	at := time.Unix(p.created, 0)
	if d := now.Sub(at); d > ClockSkew || d < -ClockSkew {
		return fmt.Errorf("request time %s is %v from the agent's clock (more than %v: are the clocks synchronised?)", at.UTC().Format(time.RFC3339), d.Round(time.Second), ClockSkew)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, dup := v.seen[p.nonce]; dup {
		return errors.New("replayed request")
	}
	if len(v.seen) >= maxNonces {
		// A nonce is kept while its request could be taken: until its
		// time is ClockSkew behind the clock.
		for n, t := range v.seen {
			if now.Sub(t) > ClockSkew {
				delete(v.seen, n)
			}
		}
		if len(v.seen) >= maxNonces {
			return errTooMany
		}
	}
	v.seen[p.nonce] = at
	return nil
}

// errUnsigned: a request without a signature (a client learning the
// agent's keyid from the refusal).
var errUnsigned = errors.New("no signature")

// describeKey is a keyid in words.
func describeKey(keyid string) string {
	i := strings.LastIndexByte(keyid, '/')
	if keyid == "" || i < 0 {
		return fmt.Sprintf("keyid %q", keyid)
	}
	return fmt.Sprintf("agent %s instance %s", keyid[:i], keyid[i+1:])
}

// proofFunc is an agent's answer to another's proof request
// (control.ProveAgent): an HMAC-SHA256 of the nonce under a key drawn
// from the token for proofs alone, so that it signs nothing a control
// request's signature would take.
func proofFunc(token []byte) control.ProofFunc {
	key := hmacSHA256(token, "blast agent proof v1")
	return func(nonce []byte) [control.ProofSize]byte {
		m := hmac.New(sha256.New, key)
		m.Write(nonce)
		return [control.ProofSize]byte(m.Sum(nil))
	}
}
