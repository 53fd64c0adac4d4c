// Package control speaks iperf3's control protocol, as a client and as a
// server, so that a blast client measures against any `iperf3 -s` and any
// `iperf3 -c` measures against a blast server.
//
// The protocol is iperf3 3.x's: a 37-byte cookie, one signed state byte
// per transition, parameters and results as a 4-byte big-endian length
// followed by JSON, data streams on the same port that open with the same
// cookie, and stream ids 1, 3, 4, 5 and on. blast-only fields travel
// under "blast" keys, which iperf3 ignores.
//
// What it promises beyond iperf3: a server runs several tests at once (each
// data connection is routed to its test by cookie), every stream runs on
// its own goroutine through an engine.Backend, byte-count tests (-n, -k)
// move exactly the bytes asked for, and every result names the backend
// that moved the bytes on both ends.
//
// Run and Server.Serve produce Results (package control/result);
// control/render writes them the way iperf3 does (text) and in iperf3's
// -J schema, from one summary. The wire format is control/wire; callers
// use those packages by their own names.
package control
