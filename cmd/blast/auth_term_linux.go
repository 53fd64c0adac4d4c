package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// readPassword asks for the password on the terminal tty, with its echo
// off (as iperf3's iperf_getpass), and gives the terminal back as it was.
// A cancelled ctx (Ctrl-C) ends the wait.
func readPassword(ctx context.Context, tty *os.File, prompt io.Writer) (string, error) {
	fd := int(tty.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return "", errNoTerminal
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	quiet.Lflag |= unix.ICANON
	if err := unix.IoctlSetTermios(fd, unix.TCSETSF, &quiet); err != nil {
		return "", fmt.Errorf("turn the terminal's echo off: %w", err)
	}
	defer unix.IoctlSetTermios(fd, unix.TCSETS, old)
	fmt.Fprint(prompt, "Password: ")
	defer fmt.Fprintln(prompt) // the Enter that was not echoed
	type line struct {
		s   string
		err error
	}
	got := make(chan line, 1)
	go func() {
		s, err := readLine(tty)
		got <- line{s, err}
	}()
	select {
	case l := <-got:
		return l.s, l.err
	case <-ctx.Done():
		return "", fmt.Errorf("interrupted at the prompt: %w", ctx.Err())
	}
}
