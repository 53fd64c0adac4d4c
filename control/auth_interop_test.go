package control

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/control/wire"
)

// Authentication against Debian's iperf3 (3.12, which pads with PKCS #1
// v1.5 only) on loopback, both ways; with BLAST_IPERF3 a 3.17 or later
// (OAEP by default) is tested as such.

// iperf3Minor is the minor version of iperf3 3.x at bin (12 for 3.12).
func iperf3Minor(t *testing.T, bin string) int {
	t.Helper()
	out, _ := exec.Command(bin, "--version").CombinedOutput()
	m := regexp.MustCompile(`iperf 3\.(\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("%s --version: %q", bin, out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// iperf3Auth runs `iperf3 -c 127.0.0.1 -p port args` with IPERF3_PASSWORD
// set to password (unset when it is "") and no terminal: it returns what
// iperf3 printed and how it exited.
func iperf3Auth(t *testing.T, port int, password string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, needIperf3(t), append([]string{"-c", "127.0.0.1", "-p", strconv.Itoa(port)}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "IPERF3_PASSWORD=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if password != "" {
		cmd.Env = append(cmd.Env, "IPERF3_PASSWORD="+password)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestAuthIperf3ClientAgainstBlastServer: iperf3 -c --username
// --rsa-public-key-path with IPERF3_PASSWORD against a blast server with
// --rsa-private-key-path and --authorized-users-path.
func TestAuthIperf3ClientAgainstBlastServer(t *testing.T) {
	bin := needIperf3(t)
	k, _ := authTestKeys(t)
	_, pub, users := authFiles(t, k, authUsers())
	_, port, log := blastServer(t, ServerConfig{Interval: time.Second, Auth: &ServerAuth{Key: k, UsersFile: users}})
	creds := []string{"--username", "alice", "--rsa-public-key-path", pub}
	type tc struct {
		name     string
		password string
		args     []string
		want     string // the server's refusal; "" passes
	}
	cases := []tc{
		{"right", "secret", append([]string{"-J", "-n", "20M"}, creds...), ""},
		{"wrong password", "Secret", append([]string{"-n", "1M"}, creds...), `authentication failed: user "alice": unknown user or wrong password`},
		{"unknown user", "secret", []string{"-n", "1M", "--username", "mallory", "--rsa-public-key-path", pub}, `authentication failed: user "mallory": unknown user or wrong password`},
		{"no credentials", "", []string{"-n", "1M"}, "authentication failed: the client sent no credentials (it needs --username and --rsa-public-key-path, and the password in IPERF3_PASSWORD)"},
	}
	if iperf3Minor(t, bin) >= 17 {
		cases = append(cases, tc{"right, pkcs1", "secret", append([]string{"-J", "-n", "20M", "--use-pkcs1-padding"}, creds...), ""})
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := iperf3Auth(t, port, tc.password, tc.args...)
			res := log.wait(t, i+1)[i]
			if tc.want != "" {
				if err == nil || !strings.Contains(out, "iperf3: error - test authorization failed") {
					t.Errorf("iperf3: %v, want it to fail with its IEAUTHTEST text:\n%s", err, out)
				}
				if res.Err == nil || res.Err.Error() != tc.want {
					t.Errorf("server: %v, want %s", res.Err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("iperf3: %v\n%s", err, out)
			}
			if res.Err != nil {
				t.Fatalf("server: %v", res.Err)
			}
			cli := parseIperfJSON(t, []byte(out))
			s := sumsOf(res)
			if cli.End.SumReceived == nil || cli.End.SumReceived.Bytes != 20<<20 || s.upRecv != 20<<20 || s.upSent != 20<<20 {
				t.Errorf("iperf3 says %v received; the server counted %d sent, %d received; want %d", cli.End.SumReceived, s.upSent, s.upRecv, 20<<20)
			}
		})
	}
}

// TestAuthBlastClientAgainstIperf3Server: a blast client with credentials
// against iperf3 -s --rsa-private-key-path --authorized-users-path.
func TestAuthBlastClientAgainstIperf3Server(t *testing.T) {
	bin := needIperf3(t)
	k, _ := authTestKeys(t)
	priv, _, users := authFiles(t, k, authUsers())
	// iperf3 before 3.17 decrypts PKCS #1 v1.5 only; 3.17 and later OAEP
	// by default.
	oldPadding := iperf3Minor(t, bin) < 17
	server := func() (int, func() []byte) {
		return iperf3ServerArgs(t, "127.0.0.1", "--rsa-private-key-path", priv, "--authorized-users-path", users)
	}
	t.Run("right", func(t *testing.T) {
		port, wait := server()
		r := runClient(t, Config{Port: port, Bytes: 20 << 20, Auth: &ClientAuth{User: "bob", Password: "hunter2", Key: &k.PublicKey, PKCS1: oldPadding}})
		srv := parseIperfJSON(t, wait())
		s := sumsOf(r)
		if srv.End.SumReceived == nil || srv.End.SumReceived.Bytes != 20<<20 || s.upSent != 20<<20 || s.upRecv != 20<<20 {
			t.Errorf("iperf3 says %v received; blast counted %d sent, %d received; want %d", srv.End.SumReceived, s.upSent, s.upRecv, 20<<20)
		}
	})
	refused := []struct {
		name string
		auth *ClientAuth
	}{
		{"wrong password", &ClientAuth{User: "bob", Password: "hunter3", Key: &k.PublicKey, PKCS1: oldPadding}},
		{"unknown user", &ClientAuth{User: "eve", Password: "hunter2", Key: &k.PublicKey, PKCS1: oldPadding}},
		{"no credentials", nil},
	}
	if oldPadding {
		// Why --use-pkcs1-padding: an OAEP token does not decrypt there.
		refused = append(refused, struct {
			name string
			auth *ClientAuth
		}{"oaep", &ClientAuth{User: "bob", Password: "hunter2", Key: &k.PublicKey}})
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			port, _ := server()
			_, err := runMay(t, Config{Port: port, Bytes: 1 << 20, Auth: tc.auth})
			if ierrno(err) != wire.IEAuthTest || !strings.HasPrefix(err.Error(), "server error: test authorization failed") {
				t.Errorf("client: %v, want iperf3's IEAUTHTEST", err)
			}
		})
	}
}
