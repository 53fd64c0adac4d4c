package control

// iperf3's authentication (--username, --rsa-public-key-path and
// IPERF3_PASSWORD on the client; --rsa-private-key-path,
// --authorized-users-path and --time-skew-threshold on the server), as
// src/iperf_auth.c does it: the client encrypts
//
//	user: NAME\npwd:  PASSWORD\nts:   UNIX-SECONDS
//
// with the server's RSA public key, base64-encodes it and sends it as the
// parameter "authtoken"; the server decrypts it, checks the time against
// its clock and the user against a file of `user,sha256hex` lines, where
// the hash is SHA-256 of "{user}password" in lowercase hex. A test that
// fails is refused with IEAUTHTEST.
//
// Padding: iperf3 up to 3.16 (Debian 12 ships 3.12) encrypts and decrypts
// with PKCS #1 v1.5 only; 3.17 moved to OAEP (CVE-2024-26306) and added
// --use-pkcs1-padding to talk to the older ones. A blast client pads as
// 3.17 does (OAEP with SHA-1, OpenSSL's default), PKCS #1 v1.5 with
// ClientAuth.PKCS1; a blast server takes either.

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultSkew is how far the time in a client's token may be from the
// server's clock (iperf3's --time-skew-threshold default).
const DefaultSkew = 10 * time.Second

// ErrAuth is what every refusal of a client's credentials wraps.
var ErrAuth = errors.New("authentication failed")

// The text a token encrypts, as iperf_auth.c's auth_text_format.
const (
	tokenUser = "user: "
	tokenPwd  = "\npwd:  "
	tokenTS   = "\nts:   "
)

// ClientAuth are the credentials a client sends (iperf3's --username,
// --rsa-public-key-path and the password of IPERF3_PASSWORD or the prompt).
type ClientAuth struct {
	User     string
	Password string
	// Key is the server's public key.
	Key *rsa.PublicKey
	// PKCS1 pads with PKCS #1 v1.5 (--use-pkcs1-padding), which is what
	// iperf3 servers before 3.17 decrypt; otherwise OAEP, as iperf3 3.17
	// and later.
	PKCS1 bool
}

// Validate reports what is wrong with a's credentials, before anything is
// sent.
func (a *ClientAuth) Validate() error {
	switch {
	case a.Key == nil:
		return errors.New("authentication: no RSA public key of the server (--rsa-public-key-path)")
	case a.User == "":
		return errors.New("--username: empty: give the user name the server's --authorized-users-path lists")
	case strings.ContainsAny(a.User, ", \t\r\n"):
		return fmt.Errorf("--username %q: a user name cannot hold a comma or white space (the server reads it up to the first)", a.User)
	}
	if n, max := len(a.text(math.MaxInt64)), a.maxText(); n > max {
		return fmt.Errorf("authentication: the user name and password are %d bytes too long for the server's %d-bit RSA key (at most %d bytes of token with %s padding)",
			n-max, a.Key.N.BitLen(), max, a.padding())
	}
	return nil
}

func (a *ClientAuth) padding() string {
	if a.PKCS1 {
		return "PKCS #1 v1.5"
	}
	return "OAEP"
}

// maxText is the longest plaintext the key encrypts with a's padding.
func (a *ClientAuth) maxText() int {
	k := a.Key.Size()
	if a.PKCS1 {
		return k - 11
	}
	return k - 2*sha1.Size - 2
}

func (a *ClientAuth) text(ts int64) string {
	return tokenUser + a.User + tokenPwd + a.Password + tokenTS + strconv.FormatInt(ts, 10)
}

// Token is iperf3's "authtoken" for the credentials at time now; a nil a
// has none.
func (a *ClientAuth) Token(now time.Time) (string, error) {
	if a == nil {
		return "", nil
	}
	if err := a.Validate(); err != nil {
		return "", err
	}
	msg := []byte(a.text(now.Unix()))
	var ct []byte
	var err error
	if a.PKCS1 {
		// Deprecated in Go for new designs; iperf3 before 3.17 decrypts
		// nothing else.
		ct, err = rsa.EncryptPKCS1v15(rand.Reader, a.Key, msg)
	} else {
		ct, err = rsa.EncryptOAEP(sha1.New(), rand.Reader, a.Key, msg, nil)
	}
	if err != nil {
		return "", fmt.Errorf("authentication: encrypt the token: %w", err)
	}
	return base64.StdEncoding.EncodeToString(ct), nil
}

// ServerAuth checks the credentials of clients (iperf3's
// --rsa-private-key-path, --authorized-users-path, --time-skew-threshold).
type ServerAuth struct {
	Key *rsa.PrivateKey
	// UsersFile holds `user,sha256hex` lines; it is read for every test,
	// as iperf3 does, so that a change applies to the next test.
	UsersFile string
	// Skew is how far a token's time may be from the server's clock
	// (DefaultSkew when 0).
	Skew time.Duration

	// used remembers the tokens that passed, so that each passes once.
	used usedTokens
}

// maxUsedTokens bounds the tokens a server remembers: past it, a new
// token is refused until the oldest leave the skew window (a user with
// the password would have to run 65,536 tests within it).
const maxUsedTokens = 1 << 16

// usedTokens remembers each token that passed, by the SHA-256 of its
// ciphertext, until its time leaves the skew window: until then a second
// use is refused as a replay, after it the skew check refuses it. A
// client makes a new token for every test, and its random padding makes
// each ciphertext new even within one second, so only a copy repeats.
type usedTokens struct {
	mu      sync.Mutex
	until   map[[sha256.Size]byte]int64 // the last second (Unix) the token's time is in the window
	sweepAt int64                       // when to drop the tokens out of the window next
}

// take records the token whose ciphertext is ct, good until the second
// until, at the second now; it refuses a token taken before, and a new
// one when maxUsedTokens are remembered.
func (u *usedTokens) take(ct []byte, until, now int64) error {
	sum := sha256.Sum256(ct)
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.until == nil {
		u.until = make(map[[sha256.Size]byte]int64)
	}
	if now >= u.sweepAt || len(u.until) >= maxUsedTokens {
		for k, t := range u.until {
			if t < now {
				delete(u.until, k)
			}
		}
		u.sweepAt = now + 1
	}
	if t, ok := u.until[sum]; ok && t >= now {
		return errors.New("the token was used for a test already: a client makes a new one for every test, so this is a copy (a replay?)")
	}
	if len(u.until) >= maxUsedTokens {
		return fmt.Errorf("the server remembers %d tokens that are still within the time skew window, and takes no new one until the oldest leave it", len(u.until))
	}
	u.until[sum] = until
	return nil
}

// Validate reports what is wrong with a: no key, a users file that cannot
// be read, a negative skew.
func (a *ServerAuth) Validate() error {
	switch {
	case a.Key == nil:
		return errors.New("authentication: no RSA private key (--rsa-private-key-path)")
	case a.UsersFile == "":
		return errors.New("authentication: no authorized users file (--authorized-users-path)")
	case a.Skew < 0:
		return fmt.Errorf("--time-skew-threshold %v: skew threshold must be a positive number", a.Skew.Seconds())
	}
	if _, err := os.ReadFile(a.UsersFile); err != nil {
		return fmt.Errorf("--authorized-users-path %s: cannot access authorized users file: %w", a.UsersFile, err)
	}
	return nil
}

// Check decrypts the client's token and checks it at time now. A nil a
// (the server has no authentication) takes any token, or none. The error
// says why a test is refused, for the server's log; the client is told
// only IEAUTHTEST.
func (a *ServerAuth) Check(token string, now time.Time) error {
	if a == nil {
		return nil
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrAuth}, args...)...)
	}
	if token == "" {
		return fail("the client sent no credentials (it needs --username and --rsa-public-key-path, and the password in IPERF3_PASSWORD)")
	}
	ct, user, pwd, ts, err := a.decode(token)
	if err != nil {
		return fail("%v", err)
	}
	skew := a.Skew
	if skew == 0 {
		skew = DefaultSkew
	}
	sec := int64(skew / time.Second)
	if t := now.Unix(); ts < t-sec || ts > t+sec {
		return fail("user %q: the token's time (%d) is more than %d s from the server's clock (%d): set both clocks right, or raise --time-skew-threshold",
			user, ts, sec, t)
	}
	ok, err := lookUser(a.UsersFile, user, pwd)
	switch {
	case err != nil:
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is the server's business
		}
		return fail("the server cannot read its authorized users file: %v", err)
	case !ok:
		// Whether the user exists is not for the client to learn.
		return fail("user %q: unknown user or wrong password", user)
	}
	if err := a.used.take(ct, ts+sec, now.Unix()); err != nil {
		return fail("user %q: %v", user, err)
	}
	return nil
}

// decode decrypts a token (OAEP, else PKCS #1 v1.5) and reads the user,
// password and time in it.
func (a *ServerAuth) decode(token string) (ct []byte, user, pwd string, ts int64, err error) {
	ct, err = base64.StdEncoding.DecodeString(strings.Map(dropSpace, token))
	if err != nil {
		return nil, "", "", 0, errors.New("the token is not base64")
	}
	msg, err := rsa.DecryptOAEP(sha1.New(), nil, a.Key, ct, nil)
	if err != nil {
		// iperf3 before 3.17 (and 3.17's --use-pkcs1-padding). The
		// client learns only IEAUTHTEST, whichever step fails.
		msg, err = rsa.DecryptPKCS1v15(nil, a.Key, ct)
	}
	if err != nil {
		return nil, "", "", 0, errors.New("the token does not decrypt with the server's private key (the client has another public key?)")
	}
	user, pwd, ts, err = parseCredentials(msg)
	return ct, user, pwd, ts, err
}

func dropSpace(r rune) rune {
	if r == ' ' || r == '\t' || r == '\r' || r == '\n' {
		return -1
	}
	return r
}

// parseCredentials reads iperf3's token text.
func parseCredentials(msg []byte) (user, pwd string, ts int64, err error) {
	bad := errors.New("the token does not hold iperf3's credentials")
	s, ok := strings.CutPrefix(string(msg), tokenUser)
	if !ok {
		return "", "", 0, bad
	}
	user, rest, ok := strings.Cut(s, tokenPwd)
	if !ok || user == "" {
		return "", "", 0, bad
	}
	i := strings.LastIndex(rest, tokenTS)
	if i < 0 {
		return "", "", 0, bad
	}
	pwd = rest[:i]
	ts, err = strconv.ParseInt(rest[i+len(tokenTS):], 10, 64)
	if err != nil {
		return "", "", 0, bad
	}
	return user, pwd, ts, nil
}

// PasswordHash is what an authorized users file holds for a user and
// password: SHA-256 of "{user}password", in lowercase hex.
func PasswordHash(user, password string) string {
	sum := sha256.Sum256([]byte("{" + user + "}" + password))
	return hex.EncodeToString(sum[:])
}

// lookUser reads the users file: ok is whether one of its lines has the
// user and the password's hash.
func lookUser(path, user, pwd string) (ok bool, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	want := []byte(PasswordHash(user, pwd))
	for _, e := range parseUsers(b) {
		if e.user == user && subtle.ConstantTimeCompare([]byte(strings.ToLower(e.hash)), want) == 1 {
			ok = true
		}
	}
	return ok, nil
}

type userEntry struct{ user, hash string }

// parseUsers reads an authorized users file as iperf3 does: one
// `user,hash` a line; empty lines, lines without a comma and lines that
// start with # are skipped.
func parseUsers(b []byte) []userEntry {
	var out []userEntry
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" || line[0] == '#' || !strings.Contains(line, ",") {
			continue
		}
		var f []string
		for _, s := range strings.Split(line, ",") {
			if s = strings.TrimSpace(s); s != "" {
				f = append(f, s)
			}
		}
		if len(f) >= 2 {
			out = append(out, userEntry{f[0], f[1]})
		}
	}
	return out
}

// ParsePublicKey reads the server's RSA public key from PEM: "PUBLIC KEY"
// (what `openssl rsa -in private.pem -outform PEM -pubout` writes, and all
// iperf3 reads) or PKCS #1 "RSA PUBLIC KEY".
func ParsePublicKey(b []byte) (*rsa.PublicKey, error) {
	for {
		var p *pem.Block
		if p, b = pem.Decode(b); p == nil {
			return nil, errors.New("no PEM public key in it (want -----BEGIN PUBLIC KEY-----: openssl rsa -in private.pem -outform PEM -pubout -out public.pem)")
		}
		switch p.Type {
		case "PUBLIC KEY":
			k, err := x509.ParsePKIXPublicKey(p.Bytes)
			if err != nil {
				return nil, fmt.Errorf("bad public key: %w", err)
			}
			rk, ok := k.(*rsa.PublicKey)
			if !ok {
				return nil, fmt.Errorf("a %T public key: iperf3's authentication takes RSA keys", k)
			}
			return rk, checkKeySize(rk)
		case "RSA PUBLIC KEY":
			k, err := x509.ParsePKCS1PublicKey(p.Bytes)
			if err != nil {
				return nil, fmt.Errorf("bad RSA public key: %w", err)
			}
			return k, checkKeySize(k)
		case "RSA PRIVATE KEY", "PRIVATE KEY", "ENCRYPTED PRIVATE KEY":
			return nil, errors.New("a private key: the client takes the server's public key (openssl rsa -in private.pem -outform PEM -pubout -out public.pem), the private one stays on the server")
		}
	}
}

// ParsePrivateKey reads the server's RSA private key from PEM: PKCS #1
// ("RSA PRIVATE KEY", `openssl genrsa`) or PKCS #8 ("PRIVATE KEY",
// `openssl genpkey`), unencrypted.
func ParsePrivateKey(b []byte) (*rsa.PrivateKey, error) {
	for {
		var p *pem.Block
		if p, b = pem.Decode(b); p == nil {
			return nil, errors.New("no PEM private key in it (want -----BEGIN PRIVATE KEY----- or -----BEGIN RSA PRIVATE KEY-----: openssl genrsa -out private.pem 2048)")
		}
		if p.Type == "ENCRYPTED PRIVATE KEY" || strings.Contains(p.Headers["Proc-Type"], "ENCRYPTED") {
			return nil, errors.New("the private key is encrypted: blast cannot ask for its passphrase; write a plain copy with openssl rsa -in private.pem -out plain.pem (and keep it readable by the server only)")
		}
		switch p.Type {
		case "RSA PRIVATE KEY":
			k, err := x509.ParsePKCS1PrivateKey(p.Bytes)
			if err != nil {
				return nil, fmt.Errorf("bad RSA private key: %w", err)
			}
			return k, checkKeySize(&k.PublicKey)
		case "PRIVATE KEY":
			k, err := x509.ParsePKCS8PrivateKey(p.Bytes)
			if err != nil {
				return nil, fmt.Errorf("bad private key: %w", err)
			}
			rk, ok := k.(*rsa.PrivateKey)
			if !ok {
				return nil, fmt.Errorf("a %T private key: iperf3's authentication takes RSA keys", k)
			}
			return rk, checkKeySize(&rk.PublicKey)
		case "PUBLIC KEY", "RSA PUBLIC KEY":
			return nil, errors.New("a public key: the server needs the private one (the client takes the public key)")
		}
	}
}

func checkKeySize(k *rsa.PublicKey) error {
	if n := k.N.BitLen(); n < 1024 {
		return fmt.Errorf("a %d-bit RSA key: too small to be safe (Go refuses keys under 1024 bits); make a 2048-bit one: openssl genrsa -out private.pem 2048", n)
	}
	return nil
}

// ReadPublicKey reads a PEM public key file (--rsa-public-key-path).
func ReadPublicKey(path string) (*rsa.PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--rsa-public-key-path: %w", err)
	}
	k, err := ParsePublicKey(b)
	if err != nil {
		return nil, fmt.Errorf("--rsa-public-key-path %s: %w", path, err)
	}
	return k, nil
}

// ReadPrivateKey reads a PEM private key file (--rsa-private-key-path).
func ReadPrivateKey(path string) (*rsa.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--rsa-private-key-path: %w", err)
	}
	k, err := ParsePrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("--rsa-private-key-path %s: %w", path, err)
	}
	return k, nil
}

// redactedToken stands for a token in debug output (-d): a copy of a
// token passes the server's check within the skew window, so none is
// printed.
const redactedToken = "(not shown)"

// redactToken returns the parameters frame b with the value of every
// "authtoken" key (in any case, as Go's decoder matches keys) replaced by
// redactedToken, for -d's get_parameters line. A frame that is not a JSON
// object but names authtoken is not shown at all.
func redactToken(b []byte) []byte {
	hidden := func() []byte {
		if bytes.Contains(bytes.ToLower(b), []byte("authtoken")) {
			return []byte(fmt.Sprintf("(%d bytes, not JSON; not shown as they may hold a token)", len(b)))
		}
		return b
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return hidden()
	}
	var out []byte
	last := int64(0)
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return hidden()
		}
		start := dec.InputOffset()
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return hidden()
		}
		if key, _ := k.(string); strings.EqualFold(key, "authtoken") {
			out = append(out, b[last:start]...)
			out = append(out, `:"`+redactedToken+`"`...)
			last = dec.InputOffset()
		}
	}
	if _, err := dec.Token(); err != nil {
		return hidden()
	}
	if _, err := dec.Token(); err != io.EOF {
		return hidden() // something after the object
	}
	return append(out, b[last:]...)
}
