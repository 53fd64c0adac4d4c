// Package labtest builds netlab labs for tests: it skips a test
// that is not root, and removes the lab when the test ends. It lives apart
// from netlab so that package testing is not linked into the binary.
package labtest

import (
	"os"
	"testing"

	"github.com/blastnet/blast/netlab"
)

// RequireRoot skips the test, saying why, unless it runs as root.
func RequireRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root to build network namespaces and veth pairs (make test runs these as root)")
	}
}

// New builds a lab for tb and removes it when tb ends, whether the
// test passes, fails or panics. It skips the test when not root.
func New(tb testing.TB, topo netlab.Topology, opt netlab.Options) *netlab.Lab {
	tb.Helper()
	return build(tb, func() (*netlab.Lab, error) { return netlab.New(topo, opt) })
}

// NewBridged builds a bridged lab of n hosts for tb and removes it when
// tb ends, as New does. It skips the test when not root.
func NewBridged(tb testing.TB, n int, opt netlab.BridgeOptions) *netlab.Bridged {
	tb.Helper()
	return build(tb, func() (*netlab.Bridged, error) { return netlab.NewBridged(n, opt) })
}

// build skips tb unless it runs as root, builds a lab with mk and closes
// it when tb ends.
func build[L interface{ Close() error }](tb testing.TB, mk func() (L, error)) L {
	tb.Helper()
	RequireRoot(tb)
	lab, err := mk()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := lab.Close(); err != nil {
			tb.Error(err)
		}
		// A test through a delay line that failed says what the line
		// did: a frame it dropped is the lab's, not the test's subject.
		if l, ok := any(lab).(*netlab.Lab); ok && tb.Failed() && l.Topology == netlab.Delayed {
			ab, ba := l.LineCounts()
			tb.Logf("the delay line, A to B: %v; B to A: %v", ab, ba)
		}
	})
	return lab
}
