// Package bench measures blast against the tools people would use instead
// (iperf3, sockperf, qperf, trafgen) on a network-namespace lab it builds
// itself, and writes what it measured: a JSON file per run under results/
// and the table in README.md.
//
// Every workload runs blast and its peer alternately (A B A B ...) on the
// same lab, so drift of a shared machine hits both; each pair gives a
// blast/peer ratio, and the summary is the median, minimum and maximum of
// each side and of the ratios. CPU time and peak memory come from the
// kernel's accounting of each process (wait4's rusage), not from the
// tools' own reports.
//
// The suite sends traffic only between the two namespaces of the lab it
// created (addresses in 198.18.0.0/15), and removes the lab on every exit
// path, including SIGINT and SIGTERM.
package bench
