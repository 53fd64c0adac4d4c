package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/blastnet/blast/control"
)

// The authentication flags of blast client and blast server: errors with
// the cause and the fix (exit status 2), and a test between the two
// commands. Keys are made when the tests run.

var (
	cliKeyOnce sync.Once
	cliKey     *rsa.PrivateKey
	cliKeyErr  error
)

// authKeyFiles writes a test key pair (PKCS #8 private key, "PUBLIC KEY"
// public key) and a users file with mario / rossi, as iperf3's manual
// page has it.
func authKeyFiles(t *testing.T) (priv, pub, users string) {
	t.Helper()
	cliKeyOnce.Do(func() { cliKey, cliKeyErr = rsa.GenerateKey(rand.Reader, 2048) })
	if cliKeyErr != nil {
		t.Fatal(cliKeyErr)
	}
	p8, err := x509.MarshalPKCS8PrivateKey(cliKey)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := x509.MarshalPKIXPublicKey(&cliKey.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	priv, pub, users = filepath.Join(dir, "private.pem"), filepath.Join(dir, "public.pem"), filepath.Join(dir, "users.csv")
	for path, b := range map[string][]byte{
		priv:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8}),
		pub:   pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pk}),
		users: []byte("mario,bf7a49a846d44b454a5d11e7acfaf13d138bbe0b7483aa3e050879700572709b\n"),
	} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return priv, pub, users
}

// TestAuthServerFlagErrors: a server whose authentication cannot work
// does not start: one line with the cause and the fix, exit status 2.
func TestAuthServerFlagErrors(t *testing.T) {
	priv, pub, users := authKeyFiles(t)
	gone := filepath.Join(t.TempDir(), "gone")
	for _, tc := range []struct {
		name string
		args []string
		want string // the whole line, after "blast server: "
	}{
		{"key alone", []string{"--rsa-private-key-path", priv},
			"--rsa-private-key-path and --authorized-users-path go together: you must specify a path to a valid RSA private key and a user credential file"},
		{"users alone", []string{"--authorized-users-path", users},
			"--rsa-private-key-path and --authorized-users-path go together: you must specify a path to a valid RSA private key and a user credential file"},
		{"no key file", []string{"--rsa-private-key-path", gone, "--authorized-users-path", users},
			"--rsa-private-key-path: open " + gone + ": no such file or directory"},
		{"not a key", []string{"--rsa-private-key-path", users, "--authorized-users-path", users},
			"--rsa-private-key-path " + users + ": no PEM private key in it (want -----BEGIN PRIVATE KEY----- or -----BEGIN RSA PRIVATE KEY-----: openssl genrsa -out private.pem 2048)"},
		{"the public key", []string{"--rsa-private-key-path", pub, "--authorized-users-path", users},
			"--rsa-private-key-path " + pub + ": a public key: the server needs the private one (the client takes the public key)"},
		{"no users file", []string{"--rsa-private-key-path", priv, "--authorized-users-path", gone},
			"--authorized-users-path " + gone + ": cannot access authorized users file: open " + gone + ": no such file or directory"},
		{"users file a directory", []string{"--rsa-private-key-path", priv, "--authorized-users-path", filepath.Dir(users)},
			"--authorized-users-path " + filepath.Dir(users) + ": cannot access authorized users file: read " + filepath.Dir(users) + ": is a directory"},
		{"skew 0", []string{"--rsa-private-key-path", priv, "--authorized-users-path", users, "--time-skew-threshold", "0"},
			"--time-skew-threshold 0: skew threshold must be a positive number of seconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := serverRun(t, context.Background(), nil, append([]string{"-B", "127.0.0.1", "-p", "0"}, tc.args...)...)
			if want := "blast server: " + tc.want + "\n"; code != exitUsage || stdout != "" || stderr != want {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and %q", code, stdout, stderr, want)
			}
		})
	}
}

// TestAuthClientFlagErrors: credentials that cannot work stop the client
// before it connects: one line, exit status 2.
func TestAuthClientFlagErrors(t *testing.T) {
	priv, pub, _ := authKeyFiles(t)
	t.Setenv("IPERF3_PASSWORD", "rossi")
	gone := filepath.Join(t.TempDir(), "gone.pem")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"user alone", []string{"--username", "mario"},
			"--username without --rsa-public-key-path: you must specify a username, password, and path to a valid RSA public key (the server's public key file)"},
		{"key alone", []string{"--rsa-public-key-path", pub},
			"--rsa-public-key-path without --username: you must specify a username, password, and path to a valid RSA public key"},
		{"no key file", []string{"--username", "mario", "--rsa-public-key-path", gone},
			"--rsa-public-key-path: open " + gone + ": no such file or directory"},
		{"the private key", []string{"--username", "mario", "--rsa-public-key-path", priv},
			"--rsa-public-key-path " + priv + ": a private key: the client takes the server's public key (openssl rsa -in private.pem -outform PEM -pubout -out public.pem), the private one stays on the server"},
		{"user with a comma", []string{"--username", "mario,luigi", "--rsa-public-key-path", pub},
			`--username "mario,luigi": a user name cannot hold a comma or white space (the server reads it up to the first)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runArgs(t, "blast", append([]string{"client", "127.0.0.1", "-p", "9"}, tc.args...)...)
			if want := "blast client: " + tc.want + "\n"; code != exitUsage || stdout != "" || stderr != want {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and %q", code, stdout, stderr, want)
			}
		})
	}
}

// TestAuthClientPassword: IPERF3_PASSWORD, else the prompt, else an
// error that says how to give one.
func TestAuthClientPassword(t *testing.T) {
	_, pub, _ := authKeyFiles(t)
	parse := func(env map[string]string, stdin *os.File) (*control.ClientAuth, error) {
		f := newClientFlags()
		f.auth.lookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
		f.auth.stdin = stdin
		if err := f.fs.Parse([]string{"127.0.0.1", "--username", "mario", "--rsa-public-key-path", pub, "--use-pkcs1-padding"}); err != nil {
			t.Fatal(err)
		}
		cfg, _, err := f.config(context.Background())
		return cfg.Auth, err
	}
	a, err := parse(map[string]string{"IPERF3_PASSWORD": "rossi"}, nil)
	if err != nil || a.User != "mario" || a.Password != "rossi" || !a.PKCS1 || a.Key == nil {
		t.Errorf("from IPERF3_PASSWORD: %+v, %v", a, err)
	}
	// Set and empty is a password, as in iperf3.
	if a, err := parse(map[string]string{"IPERF3_PASSWORD": ""}, nil); err != nil || a.Password != "" {
		t.Errorf("empty IPERF3_PASSWORD: %+v, %v", a, err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w.WriteString("rossi\n")
	w.Close()
	_, err = parse(nil, r)
	if want := "--username mario: no password: set IPERF3_PASSWORD, or run blast on a terminal to be asked for it (standard input is not one)"; err == nil || err.Error() != want {
		t.Errorf("no IPERF3_PASSWORD, standard input a pipe: %v, want %s", err, want)
	}
}

// TestAuthCommands: blast client against blast server, both with
// iperf3's authentication flags.
func TestAuthCommands(t *testing.T) {
	priv, pub, users := authKeyFiles(t)
	s := startServer(t, 0, "--rsa-private-key-path", priv, "--authorized-users-path", users, "--time-skew-threshold", "5")
	cli := func(password string, args ...string) (int, string, string) {
		t.Setenv("IPERF3_PASSWORD", password)
		return runArgs(t, "blast", append([]string{"client", "127.0.0.1", "-p", strconv.Itoa(s.port), "-n", "1M", "--username", "mario", "--rsa-public-key-path", pub}, args...)...)
	}
	for _, args := range [][]string{nil, {"--use-pkcs1-padding"}} {
		if code, stdout, stderr := cli("rossi", args...); code != exitOK || !strings.Contains(stdout, "iperf Done.") {
			t.Errorf("right password %v: exit %d\n%s%s", args, code, stdout, stderr)
		}
	}
	code, _, stderr := cli("luigi")
	if want := "blast client: server error: test authorization failed"; code != exitFailure || !strings.HasPrefix(stderr, want) || strings.Count(stderr, "\n") != 1 {
		t.Errorf("wrong password: exit %d, stderr %q; want 1 and a line %q...", code, stderr, want)
	}
	// The help lists the flags.
	for cmd, flags := range map[string][]string{
		"client": {"--username USER", "--rsa-public-key-path FILE", "--use-pkcs1-padding"},
		"server": {"--rsa-private-key-path FILE", "--authorized-users-path FILE", "--time-skew-threshold SECS", "--use-pkcs1-padding"},
	} {
		_, help, _ := runArgs(t, "blast", "help", cmd)
		for _, f := range flags {
			if !strings.Contains(help, f) {
				t.Errorf("blast help %s does not list %s", cmd, f)
			}
		}
	}
}
