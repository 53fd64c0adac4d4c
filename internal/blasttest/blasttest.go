// Package blasttest serves the tests that run blast as separate processes
// (both ends of a lab, the demo, compare HOST): it builds the binary once
// per test binary and runs processes in lab hosts with their output
// captured and their end awaited within a bound.
package blasttest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/netlab"
)

// Bin is the blast binary Main built; a "ttcp" link to it sits beside it.
var Bin string

// BinEnv names the environment variable that hands the tests a blast
// binary built beforehand (a "ttcp" link beside it): `make test` builds
// blast once for the whole run and sets it, so that no package builds its
// own.
const BinEnv = "BLAST_TEST_BIN"

// Main builds blast, runs the tests and removes the build. Call it from
// TestMain; with rootOnly it builds only as root (the tests that need the
// binary are lab tests, which skip otherwise). When BinEnv names a binary,
// the tests use that one and nothing is built.
func Main(m *testing.M, rootOnly bool) {
	os.Exit(func() int {
		if rootOnly && os.Geteuid() != 0 {
			return m.Run()
		}
		if b := os.Getenv(BinEnv); b != "" {
			if _, err := os.Stat(filepath.Join(filepath.Dir(b), "ttcp")); err != nil {
				fmt.Fprintf(os.Stderr, "%s=%s: want the blast binary with a ttcp link beside it: %v\n", BinEnv, b, err)
				return 1
			}
			Bin = b
			return m.Run()
		}
		dir, err := os.MkdirTemp("", "blast-test")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		if Bin, err = Build(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}())
}

// Build builds blast into dir, with a ttcp link beside it, and returns the
// binary's path. It builds in blast's own module, with blast's go.mod, also
// for a test of another module that uses this checkout (deploy's), so the
// binary under test is the one make build ships.
func Build(dir string) (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/blastnet/blast").Output()
	if err != nil {
		return "", fmt.Errorf("build blast: find its module: %w", err)
	}
	bin := filepath.Join(dir, "blast")
	build := exec.Command("go", "build", "-o", bin, "./cmd/blast")
	build.Dir = strings.TrimSpace(string(out))
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build blast: %v\n%s", err, out)
	}
	if err := os.Symlink("blast", filepath.Join(dir, "ttcp")); err != nil {
		return "", err
	}
	return bin, nil
}

// Proc is a process in a lab host, with its output.
type Proc struct {
	Cmd            *netlab.Cmd
	Stdout, Stderr bytes.Buffer
	done           chan error
}

// Start runs name with args in h, feeding it stdin when not nil. The
// process is killed when the test ends, if it still runs then.
func Start(tb testing.TB, h *netlab.Host, stdin []byte, name string, args ...string) *Proc {
	tb.Helper()
	p := &Proc{Cmd: h.Command(name, args...), done: make(chan error, 1)}
	p.Cmd.Stdout, p.Cmd.Stderr = &p.Stdout, &p.Stderr
	if stdin != nil {
		p.Cmd.Stdin = bytes.NewReader(stdin)
	}
	if err := p.Cmd.Start(); err != nil {
		tb.Fatalf("start %s %v: %v", name, args, err)
	}
	go func() { p.done <- p.Cmd.Wait() }()
	tb.Cleanup(func() {
		p.Cmd.Process.Kill()
		<-p.done
	})
	return p
}

// Listening starts name in h like Start, then waits until it has a socket
// bound to port ("tcp": listening; "udp": bound).
func Listening(tb testing.TB, h *netlab.Host, network string, port int, name string, args ...string) *Proc {
	tb.Helper()
	p := Start(tb, h, nil, name, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := netlab.WaitPort(ctx, p.Cmd.Process.Pid, network, port); err != nil {
		tb.Fatalf("%v\nstderr: %s", err, p.Stderr.String())
	}
	return p
}

// Wait waits up to a minute for the process to exit and fails the test if
// it fails or hangs.
func (p *Proc) Wait(tb testing.TB) {
	tb.Helper()
	if err := p.WaitErr(time.Minute); err != nil {
		tb.Fatalf("%v: %v\nstdout: %s\nstderr: %s", p.Cmd.Args, err, p.Stdout.String(), p.Stderr.String())
	}
}

// WaitErr waits up to d for the process to exit and returns how it ended
// (an error too when it still ran after d; it is killed then).
func (p *Proc) WaitErr(d time.Duration) error {
	select {
	case err := <-p.done:
		p.done <- err // later waits, and the cleanup, see it too
		return err
	case <-time.After(d):
		p.Cmd.Process.Kill()
		return fmt.Errorf("still running after %v", d)
	}
}
