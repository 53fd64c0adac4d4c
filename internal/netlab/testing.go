package netlab

import (
	"os"
	"testing"
)

// RequireRoot skips the test, saying why, unless it runs as root.
func RequireRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root to build network namespaces and veth pairs (make test runs these as root)")
	}
}

// ForTest builds a lab for tb and removes it when tb ends, whether the
// test passes, fails or panics. It skips the test when not root.
func ForTest(tb testing.TB, topo Topology, opt Options) *Lab {
	tb.Helper()
	RequireRoot(tb)
	lab, err := New(topo, opt)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := lab.Close(); err != nil {
			tb.Error(err)
		}
	})
	return lab
}
