package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// A pidfile is iperf3's -I: this process's id in a file while it runs,
// without a newline, as iperf3 writes it.

// checkPidfile refuses a pidfile that names another running process; a
// stale one (its process is gone) is taken over later.
func checkPidfile(path string) error {
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("-I %s: %w", path, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return nil
	}
	if err := syscall.Kill(pid, 0); err == nil || errors.Is(err, syscall.EPERM) {
		return fmt.Errorf("-I %s names process %d, which is running (another instance appears to be running): stop it, or remove the file if that process is not blast", path, pid)
	}
	return nil
}

// writePidfile writes this process's id to path.
func writePidfile(path string) error {
	if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return fmt.Errorf("-I %s: unable to write the PID file: %w", path, err)
	}
	return nil
}

// removePidfile removes the pidfile if it still names this process.
func removePidfile(path string) {
	b, err := os.ReadFile(path)
	if err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(os.Getpid()) {
		os.Remove(path)
	}
}
