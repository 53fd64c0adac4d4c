package control

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/internal/clock"
	"github.com/google/go-cmp/cmp"
)

// Test keys are made when the tests run; none is committed.
var (
	authKeyOnce sync.Once
	authKeys    [2]*rsa.PrivateKey
	authKeyErr  error
)

// authTestKeys returns two 2048-bit RSA keys, the same for every test of
// the run.
func authTestKeys(t testing.TB) (*rsa.PrivateKey, *rsa.PrivateKey) {
	t.Helper()
	authKeyOnce.Do(func() {
		for i := range authKeys {
			if authKeys[i], authKeyErr = rsa.GenerateKey(rand.Reader, 2048); authKeyErr != nil {
				return
			}
		}
	})
	if authKeyErr != nil {
		t.Fatal(authKeyErr)
	}
	return authKeys[0], authKeys[1]
}

// authFiles writes the key pair as iperf3 reads it (PKCS #1 private key,
// "PUBLIC KEY" public key) and a users file, and returns their paths.
func authFiles(t *testing.T, k *rsa.PrivateKey, users string) (priv, pub, usersFile string) {
	t.Helper()
	dir := t.TempDir()
	priv, pub, usersFile = filepath.Join(dir, "private.pem"), filepath.Join(dir, "public.pem"), filepath.Join(dir, "users.csv")
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	for path, b := range map[string][]byte{
		priv:      pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}),
		pub:       pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}),
		usersFile: []byte(users),
	} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return priv, pub, usersFile
}

// authUsers is a users file with alice (password "secret") and bob
// ("hunter2"), with iperf3's comment and blank lines.
func authUsers() string {
	return "# user,sha256 of {user}password\n\n" +
		"alice," + PasswordHash("alice", "secret") + "\n" +
		"bob," + PasswordHash("bob", "hunter2") + "\r\n"
}

// TestAuthPasswordHash: the example of iperf3's manual page (user mario,
// password rossi).
func TestAuthPasswordHash(t *testing.T) {
	if got, want := PasswordHash("mario", "rossi"), "bf7a49a846d44b454a5d11e7acfaf13d138bbe0b7483aa3e050879700572709b"; got != want {
		t.Errorf("PasswordHash(mario, rossi) = %s, want %s", got, want)
	}
}

// TestAuthTokenRoundTrip: a token made with either padding decrypts to
// iperf3's text, and passes the server's check.
func TestAuthTokenRoundTrip(t *testing.T) {
	k, _ := authTestKeys(t)
	_, _, users := authFiles(t, k, authUsers())
	now := time.Unix(1700000000, 0)
	for _, pkcs1 := range []bool{false, true} {
		c := &ClientAuth{User: "alice", Password: "secret", Key: &k.PublicKey, PKCS1: pkcs1}
		tok, err := c.Token(now)
		if err != nil {
			t.Fatalf("pkcs1 %v: %v", pkcs1, err)
		}
		ct, err := base64.StdEncoding.DecodeString(tok)
		if err != nil {
			t.Fatalf("pkcs1 %v: token %q is not base64: %v", pkcs1, tok, err)
		}
		var msg []byte
		if pkcs1 {
			msg, err = rsa.DecryptPKCS1v15(nil, k, ct)
		} else {
			msg, err = rsa.DecryptOAEP(sha1.New(), nil, k, ct, nil)
		}
		if err != nil {
			t.Fatalf("pkcs1 %v: decrypt with that padding: %v", pkcs1, err)
		}
		if want := "user: alice\npwd:  secret\nts:   1700000000"; string(msg) != want {
			t.Errorf("pkcs1 %v: token text %q, want %q", pkcs1, msg, want)
		}
		s := &ServerAuth{Key: k, UsersFile: users}
		if err := s.Check(tok, now.Add(9*time.Second)); err != nil {
			t.Errorf("pkcs1 %v: Check: %v", pkcs1, err)
		}
	}
}

// TestAuthRefusals: every way credentials fail, with the message the
// server logs (and a blast client reads).
func TestAuthRefusals(t *testing.T) {
	k, other := authTestKeys(t)
	_, _, users := authFiles(t, k, authUsers())
	now := time.Unix(1700000000, 0)
	token := func(user, pwd string, key *rsa.PrivateKey, at time.Time) string {
		tok, err := (&ClientAuth{User: user, Password: pwd, Key: &key.PublicKey}).Token(at)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	raw := func(text string) string {
		ct, err := rsa.EncryptOAEP(sha1.New(), rand.Reader, &k.PublicKey, []byte(text), nil)
		if err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(ct)
	}
	for _, tc := range []struct {
		name, token, want string
		skew              time.Duration
	}{
		{"wrong password", token("alice", "Secret", k, now), `authentication failed: user "alice": unknown user or wrong password`, 0},
		{"another user's password", token("bob", "secret", k, now), `authentication failed: user "bob": unknown user or wrong password`, 0},
		{"unknown user", token("carol", "secret", k, now), `authentication failed: user "carol": unknown user or wrong password`, 0},
		{"old token", token("alice", "secret", k, now.Add(-11*time.Second)), `authentication failed: user "alice": the token's time (1699999989) is more than 10 s from the server's clock (1700000000): set both clocks right, or raise --time-skew-threshold`, 0},
		{"future token", token("alice", "secret", k, now.Add(3*time.Second)), `authentication failed: user "alice": the token's time (1700000003) is more than 2 s from the server's clock (1700000000): set both clocks right, or raise --time-skew-threshold`, 2 * time.Second},
		{"no token", "", "authentication failed: the client sent no credentials (it needs --username and --rsa-public-key-path, and the password in IPERF3_PASSWORD)", 0},
		{"not base64", "%%% not a token", "authentication failed: the token is not base64", 0},
		{"garbage", base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 256)), "authentication failed: the token does not decrypt with the server's private key (the client has another public key?)", 0},
		{"another key", token("alice", "secret", other, now), "authentication failed: the token does not decrypt with the server's private key (the client has another public key?)", 0},
		{"not iperf3's text", raw("user alice password secret"), "authentication failed: the token does not hold iperf3's credentials", 0},
		{"no time", raw("user: alice\npwd:  secret\nts:   soon"), "authentication failed: the token does not hold iperf3's credentials", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &ServerAuth{Key: k, UsersFile: users, Skew: tc.skew}
			err := s.Check(tc.token, now)
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, ErrAuth) {
				t.Errorf("%v does not wrap ErrAuth", err)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("users file gone", func(t *testing.T) {
		s := &ServerAuth{Key: k, UsersFile: filepath.Join(t.TempDir(), "gone")}
		err := s.Check(token("alice", "secret", k, now), now)
		if want := "authentication failed: the server cannot read its authorized users file: no such file or directory"; err == nil || err.Error() != want {
			t.Errorf("got %v, want %s", err, want)
		}
	})
	t.Run("no authentication", func(t *testing.T) {
		var s *ServerAuth
		for _, tok := range []string{"", "garbage", token("alice", "wrong", k, now)} {
			if err := s.Check(tok, now); err != nil {
				t.Errorf("a server without authentication refused %q: %v", tok, err)
			}
		}
	})
}

// TestAuthClientValidate: credentials that cannot work are refused before
// anything is sent.
func TestAuthClientValidate(t *testing.T) {
	k, _ := authTestKeys(t)
	for _, tc := range []struct {
		name string
		a    ClientAuth
		want string
	}{
		{"no key", ClientAuth{User: "u", Password: "p"}, "authentication: no RSA public key of the server (--rsa-public-key-path)"},
		{"no user", ClientAuth{Key: &k.PublicKey}, "--username: empty: give the user name the server's --authorized-users-path lists"},
		{"space", ClientAuth{User: "a b", Key: &k.PublicKey}, `--username "a b": a user name cannot hold a comma or white space (the server reads it up to the first)`},
		{"too long", ClientAuth{User: "u", Password: strings.Repeat("p", 200), Key: &k.PublicKey},
			"authentication: the user name and password are 26 bytes too long for the server's 2048-bit RSA key (at most 214 bytes of token with OAEP padding)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.a.Token(time.Now())
			if err == nil || err.Error() != tc.want {
				t.Errorf("got %v, want %s", err, tc.want)
			}
		})
	}
	// PKCS #1 v1.5 has room for 31 more bytes.
	a := ClientAuth{User: "u", Password: strings.Repeat("p", 200), Key: &k.PublicKey, PKCS1: true}
	if _, err := a.Token(time.Now()); err != nil {
		t.Errorf("PKCS #1 v1.5, 222-byte token: %v", err)
	}
}

// TestAuthUsersFile reads users files as iperf3 does.
func TestAuthUsersFile(t *testing.T) {
	h := PasswordHash("alice", "secret")
	got := parseUsers([]byte("#carol," + h + "\n\nno comma\nalice," + h + "\r\n" +
		"bob , " + strings.ToUpper(h) + " \n,,dave,,x,\nerin,\n"))
	want := []userEntry{{"alice", h}, {"bob", strings.ToUpper(h)}, {"dave", "x"}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(userEntry{})); diff != "" {
		t.Errorf("parseUsers (-want +got):\n%s", diff)
	}
	k, _ := authTestKeys(t)
	_, _, users := authFiles(t, k, "bob,"+strings.ToUpper(PasswordHash("bob", "pw"))+"\n")
	now := time.Now()
	tok, err := (&ClientAuth{User: "bob", Password: "pw", Key: &k.PublicKey}).Token(now)
	if err != nil {
		t.Fatal(err)
	}
	if err := (&ServerAuth{Key: k, UsersFile: users}).Check(tok, now); err != nil {
		t.Errorf("an upper-case hash: %v", err)
	}
}

// TestAuthKeyFiles: the key formats iperf3 and openssl write, and the
// wrong files with the fix.
func TestAuthKeyFiles(t *testing.T) {
	k, _ := authTestKeys(t)
	pkix, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(k)
	enc := func(typ string, b []byte, h map[string]string) []byte {
		return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b, Headers: h})
	}
	pubPKIX := enc("PUBLIC KEY", pkix, nil)
	pubPKCS1 := enc("RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(&k.PublicKey), nil)
	privPKCS1 := enc("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(k), nil)
	privPKCS8 := enc("PRIVATE KEY", pkcs8, nil)
	for name, b := range map[string][]byte{"PKIX": pubPKIX, "PKCS #1": pubPKCS1, "after other blocks": append(enc("CERTIFICATE REQUEST", []byte{1}, nil), pubPKIX...)} {
		got, err := ParsePublicKey(b)
		if err != nil || !got.Equal(&k.PublicKey) {
			t.Errorf("public key, %s: %v", name, err)
		}
	}
	for name, b := range map[string][]byte{"PKCS #1": privPKCS1, "PKCS #8": privPKCS8} {
		got, err := ParsePrivateKey(b)
		if err != nil || !got.Equal(k) {
			t.Errorf("private key, %s: %v", name, err)
		}
	}
	for _, tc := range []struct {
		name string
		b    []byte
		priv bool
		want string
	}{
		{"public: not PEM", []byte("hello"), false, "no PEM public key in it (want -----BEGIN PUBLIC KEY-----: openssl rsa -in private.pem -outform PEM -pubout -out public.pem)"},
		{"public: a private key", privPKCS8, false, "a private key: the client takes the server's public key (openssl rsa -in private.pem -outform PEM -pubout -out public.pem), the private one stays on the server"},
		{"public: bad DER", enc("PUBLIC KEY", []byte{1, 2}, nil), false, "bad public key: "},
		{"private: not PEM", nil, true, "no PEM private key in it (want -----BEGIN PRIVATE KEY----- or -----BEGIN RSA PRIVATE KEY-----: openssl genrsa -out private.pem 2048)"},
		{"private: a public key", pubPKIX, true, "a public key: the server needs the private one (the client takes the public key)"},
		{"private: encrypted", enc("RSA PRIVATE KEY", []byte{1}, map[string]string{"Proc-Type": "4,ENCRYPTED", "DEK-Info": "AES-128-CBC,00"}), true,
			"the private key is encrypted: blast cannot ask for its passphrase; write a plain copy with openssl rsa -in private.pem -out plain.pem (and keep it readable by the server only)"},
		{"private: PKCS #8 encrypted", enc("ENCRYPTED PRIVATE KEY", []byte{1}, nil), true, "the private key is encrypted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.priv {
				_, err = ParsePrivateKey(tc.b)
			} else {
				_, err = ParsePublicKey(tc.b)
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got %v, want %s", err, tc.want)
			}
		})
	}
	priv, _, users := authFiles(t, k, "")
	if _, err := ReadPrivateKey(priv + ".gone"); err == nil || !strings.HasPrefix(err.Error(), "--rsa-private-key-path: open ") {
		t.Errorf("ReadPrivateKey of no file: %v", err)
	}
	if _, err := ReadPublicKey(users); err == nil || err.Error() != "--rsa-public-key-path "+users+": no PEM public key in it (want -----BEGIN PUBLIC KEY-----: openssl rsa -in private.pem -outform PEM -pubout -out public.pem)" {
		t.Errorf("ReadPublicKey of a users file: %v", err)
	}
	s := &ServerAuth{Key: k, UsersFile: users + ".gone"}
	if err := s.Validate(); err == nil || !strings.HasPrefix(err.Error(), "--authorized-users-path "+users+".gone: cannot access authorized users file: open ") {
		t.Errorf("Validate, no users file: %v", err)
	}
}

// TestAuthOverControl: a blast server with authentication takes a blast
// client with the right credentials (either padding), refuses the others
// with IEAUTHTEST, and a server without ignores them.
func TestAuthOverControl(t *testing.T) {
	k, _ := authTestKeys(t)
	_, _, users := authFiles(t, k, authUsers())
	_, port, log := blastServer(t, ServerConfig{NoNIC: true, Auth: &ServerAuth{Key: k, UsersFile: users}})
	cases := []struct {
		name string
		auth *ClientAuth
		want string // the server's refusal; "" passes
	}{
		{"oaep", &ClientAuth{User: "alice", Password: "secret", Key: &k.PublicKey}, ""},
		{"pkcs1", &ClientAuth{User: "bob", Password: "hunter2", Key: &k.PublicKey, PKCS1: true}, ""},
		{"wrong password", &ClientAuth{User: "alice", Password: "hunter2", Key: &k.PublicKey}, `authentication failed: user "alice": unknown user or wrong password`},
		{"no credentials", nil, "authentication failed: the client sent no credentials (it needs --username and --rsa-public-key-path, and the password in IPERF3_PASSWORD)"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := runMay(t, Config{Port: port, Bytes: 1 << 20, NoNIC: true, Auth: tc.auth})
			res := log.wait(t, i+1)[i]
			if tc.want == "" {
				if err != nil || res.Err != nil {
					t.Fatalf("client: %v; server: %v", err, res.Err)
				}
				if s := sumsOf(r); s.upSent != 1<<20 || sumsOf(res).upRecv != 1<<20 {
					t.Errorf("sent %d, the server received %d; want %d", s.upSent, sumsOf(res).upRecv, 1<<20)
				}
				return
			}
			if ierrno(err) != wire.IEAuthTest || !strings.HasPrefix(err.Error(), "server error: test authorization failed") {
				t.Errorf("client: %v, want IEAUTHTEST", err)
			}
			if res.Err == nil || res.Err.Error() != tc.want {
				t.Errorf("server: %v, want %s", res.Err, tc.want)
			}
		})
	}
	// The token carries the client's clock, which the server holds
	// against its own: both fake here, 10 s apart passes, 11 s does not.
	t.Run("clock skew", func(t *testing.T) {
		for _, apart := range []time.Duration{10 * time.Second, 11 * time.Second} {
			srvClock, cliClock := clock.NewFake(), clock.NewFake()
			srvClock.Advance(apart)
			_, port, log := blastServer(t, ServerConfig{NoNIC: true, Auth: &ServerAuth{Key: k, UsersFile: users}, Clock: srvClock})
			_, err := runMay(t, Config{Port: port, Bytes: 1 << 20, NoNIC: true, Clock: cliClock,
				Auth: &ClientAuth{User: "alice", Password: "secret", Key: &k.PublicKey}})
			res := log.wait(t, 1)[0]
			if apart == 10*time.Second {
				if err != nil || res.Err != nil {
					t.Errorf("clocks 10 s apart: client: %v; server: %v", err, res.Err)
				}
				continue
			}
			want := fmt.Sprintf(`authentication failed: user "alice": the token's time (%d) is more than 10 s from the server's clock (%d): set both clocks right, or raise --time-skew-threshold`,
				clock.Epoch.Unix(), clock.Epoch.Add(apart).Unix())
			if ierrno(err) != wire.IEAuthTest {
				t.Errorf("clocks 11 s apart: client: %v, want IEAUTHTEST", err)
			}
			if res.Err == nil || res.Err.Error() != want {
				t.Errorf("clocks 11 s apart: server: %v, want %s", res.Err, want)
			}
		}
	})
	t.Run("server without authentication", func(t *testing.T) {
		_, port, _ := blastServer(t, ServerConfig{NoNIC: true})
		_, err := runMay(t, Config{Port: port, Bytes: 1 << 20, NoNIC: true, Auth: &ClientAuth{User: "alice", Password: "nope", Key: &k.PublicKey}})
		if err != nil {
			t.Errorf("a server without authentication refused a token: %v", err)
		}
	})
}

// FuzzAuthCredentials: the token text from the network never panics the
// parser, and what it reads makes the same text again.
func FuzzAuthCredentials(f *testing.F) {
	for _, s := range []string{"user: alice\npwd:  secret\nts:   1700000000", "user: \npwd:  \nts:   ", "user: a\npwd:  b\nts:   -1\nts:   2", "", "user: x"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		user, pwd, ts, err := parseCredentials(b)
		if err != nil {
			return
		}
		again := (&ClientAuth{User: user, Password: pwd}).text(ts)
		if u, p, ts2, err := parseCredentials([]byte(again)); err != nil || u != user || p != pwd || ts2 != ts {
			t.Errorf("%q: read %q %q %d, and its text %q reads %q %q %d %v", b, user, pwd, ts, again, u, p, ts2, err)
		}
	})
}

// FuzzAuthUsers: any users file parses, into entries with a user and a
// hash.
func FuzzAuthUsers(f *testing.F) {
	for _, s := range []string{authUsers(), "#x,y\n\n,,a,,b\r\nc,\n", "a,b,c\nd"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, e := range parseUsers(b) {
			if e.user == "" || e.hash == "" || strings.Contains(e.user, ",") {
				t.Errorf("%q: entry %+v", b, e)
			}
		}
	})
}
