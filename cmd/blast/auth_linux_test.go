package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: the master side (what a terminal
// emulator holds) and the terminal a program reads.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// typist types into the terminal when the prompt is written.
type typist struct {
	master *os.File
	keys   string
	out    strings.Builder
}

func (p *typist) Write(b []byte) (int, error) {
	p.out.Write(b)
	if strings.Contains(p.out.String(), "Password: ") && p.keys != "" {
		p.master.WriteString(p.keys)
		p.keys = ""
	}
	return len(b), nil
}

// interrupter cancels its context when the prompt is written.
type interrupter struct {
	cancel context.CancelFunc
	out    strings.Builder
}

func (p *interrupter) Write(b []byte) (int, error) {
	p.out.Write(b)
	if strings.Contains(p.out.String(), "Password: ") {
		p.cancel()
	}
	return len(b), nil
}

// TestAuthPasswordPrompt: without IPERF3_PASSWORD the password is read
// from the terminal with its echo off, and the terminal is left as it
// was; Ctrl-C (the context) ends the wait.
func TestAuthPasswordPrompt(t *testing.T) {
	master, tty := openPTY(t)
	p := &typist{master: master, keys: "rossi\r"}
	pwd, err := readPassword(context.Background(), tty, p)
	if err != nil || pwd != "rossi" {
		t.Fatalf("read %q, %v; want rossi", pwd, err)
	}
	if got := p.out.String(); got != "Password: \n" {
		t.Errorf("prompt %q", got)
	}
	// What the terminal showed, up to a mark written after: not the
	// password.
	tty.WriteString("END\n")
	var shown []byte
	for !strings.Contains(string(shown), "END") {
		b := make([]byte, 256)
		n, err := master.Read(b)
		if err != nil {
			t.Fatal(err)
		}
		shown = append(shown, b[:n]...)
	}
	if strings.Contains(string(shown), "rossi") {
		t.Errorf("the password was echoed: %q", shown)
	}
	tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil || tio.Lflag&unix.ECHO == 0 {
		t.Errorf("echo not turned back on: %v", err)
	}

	// Ctrl-C once the prompt is out: the reader waits at it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := readPassword(ctx, tty, &interrupter{cancel: cancel}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled at the prompt: %v", err)
	}
	if tio, _ := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS); tio == nil || tio.Lflag&unix.ECHO == 0 {
		t.Error("echo not turned back on after the interrupt")
	}
}
