// Package result is what one side of an iperf3-shaped test measured: the
// Result (streams, intervals, the peer's totals as exchanged, host, NIC and
// path facts) and its Summary, the streams added up once per direction
// for every renderer, and the path diagnosis judged over it (Diagnose).
// It moves no data; package control fills a Result as a test runs.
package result
