package control

import (
	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/engine"
)

// ErrorResult is the Result of a client test that failed before it was
// connected (no address, connection refused): it holds only what the
// failure reports show, iperf3's -J error document among them.
func ErrorResult(host string, err error) *result.Result {
	return &result.Result{Role: "client", Version: result.Version, SystemInfo: systemInfo(), Host: host, Err: err}
}

// SystemInfo is what iperf3 calls system_info: the system's name, host
// name, kernel release and version, and machine, as uname -a prints them.
func SystemInfo() string { return systemInfo() }

// readTCPInfo samples TCP_INFO on c.
func readTCPInfo(c *engine.Socket) (engine.TCPInfo, bool) {
	ti, err := c.TCPInfo()
	return ti, err == nil
}
