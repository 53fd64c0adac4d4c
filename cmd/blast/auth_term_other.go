//go:build !linux

package main

import (
	"context"
	"io"
	"os"
)

// readPassword: blast asks for a password on Linux terminals only.
func readPassword(ctx context.Context, tty *os.File, prompt io.Writer) (string, error) {
	return "", errNoTerminal
}
