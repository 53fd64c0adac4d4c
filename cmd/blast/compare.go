package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/blastnet/blast/compare"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/internal/safetext"
	"github.com/blastnet/blast/plot"
	"github.com/blastnet/blast/stats"
	"github.com/blastnet/blast/ttcp"
	"github.com/blastnet/blast/units"
)

func init() {
	register(command{name: "compare", summary: "run the same test once per backend and print them side by side", run: runCompare, flags: func() *pflag.FlagSet { return newCompareFlags().fs }})
}

const compareHelpText = `Usage: blast compare --lab [options]
       blast compare HOST [options]

Runs the same test once per backend (each sending strategy against a
readwrite receiver, each receiving strategy against a readwrite sender;
with -u the UDP set) and prints one table: throughput, packets/s (UDP),
CPU time of each end, CPU-seconds per GB, I/O calls and bytes per call,
and the share of bytes that were not copied.

--lab builds a pair of network namespaces joined by a veth pair (root
only), runs both ends in this process and removes the lab at the end.

HOST runs one client/server test per backend pair against a 'blast
server' on HOST: this host sends (with -R it receives) and the server
runs the other end with the backend the row names, then reports its CPU
time, I/O counters and backend facts. A plain iperf3 server cannot; TCP
only, until client/server mode carries UDP.

On a terminal, standard error shows which row runs and how many remain.

Flags:
` + "%s" + `
Examples:
  sudo blast compare --lab
  sudo blast compare --lab -u -l 64 -t 5
  blast compare 10.0.0.2 -t 5         (after 'blast server' on 10.0.0.2)
  blast compare 10.0.0.2 -R -p 5202
  sudo blast compare --lab --confidence 95,5 --plot cmp.svg
`

// labMaxLen bounds -l of a TCP lab: both ends run in this process, and
// the row that receives with io_uring multishot holds 16 buffers of -l
// bytes (engine.Footprint), which ttcp.MaxBufMem bounds.
const labMaxLen = ttcp.MaxBufMem / 16

// compareFlags are blast compare's flags and where they land.
type compareFlags struct {
	fs                            *pflag.FlagSet
	lab, reverse, udp, json, help bool
	port, bufLen                  int
	secs                          float64
	format                        string
	rep                           repeatFlags
}

// newCompareFlags defines blast compare's flags: the parser, the help and
// the completions all read these definitions.
func newCompareFlags() *compareFlags {
	f := &compareFlags{fs: pflag.NewFlagSet("compare", pflag.ContinueOnError)}
	fs := f.fs
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	fs.BoolVar(&f.lab, "lab", false, "run both ends in a netns lab on this machine (root)")
	fs.IntVarP(&f.port, "port", "p", wire.DefaultPort, "the server's port (HOST)")
	fs.BoolVarP(&f.reverse, "reverse", "R", false, "the server sends, this host receives (HOST)")
	fs.BoolVarP(&f.udp, "udp", "u", false, "compare the UDP backends (--lab)")
	fs.Float64VarP(&f.secs, "time", "t", 3, "seconds per backend (whole seconds with HOST)")
	fs.IntVarP(&f.bufLen, "len", "l", 0, "buffer length (default 131072 for TCP, 64 for UDP)")
	fs.StringVarP(&f.format, "format", "f", "", "`UNIT` of the throughput column: k, m, g, t (bits/s) or K, M, G, T (bytes/s); default: SI bits as fits")
	fs.BoolVarP(&f.json, "json", "J", false, "JSON instead of the table")
	addRepeatFlags(fs, &f.rep, "throughput of each row")
	fs.BoolVar(&f.rep.csv, "csv", false, "CSV: a row per backend (with --repeat or --confidence: a row per run of each backend and its summary)")
	fs.BoolVarP(&f.help, "help", "h", false, "show this help")
	return f
}

// compareHelp is blast compare's help, its flags from their definitions.
func compareHelp() string {
	return fmt.Sprintf(compareHelpText, newCompareFlags().fs.FlagUsages())
}

func runCompare(e *env, args []string) int {
	f := newCompareFlags()
	fs := f.fs
	lab, port, reverse, udp, secs, bufLen, jsonOut, help := &f.lab, &f.port, &f.reverse, &f.udp, &f.secs, &f.bufLen, &f.json, &f.help
	rep := &f.rep
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(e.stderr, "blast compare: %s: run 'blast help compare' for the options\n", flagError(err))
		return exitUsage
	}
	if *help {
		fmt.Fprint(e.stdout, compareHelp())
		return exitOK
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "blast compare: %s\n", safetext.Line(fmt.Sprintf(format, a...)))
		return exitUsage
	}
	host := fs.Arg(0)
	switch {
	case fs.NArg() > 1:
		return usage("unexpected argument %q: compare one HOST at a time", fs.Arg(1))
	case host != "" && *lab:
		return usage("HOST and --lab both given: choose one")
	case host == "" && !*lab:
		return usage("say where: HOST (a 'blast server' there) or --lab (a netns lab on this machine)")
	case !(*secs > 0 && *secs <= wire.MaxTime): // NaN too
		return usage("-t %g: must be more than 0 and at most %d seconds", *secs, wire.MaxTime)
	case host == "" && (fs.Changed("port") || *reverse):
		return usage("-p and -R are for the HOST form")
	case host != "" && *udp:
		return usage("-u with HOST: client/server mode carries TCP only so far; compare the UDP backends with --lab")
	case host != "" && *secs != math.Trunc(*secs):
		return usage("-t %g: the HOST form runs whole seconds (iperf3's protocol); use -t %g", *secs, math.Max(1, math.Round(*secs)))
	case host != "" && (*port < 1 || *port > 65535):
		return usage("-p %d: must be 1 to 65535", *port)
	}
	unit, err := units.ParseFormat(f.format)
	if err != nil {
		return usage("%v", err)
	}
	plan, err := rep.plan()
	if err != nil {
		return usage("%v", err)
	}
	if rep.csv && *jsonOut {
		return usage("--csv and -J: pick one output format")
	}
	cfg := compare.Config{UDP: *udp, Duration: time.Duration(*secs * float64(time.Second)), BufLen: *bufLen,
		Host: host, Port: *port, Reverse: *reverse, Plan: plan}
	if !*jsonOut && !rep.csv && isTerminal(e.stderr) {
		cfg.Progress = func(n, of int, name string) {
			fmt.Fprintf(e.stderr, "compare: row %d of %d: %s (%d to go after it)\n", n, of, name, of-n)
		}
	}
	if !fs.Changed("len") {
		cfg.BufLen = 128 << 10
		if cfg.UDP {
			cfg.BufLen = 64
		}
	}
	maxLen := labMaxLen
	switch {
	case cfg.UDP:
		maxLen = ttcp.MaxUDPLen
	case host != "":
		maxLen = 1 << 20 // iperf3's protocol
	}
	if cfg.BufLen < 1 || cfg.BufLen > maxLen {
		return usage("-l %d: must be between 1 and %d", cfg.BufLen, maxLen)
	}
	if host == "" && os.Geteuid() != 0 {
		return usage("--lab builds network namespaces: run as root")
	}
	var rows []compare.Row
	var runErr error
	if host != "" {
		rows, runErr = compare.RunHost(e.ctx, cfg)
	} else {
		rows, runErr = compare.RunLab(e.ctx, cfg)
	}
	if errors.Is(runErr, context.Canceled) {
		runErr = errors.New("interrupted")
	}
	// The rows measured before a failure are shown, then the failure;
	// a server that is not blast has no rows worth showing.
	if len(rows) > 0 && !errors.Is(runErr, compare.ErrNotBlast) {
		var err error
		switch {
		case rep.csv && !plan.IsZero():
			cw := stats.NewCSVWriter(e.stdout, "bits_per_second")
			for _, r := range rows {
				if r.Repeat != nil && err == nil {
					err = cw.Write(r.Case, *r.Repeat)
				}
			}
			if err == nil {
				err = cw.Flush()
			}
		case rep.csv:
			err = compare.WriteCSV(e.stdout, rows)
		case *jsonOut:
			err = compare.WriteJSON(e.stdout, rows)
		default:
			err = compare.WriteTable(e.stdout, rows, cfg.UDP, unit)
		}
		if err != nil && runErr == nil {
			runErr = err
		}
	}
	if runErr != nil {
		fmt.Fprintf(e.stderr, "blast compare: %v\n", runErr)
		return exitFailure
	}
	if rep.plot != "" {
		intervals := map[string]plot.Interval{}
		for _, r := range rows {
			if r.Repeat != nil && r.Repeat.Summary.HasInterval() {
				intervals[r.Case] = plot.Interval{Low: r.Repeat.Summary.Low, High: r.Repeat.Summary.High}
			}
		}
		where := "--lab"
		if host != "" {
			where = host
		}
		proto := "TCP"
		if cfg.UDP {
			proto = "UDP"
		}
		title := fmt.Sprintf("blast compare %s: %s, %g s per run", where, proto, *secs)
		if len(intervals) > 0 {
			title += fmt.Sprintf(", %s confidence intervals", stats.LevelPercent(plan.Level))
		}
		if err := plot.Compare(rep.plot, rows, intervals, title); err != nil {
			fmt.Fprintf(e.stderr, "blast compare: --plot %s: %v\n", rep.plot, err)
			return exitFailure
		}
	}
	return exitOK
}
