//go:build !linux

package control

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

func ctrlControl(string, time.Duration) func(string, string, syscall.RawConn) error {
	return func(string, string, syscall.RawConn) error {
		return fmt.Errorf("--bind-dev and --snd-timeout need Linux: %w", errors.ErrUnsupported)
	}
}

func setUserTimeout(int, time.Duration) error {
	return fmt.Errorf("--snd-timeout needs Linux (TCP_USER_TIMEOUT): %w", errors.ErrUnsupported)
}
