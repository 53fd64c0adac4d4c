package agent

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The control endpoint never sees the token itself: each request carries
//
//	Authorization: blast-hmac ts=UNIXSECONDS,nonce=HEX,sig=HEX
//
// where sig is HMAC-SHA256 under the token of the method, the path, ts,
// the nonce and the SHA-256 of the body, one per line. The agent takes a
// request only within ClockSkew of its own clock, and each nonce once, so
// a request seen on the wire can neither be replayed nor changed.
const (
	scheme = "blast-hmac"
	// ClockSkew is how far a request's time may be from the agent's.
	ClockSkew = 2 * time.Minute
	// MinTokenLen is the shortest token taken: 16 bytes, such as
	// `openssl rand -hex 16` gives twice over.
	MinTokenLen = 16
	// maxNonces bounds the nonces remembered (ClockSkew of requests).
	maxNonces = 1 << 16
)

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

func newNonce() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func mac(token []byte, method, path string, ts int64, nonce string, body []byte) []byte {
	sum := sha256.Sum256(body)
	m := hmac.New(sha256.New, token)
	fmt.Fprintf(m, "%s\n%s\n%d\n%s\n%x", method, path, ts, nonce, sum)
	return m.Sum(nil)
}

// sign makes the Authorization header of a request.
func sign(token []byte, method, path string, now time.Time, nonce string, body []byte) string {
	ts := now.Unix()
	return fmt.Sprintf("%s ts=%d,nonce=%s,sig=%x", scheme, ts, nonce, mac(token, method, path, ts, nonce, body))
}

// verifier checks Authorization headers and remembers the nonces it took.
type verifier struct {
	token []byte
	mu    sync.Mutex
	seen  map[string]time.Time // nonce -> its request's time
}

func newVerifier(token []byte) *verifier {
	return &verifier{token: token, seen: map[string]time.Time{}}
}

// check reports why a request is refused (nil: taken).
func (v *verifier) check(header, method, path string, body []byte, now time.Time) error {
	rest, ok := strings.CutPrefix(header, scheme+" ")
	if !ok {
		return errors.New("no " + scheme + " Authorization")
	}
	var tsStr, nonce, sigHex string
	for _, kv := range strings.Split(rest, ",") {
		k, val, _ := strings.Cut(kv, "=")
		switch k {
		case "ts":
			tsStr = val
		case "nonce":
			nonce = val
		case "sig":
			sigHex = val
		}
	}
	ts, err := strconv.ParseInt(tsStr, 10, 64)
	if err != nil {
		return errors.New("bad ts")
	}
	if len(nonce) < 16 || len(nonce) > 64 {
		return errors.New("bad nonce")
	}
	sig, err := hex.DecodeString(sigHex)
	if err != nil || !hmac.Equal(sig, mac(v.token, method, path, ts, nonce, body)) {
		return errors.New("bad signature (another token?)")
	}
	at := time.Unix(ts, 0)
	if d := now.Sub(at); d > ClockSkew || d < -ClockSkew {
		return fmt.Errorf("request time %s is %v from the agent's clock (more than %v: are the clocks synchronised?)", at.UTC().Format(time.RFC3339), d.Round(time.Second), ClockSkew)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, dup := v.seen[nonce]; dup {
		return errors.New("replayed request")
	}
	if len(v.seen) >= maxNonces {
		for n, t := range v.seen {
			if now.Sub(t) > ClockSkew || t.Sub(now) > ClockSkew {
				delete(v.seen, n)
			}
		}
		if len(v.seen) >= maxNonces {
			return errors.New("too many requests")
		}
	}
	v.seen[nonce] = at
	return nil
}
