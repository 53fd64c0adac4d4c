// Package report renders results: the classic ttcp lines, and (as modes
// arrive) iperf-like text and JSON. It reads only result types and never
// measures anything itself, so every format can be tested with golden
// files from fixed inputs.
package report
