// Package wire is iperf3's control protocol as it crosses the wire: the
// states (one signed byte each), the cookie, the length-prefixed JSON
// frames, the parameters a client sends and the results both sides
// exchange, with blast's additions under "blast" keys, and iperf3's error
// numbers. It promises iperf3's encoding byte for byte (an iperf3 3.x peer
// reads what it writes and the other way round) and bounds every frame it
// reads before it allocates; it knows nothing of how a test runs
// (package control).
package wire
