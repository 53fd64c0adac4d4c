package sockets

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/engine"
)

// TestURingSetupError checks that the refusals of io_uring_setup read as
// "not supported here" with a reason, and other failures do not.
func TestURingSetupError(t *testing.T) {
	for _, tc := range []struct {
		errno unix.Errno
		not   bool
	}{
		{unix.ENOSYS, true},
		{unix.EPERM, true},
		{unix.EACCES, true},
		{unix.ENOMEM, false},
		{unix.EFAULT, false},
	} {
		err := uringSetupError(tc.errno)
		if errors.Is(err, engine.ErrNotSupported) != tc.not {
			t.Errorf("%v: %v (not supported: %v, want %v)", tc.errno, err, !tc.not, tc.not)
		}
	}
}
