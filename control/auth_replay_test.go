package control

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/internal/clock"
)

// TestAuthReplay: a token that passed is refused the second time while
// its time is within the skew window, whatever its base64 looks like;
// after the window the skew check refuses it, and a new token passes. Two
// tokens of the same credentials and second are two tokens.
func TestAuthReplay(t *testing.T) {
	k, _ := authTestKeys(t)
	_, _, users := authFiles(t, k, authUsers())
	now := time.Unix(1700000000, 0)
	c := &ClientAuth{User: "alice", Password: "secret", Key: &k.PublicKey}
	token := func(at time.Time) string {
		tok, err := c.Token(at)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	s := &ServerAuth{Key: k, UsersFile: users}
	tok := token(now)
	if err := s.Check(tok, now); err != nil {
		t.Fatalf("first use: %v", err)
	}
	replay := `authentication failed: user "alice": the token was used for a test already: a client makes a new one for every test, so this is a copy (a replay?)`
	for _, again := range []struct {
		tok string
		at  time.Time
	}{
		{tok, now},
		{tok, now.Add(10 * time.Second)}, // the window's last second
		{tok[:20] + "\n" + tok[20:], now.Add(5 * time.Second)}, // the same ciphertext, written otherwise
	} {
		if err := s.Check(again.tok, again.at); err == nil || err.Error() != replay || !errors.Is(err, ErrAuth) {
			t.Errorf("replayed at +%v: %v, want %s", again.at.Sub(now), err, replay)
		}
	}
	if err := s.Check(token(now), now); err != nil {
		t.Errorf("a second token of the same second: %v", err)
	}
	later := now.Add(11 * time.Second)
	skew := fmt.Sprintf(`authentication failed: user "alice": the token's time (%d) is more than 10 s from the server's clock (%d)`, now.Unix(), later.Unix())
	if err := s.Check(tok, later); err == nil || !strings.HasPrefix(err.Error(), skew) {
		t.Errorf("replayed after the window: %v, want %s...", err, skew)
	}
	if err := s.Check(token(later), later); err != nil {
		t.Errorf("a new token after the window: %v", err)
	}
	// The tokens of the first second are forgotten once out of the window.
	s.used.mu.Lock()
	n := len(s.used.until)
	s.used.mu.Unlock()
	if n != 1 {
		t.Errorf("the server remembers %d tokens, want 1 (the one still in the window)", n)
	}
}

// TestAuthUsedTokensBounded: the memory of used tokens holds at most
// maxUsedTokens; a new token past it is refused (never forgetting one
// still in the window, which would let its copy pass) until the oldest
// leave the window, and then they are forgotten.
func TestAuthUsedTokensBounded(t *testing.T) {
	var u usedTokens
	const now = 1000
	for i := range maxUsedTokens {
		// Half good until now+10, half until now+20.
		if err := u.take([]byte(fmt.Sprint("ct", i)), now+10+int64(i%2)*10, now); err != nil {
			t.Fatalf("token %d: %v", i, err)
		}
	}
	if err := u.take([]byte("one more"), now+10, now+5); err == nil || !strings.Contains(err.Error(), "remembers 65536 tokens") {
		t.Fatalf("past the bound: %v", err)
	}
	if err := u.take([]byte("ct0"), now+10, now+10); err == nil || !strings.Contains(err.Error(), "used for a test already") {
		t.Errorf("a copy while full: %v", err)
	}
	if err := u.take([]byte("one more"), now+21, now+11); err != nil {
		t.Errorf("once half left the window: %v", err)
	}
	if n := len(u.until); n != maxUsedTokens/2+1 {
		t.Errorf("remembers %d, want %d", n, maxUsedTokens/2+1)
	}
	if err := u.take([]byte("ct0"), now+21, now+11); err != nil {
		t.Errorf("a token out of its window is forgotten: %v", err)
	}
}

// TestAuthReplayOverControl: a token copied from a blast client's test
// (from the network, or a -d log of old) is refused with IEAUTHTEST
// while the server's clock is within its window, and on skew after it;
// the client's next test, with a new token, passes. Neither side's -d
// output holds a token.
func TestAuthReplayOverControl(t *testing.T) {
	k, _ := authTestKeys(t)
	_, _, users := authFiles(t, k, authUsers())
	srvClock, cliClock := clock.NewFake(), clock.NewFake()
	var traceMu sync.Mutex
	var trace strings.Builder
	_, port, log := blastServer(t, ServerConfig{NoNIC: true, Auth: &ServerAuth{Key: k, UsersFile: users}, Clock: srvClock,
		Trace: func(_ *result.Result, line string) {
			traceMu.Lock()
			defer traceMu.Unlock()
			trace.WriteString(line + "\n")
		}})
	auth := &ClientAuth{User: "alice", Password: "secret", Key: &k.PublicKey}
	var debug bytes.Buffer
	if _, err := runMay(t, Config{Port: port, Bytes: 1 << 20, Clock: cliClock, Auth: auth, Debug: &debug, DebugLevel: 4}); err != nil {
		t.Fatal(err)
	}
	first := log.wait(t, 1)[0]
	tok := first.Params.AuthToken
	if first.Err != nil || len(tok) < 300 {
		t.Fatalf("first test: %v, token %q", first.Err, tok)
	}
	replay := func(i int, want string) {
		t.Helper()
		rc := dialRaw(t, port)
		rc.expect(wire.ParamExchange)
		if err := wire.WriteJSON(rc.ctrl, map[string]any{"tcp": true, "parallel": 1, "num": 1 << 20, "authtoken": tok, "client_version": "3.12"}); err != nil {
			t.Fatal(err)
		}
		if s, err := wire.ReadState(rc.ctrl); err != nil || s != wire.ServerError {
			t.Fatalf("replay: state %v, %v; want SERVER_ERROR", s, err)
		}
		var se wire.ServerErrorCode
		if err := wire.ReadServerError(rc.ctrl); !errors.As(err, &se) || se.Ierrno != wire.IEAuthTest {
			t.Errorf("replay: %v, want IEAUTHTEST", err)
		}
		if r := log.wait(t, i+1)[i]; r.Err == nil || !strings.Contains(r.Err.Error(), want) {
			t.Errorf("replay: server: %v, want %q", r.Err, want)
		}
	}
	replay(1, "the token was used for a test already")
	srvClock.Advance(11 * time.Second)
	replay(2, "is more than 10 s from the server's clock")
	cliClock.Advance(11 * time.Second)
	if _, err := runMay(t, Config{Port: port, Bytes: 1 << 20, Clock: cliClock, Auth: auth}); err != nil {
		t.Errorf("a new token after the window: %v", err)
	}
	if r := log.wait(t, 4)[3]; r.Err != nil {
		t.Errorf("a new token after the window: server: %v", r.Err)
	}
	traceMu.Lock()
	defer traceMu.Unlock()
	for name, out := range map[string]string{"server": trace.String(), "client": debug.String()} {
		switch {
		case !strings.Contains(out, `"authtoken":`) && !strings.Contains(out, `"authtoken": `):
			t.Errorf("%s -d: no authtoken line at all:\n%s", name, out)
		case strings.Contains(out, tok[:40]):
			t.Errorf("%s -d holds the token:\n%s", name, out)
		case !strings.Contains(out, redactedToken):
			t.Errorf("%s -d: no %q where the token was", name, redactedToken)
		}
	}
}

// TestRedactToken: the token is hidden in any frame the server reads,
// whatever the key's case and however often it comes, and the rest of
// the frame is as sent.
func TestRedactToken(t *testing.T) {
	for in, want := range map[string]string{
		`{"tcp":true,"authtoken":"SECRET","time":1}`:           `{"tcp":true,"authtoken":"(not shown)","time":1}`,
		`{"authtoken" : "SECRET", "AuthToken":"SECRET2"}`:      `{"authtoken":"(not shown)", "AuthToken":"(not shown)"}`,
		`{"tcp":true,"title":"authtoken","blast":{"a":[1,2]}}`: `{"tcp":true,"title":"authtoken","blast":{"a":[1,2]}}`,
		`{"tcp":true}`:                    `{"tcp":true}`,
		`{"authtoken":"SECRET"`:           "(21 bytes, not JSON; not shown as they may hold a token)",
		`{"tcp":true} "authtoken"`:        "(24 bytes, not JSON; not shown as they may hold a token)",
		`{"tcp":true,"authtoken":SECRET}`: "(31 bytes, not JSON; not shown as they may hold a token)",
		`not json`:                        `not json`,
	} {
		if got := string(redactToken([]byte(in))); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}
