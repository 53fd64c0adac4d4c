// Package bench measures blast against the tools people would use instead
// (iperf3, sockperf, qperf, trafgen) on a network-namespace lab it builds
// itself, and writes what it measured: a JSON file per run under results/
// and the tables in README.md.
//
// Every workload runs in rounds: blast, then each of its peers (A B C A B
// C ...), on the same lab, so drift of a shared machine hits all of them;
// each round gives a blast/peer ratio per peer, and the summary is the
// median, minimum and maximum of each side and of the ratios. The iperf3
// workloads have two peers: Debian's iperf3 (3.12, single-threaded) and,
// when bench is given or finds one, a modern iperf3 (3.16 or later). CPU
// time and peak memory come from the kernel's accounting of each process
// (wait4's rusage), not from the tools' own reports.
//
// The suite sends traffic only between the two namespaces of the lab it
// created (addresses in 198.18.0.0/15), and removes the lab on every exit
// path, including SIGINT and SIGTERM.
package bench
