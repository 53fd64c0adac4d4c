//go:build !linux

package hostload

import (
	"errors"
	"fmt"
)

// Read is Linux only: it reads /proc/stat.
func Read(string) (Sample, error) {
	return Sample{}, fmt.Errorf("host load comes from /proc/stat, which only Linux has: %w", errors.ErrUnsupported)
}
