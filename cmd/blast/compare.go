package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/blastnet/blast/compare"
)

func init() {
	register(command{name: "compare", summary: "run the same test once per backend and print them side by side", run: runCompare})
}

const compareHelp = `Usage: blast compare --lab [options]

Runs the same test once per backend (each sending strategy against a
readwrite receiver, each receiving strategy against a readwrite sender;
with -u the UDP set) and prints one table: throughput, packets/s (UDP),
CPU time of each end, CPU-seconds per GB, I/O calls and bytes per call,
and the share of bytes that were not copied.

--lab builds a pair of network namespaces joined by a veth pair (root
only), runs both ends in this process and removes the lab at the end.
The HOST form, against a 'blast server', arrives with client/server mode.

Options:
  --lab              run both ends in a netns lab on this machine (root)
  -u, --udp          compare the UDP backends
  -t, --time SECS    seconds per backend (default 3)
  -l, --len BYTES    buffer length (default 131072 for TCP, 64 for UDP)
  -J, --json         JSON instead of the table
  -h, --help         this text

Examples:
  sudo blast compare --lab
  sudo blast compare --lab -u -l 64 -t 5
`

func runCompare(e *env, args []string) int {
	fs := pflag.NewFlagSet("compare", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	lab := fs.Bool("lab", false, "")
	udp := fs.BoolP("udp", "u", false, "")
	secs := fs.Float64P("time", "t", 3, "")
	bufLen := fs.IntP("len", "l", 0, "")
	jsonOut := fs.BoolP("json", "J", false, "")
	help := fs.BoolP("help", "h", false, "")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(e.stderr, "blast compare: %v\n", err)
		return exitUsage
	}
	if *help {
		fmt.Fprint(e.stdout, compareHelp)
		return exitOK
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(e.stderr, "blast compare: comparing against a HOST needs client/server mode, which is not wired yet: use --lab\n")
		return exitUsage
	case !*lab:
		fmt.Fprintf(e.stderr, "blast compare: say where: --lab (a netns lab on this machine)\n")
		return exitUsage
	case *secs <= 0:
		fmt.Fprintf(e.stderr, "blast compare: -t %g: must be more than 0 seconds\n", *secs)
		return exitUsage
	case os.Geteuid() != 0:
		fmt.Fprintf(e.stderr, "blast compare: --lab builds network namespaces: run as root\n")
		return exitUsage
	}
	cfg := compare.Config{UDP: *udp, Duration: time.Duration(*secs * float64(time.Second)), BufLen: *bufLen}
	if cfg.BufLen == 0 {
		cfg.BufLen = 128 << 10
		if cfg.UDP {
			cfg.BufLen = 64
		}
	}
	if cfg.UDP && cfg.BufLen > 65507 || cfg.BufLen < 1 {
		fmt.Fprintf(e.stderr, "blast compare: -l %d: must be between 1 and %d\n", cfg.BufLen, map[bool]int{true: 65507, false: 1 << 30}[cfg.UDP])
		return exitUsage
	}
	rows, err := compare.RunLab(e.ctx, cfg)
	if err != nil && len(rows) == 0 {
		fmt.Fprintf(e.stderr, "blast compare: %v\n", err)
		return exitFailure
	}
	if *jsonOut {
		err = compare.WriteJSON(e.stdout, rows)
	} else {
		err = compare.WriteTable(e.stdout, rows, cfg.UDP)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "blast compare: %v\n", err)
		return exitFailure
	}
	return exitOK
}
