package engine_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/blastnet/blast/engine"
)

// TestAsNotSupported checks that a lower package's "not here"
// (errors.ErrUnsupported) becomes engine's, in the same words, and that
// nothing else does.
func TestAsNotSupported(t *testing.T) {
	other := errors.New("io_uring_setup: out of locked memory")
	for _, tc := range []struct {
		name string
		err  error
		not  bool
	}{
		{"nil", nil, false},
		{"other", other, false},
		{"unsupported", fmt.Errorf("io_uring is not allowed here: %w", errors.ErrUnsupported), true},
		{"already", fmt.Errorf("afxdp only: %w", engine.ErrNotSupported), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := engine.AsNotSupported(tc.err)
			if tc.err == nil {
				if got != nil {
					t.Fatalf("AsNotSupported(nil) = %v, want nil", got)
				}
				return
			}
			if errors.Is(got, engine.ErrNotSupported) != tc.not {
				t.Errorf("AsNotSupported(%v) wraps ErrNotSupported: %v, want %v", tc.err, !tc.not, tc.not)
			}
			if !errors.Is(got, tc.err) {
				t.Errorf("AsNotSupported(%v) = %v, which no longer wraps the error", tc.err, got)
			}
			if got.Error() != tc.err.Error() {
				t.Errorf("AsNotSupported(%v) reads %q, want the same words", tc.err, got)
			}
		})
	}
}
