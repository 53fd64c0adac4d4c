package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/blastnet/blast/control"
	"github.com/blastnet/blast/control/wire"
)

// iperf3's authentication flags: the server's (--rsa-private-key-path,
// --authorized-users-path, --time-skew-threshold) and the client's
// (--username, --rsa-public-key-path, the password of IPERF3_PASSWORD or a
// prompt); --use-pkcs1-padding on both.

// passwordEnv is where iperf3 (and blast) take the client's password from.
const passwordEnv = "IPERF3_PASSWORD"

// serverAuthFlags are the server's authentication flags.
type serverAuthFlags struct {
	fs         *pflag.FlagSet
	key, users string
	skew       int
	pkcs1      bool
}

// addServerAuthFlags adds the server's authentication flags to fs.
func addServerAuthFlags(fs *pflag.FlagSet) *serverAuthFlags {
	f := &serverAuthFlags{fs: fs}
	fs.StringVar(&f.key, "rsa-private-key-path", "", "authenticate clients: the RSA private key `FILE` (PEM, PKCS #1 or PKCS #8: openssl genrsa -out private.pem 2048) that decrypts their credentials")
	fs.StringVar(&f.users, "authorized-users-path", "", "authenticate clients: the `FILE` of user,sha256 lines, the hash of \"{user}password\" (echo -n \"{mario}rossi\" | sha256sum); read for every test")
	fs.IntVar(&f.skew, "time-skew-threshold", int(control.DefaultSkew/time.Second), "`SECS` a client's clock may be off from the server's")
	fs.BoolVar(&f.pkcs1, "use-pkcs1-padding", false, "accepted for iperf3's command lines: the server takes credentials padded with OAEP (iperf3 3.17+, blast) and PKCS #1 v1.5 (iperf3 up to 3.16, --use-pkcs1-padding) alike")
	return f
}

// config is the server's authentication: nil without the flags, an error
// (a usage error) naming the cause and the fix.
func (f *serverAuthFlags) config() (*control.ServerAuth, error) {
	if f.fs.Changed("time-skew-threshold") && f.skew <= 0 {
		return nil, fmt.Errorf("--time-skew-threshold %d: skew threshold must be a positive number of seconds", f.skew)
	}
	if f.skew > wire.MaxTime { // time.Duration would overflow
		return nil, fmt.Errorf("--time-skew-threshold %d: skew threshold must be 1 to %d seconds", f.skew, wire.MaxTime)
	}
	switch {
	case f.key == "" && f.users == "":
		return nil, nil
	case f.key == "" || f.users == "":
		return nil, errors.New("--rsa-private-key-path and --authorized-users-path go together: you must specify a path to a valid RSA private key and a user credential file")
	}
	k, err := control.ReadPrivateKey(f.key)
	if err != nil {
		return nil, err
	}
	a := &control.ServerAuth{Key: k, UsersFile: f.users, Skew: time.Duration(f.skew) * time.Second}
	if err := a.Validate(); err != nil {
		return nil, err
	}
	return a, nil
}

// clientAuthFlags are the client's authentication flags.
type clientAuthFlags struct {
	fs        *pflag.FlagSet
	user, key string
	pkcs1     bool
	// Without IPERF3_PASSWORD (lookupEnv), the password is asked on
	// stdin, a terminal, after a prompt (standard error).
	stdin      *os.File
	prompt     io.Writer
	lookupEnv  func(string) (string, bool)
	readPasswd func(ctx context.Context, tty *os.File, prompt io.Writer) (string, error)
}

// addClientAuthFlags adds the client's authentication flags to fs.
func addClientAuthFlags(fs *pflag.FlagSet) *clientAuthFlags {
	f := &clientAuthFlags{fs: fs, stdin: os.Stdin, prompt: os.Stderr, lookupEnv: os.LookupEnv, readPasswd: readPassword}
	fs.StringVar(&f.user, "username", "", "authenticate as `USER` to a server that asks (iperf3's --authorized-users-path); the password comes from IPERF3_PASSWORD, or is asked on the terminal")
	fs.StringVar(&f.key, "rsa-public-key-path", "", "the server's RSA public key `FILE` (PEM, -----BEGIN PUBLIC KEY-----: openssl rsa -in private.pem -outform PEM -pubout) to encrypt the credentials with")
	fs.BoolVar(&f.pkcs1, "use-pkcs1-padding", false, "pad the credentials with PKCS #1 v1.5, as iperf3 servers up to 3.16 (Debian 12's 3.12) need; the default is OAEP, as iperf3 3.17+ (a blast server takes both)")
	return f
}

// config is the client's credentials: nil without the flags, an error (a
// usage error) naming the cause and the fix. It asks for the password when
// IPERF3_PASSWORD is not set.
func (f *clientAuthFlags) config(ctx context.Context) (*control.ClientAuth, error) {
	switch {
	case f.user == "" && f.key == "":
		return nil, nil
	case f.user == "":
		return nil, errors.New("--rsa-public-key-path without --username: you must specify a username, password, and path to a valid RSA public key")
	case f.key == "":
		return nil, errors.New("--username without --rsa-public-key-path: you must specify a username, password, and path to a valid RSA public key (the server's public key file)")
	}
	k, err := control.ReadPublicKey(f.key)
	if err != nil {
		return nil, err
	}
	a := &control.ClientAuth{User: f.user, Key: k, PKCS1: f.pkcs1}
	if err := a.Validate(); err != nil {
		return nil, err
	}
	pwd, ok := f.lookupEnv(passwordEnv)
	if !ok {
		if pwd, err = f.readPasswd(ctx, f.stdin, f.prompt); err != nil {
			return nil, fmt.Errorf("--username %s: no password: %v", f.user, err)
		}
	}
	a.Password = pwd
	if err := a.Validate(); err != nil {
		return nil, err
	}
	return a, nil
}

// errNoTerminal: the password cannot be asked for.
var errNoTerminal = errors.New("set " + passwordEnv + ", or run blast on a terminal to be asked for it (standard input is not one)")

// readLine reads a line of at most 4 KiB, byte by byte (nothing past the
// line is taken from r), without its \n or \r\n.
func readLine(r io.Reader) (string, error) {
	var line []byte
	var b [1]byte
	for len(line) < 4096 {
		n, err := r.Read(b[:])
		if n == 1 {
			if b[0] == '\n' {
				break
			}
			line = append(line, b[0])
			continue
		}
		if err == io.EOF {
			if len(line) == 0 {
				return "", errors.New("end of input before the password")
			}
			break
		}
		if err != nil {
			return "", err
		}
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return string(line), nil
}
