//go:build !linux

package control

import (
	"fmt"
	"net"
	"runtime"

	"github.com/blastnet/blast/engine"
)

func queued(*engine.Socket, bool) (int, error) {
	return 0, fmt.Errorf("socket queues: %w", engine.ErrNotSupported)
}
func congestionOf(*engine.Socket) string { return "" }
func mssOf(*engine.Socket) int           { return 0 }
func ctrlMSS(net.Conn) int               { return 0 }
func systemInfo() string                 { return runtime.GOOS + " " + runtime.GOARCH }

// cpuAllowed: pinning threads is Linux only.
func cpuAllowed(int) bool { return false }
