//go:build !linux

package main

import "io"

// isTerminal: progress lines are for Linux terminals only.
func isTerminal(io.Writer) bool { return false }
