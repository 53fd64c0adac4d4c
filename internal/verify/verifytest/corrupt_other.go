//go:build !linux

package verifytest

import (
	"testing"

	"github.com/blastnet/blast/netlab"
)

// Protocols Corrupt knows: IP protocol numbers.
const (
	TCP = 6
	UDP = 17
)

// PayloadOffset is where in a packet's payload the flipped byte is.
const PayloadOffset = 100

// Plant says which packets Corrupt damages.
type Plant struct {
	Proto int
	Every uint32
	Port  int
}

// Corrupt needs Linux's tc: elsewhere it skips the test.
func Corrupt(tb testing.TB, h *netlab.Host, p Plant) func() uint64 {
	tb.Skip("planting corruption needs Linux's tc programs")
	return nil
}
