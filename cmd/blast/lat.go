package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/blastnet/blast/internal/safetext"
	"github.com/blastnet/blast/latency"
	"github.com/blastnet/blast/plot"
	"github.com/blastnet/blast/stats"
	"github.com/blastnet/blast/units"
)

func init() {
	register(command{name: "lat", summary: "round-trip latency: request/response ping-pong, percentiles", run: runLat, flags: func() *pflag.FlagSet { return newLatFlags().fs }})
}

const latIntro = `Usage: blast lat -s [-p PORT] [-B ADDR] [-1]
       blast lat HOST [-u] [-l SIZE] [-t SECONDS | -n COUNT] [-p PORT] [-i INTERVAL] [-J]

Ping-pong over one flow: the client sends a request of SIZE bytes, the
server sends it back, and the client times each exchange with the
monotonic clock. Every figure is a full round trip (request sent to whole
reply received), never RTT/2: sockperf without --full-rtt and qperf
report RTT/2; double their figures to compare.

The server (-s) echoes TCP and UDP on the same port (default 5202).
blast server answers blast lat too (TCP and UDP), on its own port, so a
host that runs blast server needs no second service: blast lat HOST -p 5201.

Reports min, mean, p50, p90, p99, p99.9, p99.99, max and standard deviation
of the round-trip time, and round trips (transactions) per second.

Flags (-s, -p, -B, -1 for the server; the others for the client):
`

const latExamples = `
Examples:
  blast lat -s                         # serve on port 5202
  blast lat 198.18.0.2 -n 100000       # 100000 TCP round trips of 64 bytes
  blast lat 198.18.0.2 -u -l 1400 -t 30 -i 1
  blast lat 198.18.0.2 -J > rtt.json
  blast lat 198.18.0.2 -p 5201         # against a blast server
  blast lat 198.18.0.2 --repeat 5 --plot rtt.png
  blast lat 198.18.0.2 --rate 10000 --load --plot loaded.png   # bufferbloat
`

// latFlags are blast lat's flags and where they land.
type latFlags struct {
	fs                    *pflag.FlagSet
	cfg                   latency.Config
	secs, ivSecs, timeout float64
	port, tos             string
	json, help            bool
	rep                   repeatFlags
}

// newLatFlags defines blast lat's flags: the parser, the help and the
// completions all read these definitions.
func newLatFlags() *latFlags {
	f := &latFlags{cfg: latency.Defaults(), fs: pflag.NewFlagSet("lat", pflag.ContinueOnError)}
	fs, cfg := f.fs, &f.cfg
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	fs.BoolVarP(&cfg.Server, "server", "s", false, "serve (echo) instead of measuring")
	fs.StringVarP(&f.port, "port", "p", strconv.Itoa(cfg.Port), "port, TCP and UDP")
	fs.StringVarP(&cfg.Bind, "bind", "B", "", "server: listen on this address only (default: all)")
	fs.BoolVarP(&cfg.Once, "one-off", "1", false, "server: exit after the first client is done")
	fs.BoolVarP(&cfg.UDP, "udp", "u", false, "UDP (sequence-numbered requests; lost and late replies counted) instead of TCP (TCP_NODELAY)")
	fs.IntVarP(&cfg.Size, "len", "l", cfg.Size, "request and reply payload in bytes (UDP: 16 to 65507)")
	fs.Float64VarP(&f.secs, "time", "t", cfg.Duration.Seconds(), "measure for this many seconds")
	fs.Int64VarP(&cfg.Count, "count", "n", 0, "measure exactly N round trips instead")
	fs.Float64VarP(&f.ivSecs, "interval", "i", 0, "a line every SEC seconds (p50, p99, max)")
	fs.BoolVarP(&f.json, "json", "J", false, "JSON: nanoseconds, the histogram's buckets")
	fs.IntVar(&cfg.Warmup, "warmup", cfg.Warmup, "round trips before measuring, not recorded")
	fs.Float64Var(&f.timeout, "timeout", cfg.Timeout.Seconds(), "seconds to wait for a reply: UDP counts the request lost, TCP fails the run")
	fs.StringVarP(&f.tos, "tos", "S", "", "IP TOS byte (0x10 ...)")
	fs.Float64Var(&cfg.Rate, "rate", 0, "send `N` requests a second on a fixed schedule (open loop): a late reply delays the requests behind it, and each time counts from its slot (coordinated omission corrected, as wrk2 does)")
	fs.BoolVar(&cfg.Load, "load", false, "run a bulk TCP stream to the same server beside the ping-pong: latency under load (bufferbloat)")
	addRepeatFlags(fs, &f.rep, "median round trip")
	fs.BoolVar(&f.rep.csv, "csv", false, "CSV: a row per interval and the totals (with --repeat or --confidence: a row per run and the summary)")
	fs.BoolVarP(&f.help, "help", "h", false, "show this help")
	return f
}

// latHelp is blast lat's help, its flags from their definitions.
func latHelp() string { return latIntro + newLatFlags().fs.FlagUsages() + latExamples }

func runLat(e *env, args []string) int {
	cfg, jsonOut, interval, rep, err := parseLat(args)
	if errors.Is(err, pflag.ErrHelp) {
		io.WriteString(e.stdout, latHelp())
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "blast lat: %s\n", safetext.Line(err.Error()))
		return exitUsage
	}
	if cfg.Server {
		err := latency.Serve(e.ctx, cfg, e.stdout, nil)
		if err != nil {
			fmt.Fprintf(e.stderr, "blast lat: %s\n", safetext.Line(err.Error()))
			if latency.IsUsage(err) {
				return exitUsage
			}
			return exitFailure
		}
		return exitOK
	}

	plan, _ := rep.plan() // parseLat validated it
	once := func(i int, collect *[]*latency.Result) (*latency.Result, error) {
		var progress func(latency.Interval)
		if !jsonOut && !rep.csv {
			if !plan.IsZero() {
				fmt.Fprintf(e.stdout, "== run %d\n", i+1)
			}
			latency.WriteHeader(e.stdout, cfg)
			if interval {
				latency.WriteIntervalHeader(e.stdout, cfg.UDP)
				progress = func(iv latency.Interval) { latency.WriteInterval(e.stdout, iv, cfg.UDP) }
			}
		}
		res, err := latency.Run(e.ctx, cfg, progress)
		if res != nil {
			switch {
			case (jsonOut || rep.csv) && collect != nil:
				*collect = append(*collect, res)
			case jsonOut:
				latency.WriteJSON(e.stdout, res)
			case rep.csv:
				latency.WriteCSV(e.stdout, res)
			default:
				latency.WriteText(e.stdout, res)
			}
		}
		return res, err
	}
	var res *latency.Result
	// measured are the runs a repeated run's summary is of, in order.
	var measured []*latency.Result
	var line, note string
	var summary stats.Summary
	var values []float64
	if plan.IsZero() {
		res, err = once(0, nil)
	} else {
		// Several runs: the median round trip of each, and their spread.
		var runs []*latency.Result
		var rr stats.Result
		rr, err = stats.Run(e.ctx, plan, func(i int) (float64, error) {
			r, err := once(i, &runs)
			res = r
			if r != nil && err == nil && !r.Interrupted {
				measured = append(measured, r)
			}
			if err == nil && r.Interrupted {
				err = errors.New("interrupted")
			}
			if err != nil {
				return 0, err
			}
			return r.RTT.P50.Seconds() * 1e6, nil
		})
		switch {
		case rep.csv:
			stats.WriteCSV(e.stdout, "lat", "us", rr)
		case jsonOut:
			docs := make([]any, len(runs))
			for i, r := range runs {
				docs[i] = latency.ToJSON(r)
			}
			enc := json.NewEncoder(e.stdout)
			enc.SetIndent("", "  ")
			enc.Encode(struct {
				Runs   []any        `json:"runs"`
				Repeat stats.Result `json:"repeat"`
			}{docs, rr})
		default:
			fmt.Fprintf(e.stdout, "\nblast lat: median round trip (µs): %s\n", rr.Summary.Line(nil))
			if note := rr.Note(); note != "" {
				fmt.Fprintf(e.stdout, "blast lat: %s\n", note)
			}
		}
		line, note, summary, values = "median round trip (µs): "+rr.Summary.Line(nil), rr.Note(), rr.Summary, rr.Values
	}
	if err == nil && res != nil && !res.Interrupted && rep.plot != "" {
		title := ""
		if cfg.Rate > 0 || cfg.Load {
			proto := "TCP"
			if cfg.UDP {
				proto = "UDP"
			}
			title = fmt.Sprintf("blast lat -> %s: %s, %d-byte requests", res.Remote, proto, cfg.Size)
			if cfg.Rate > 0 {
				title += fmt.Sprintf(", %g/s on a schedule", cfg.Rate)
			}
			if cfg.Load {
				title += fmt.Sprintf(", under load (%s bulk)", units.SIRate(res.LoadBps))
			}
		}
		var perr error
		if plan.IsZero() {
			perr = plot.Latency(rep.plot, res, title)
		} else {
			// Every run, with the summary as it was printed.
			perr = plot.LatencyRuns(rep.plot, plot.LatencyRepeated{Runs: measured, Values: values,
				Summary: summary, Line: line, Note: note, Title: title})
		}
		if perr != nil {
			fmt.Fprintf(e.stderr, "blast lat: --plot %s: %v\n", rep.plot, perr)
			return exitFailure
		}
	}
	switch {
	case err != nil:
		fmt.Fprintf(e.stderr, "blast lat: %s\n", safetext.Line(err.Error()))
		if latency.IsUsage(err) {
			return exitUsage
		}
		return exitFailure
	case res.Interrupted:
		fmt.Fprintln(e.stderr, "blast lat: interrupted")
		return exitFailure
	}
	return exitOK
}

// parseLat turns blast lat's command line into a latency.Config.
func parseLat(args []string) (latency.Config, bool, bool, repeatFlags, error) {
	f := newLatFlags()
	cfg, rep := &f.cfg, &f.rep
	fail := func(err error) (latency.Config, bool, bool, repeatFlags, error) {
		return *cfg, false, false, *rep, err
	}
	fs := f.fs
	if err := fs.Parse(args); err != nil {
		return fail(fmt.Errorf("%s: run 'blast lat -h' for the flags", flagError(err)))
	}
	if f.help {
		return fail(pflag.ErrHelp)
	}
	if fs.Changed("time") && fs.Changed("count") {
		return fail(errors.New("-t and -n conflict: measure for a time (-t SECONDS) or a number of round trips (-n COUNT), not both"))
	}
	p, err := parsePort(f.port, cfg.UDP)
	if err != nil {
		return fail(err)
	}
	cfg.Port = p
	rest := fs.Args()
	if len(rest) > 1 {
		return fail(fmt.Errorf("too many arguments: %q: give one host", strings.Join(rest, " ")))
	}
	if len(rest) == 1 {
		cfg.Host = rest[0]
	}
	if cfg.Server {
		for _, name := range []string{"udp", "len", "time", "count", "interval", "json", "warmup", "timeout", "rate", "load"} {
			if fs.Changed(name) {
				return fail(fmt.Errorf("--%s is for the client: the server (-s) echoes TCP and UDP on one port as they come", name))
			}
		}
	}
	if fs.Changed("count") && cfg.Count <= 0 {
		return fail(fmt.Errorf("-n %d: give a positive number of round trips", cfg.Count))
	}
	if cfg.Duration, err = seconds("-t", f.secs); err != nil {
		return fail(err)
	}
	if cfg.Interval, err = seconds("-i", f.ivSecs); err != nil {
		return fail(err)
	}
	if cfg.Timeout, err = seconds("--timeout", f.timeout); err != nil {
		return fail(err)
	}
	if f.tos != "" {
		v, err := strconv.ParseUint(f.tos, 0, 8)
		if err != nil {
			return fail(fmt.Errorf("-S %s: the TOS byte is a number from 0 to 255 (0x10, 16, 020)", f.tos))
		}
		cfg.Sock.TOS = int(v)
	}
	if _, err := rep.plan(); err != nil {
		return fail(err)
	}
	if rep.csv && f.json {
		return fail(errors.New("--csv and -J: pick one output format"))
	}
	if cfg.Server && (rep.repeat != 0 || rep.confidence != "" || rep.plot != "" || rep.csv) {
		return fail(errors.New("--repeat, --confidence, --plot and --csv are for the client: the server (-s) echoes"))
	}
	return *cfg, f.json, cfg.Interval > 0, *rep, cfg.Validate()
}

// seconds converts a flag's seconds to a Duration.
func seconds(flag string, s float64) (time.Duration, error) {
	if math.IsNaN(s) || math.IsInf(s, 0) || s < 0 || s > 1e6 {
		return 0, fmt.Errorf("%s %g: give a number of seconds from 0 to 1000000", flag, s)
	}
	return time.Duration(s * float64(time.Second)), nil
}
