package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/blastnet/blast/latency"
	"github.com/blastnet/blast/nicinfo"
)

func init() {
	register(command{name: "lat", summary: "round-trip latency: request/response ping-pong, percentiles", run: runLat})
}

var latHelp = `Usage: blast lat -s [-p PORT] [-B ADDR] [-1]
       blast lat HOST [-u] [-l SIZE] [-t SECONDS | -n COUNT] [-p PORT] [-i INTERVAL] [-J] [--warmup N]

Ping-pong over one flow: the client sends a request of SIZE bytes, the
server sends it back, and the client times each exchange with the
monotonic clock. Every figure is a full round trip (request sent to whole
reply received), never RTT/2: sockperf without --full-rtt and qperf
report RTT/2; double their figures to compare.

The server echoes TCP and UDP on the same port (default ` + strconv.Itoa(latency.DefaultPort) + `).
blast server answers blast lat too (TCP and UDP), on its own port, so a
host that runs blast server needs no second service: blast lat HOST -p 5201.

Server:
  -s, --server          serve (echo) instead of measuring
  -p, --port PORT       port, TCP and UDP (default ` + strconv.Itoa(latency.DefaultPort) + `)
  -B, --bind ADDR       listen on this address only (default: all)
  -1, --one-off         exit after the first client is done

Client:
  -u, --udp             UDP (sequence-numbered requests; lost and late
                        replies counted) instead of TCP (TCP_NODELAY)
  -l, --len SIZE        request and reply payload in bytes (default 64;
                        UDP: 16 to 65507)
  -t, --time SECONDS    measure for this long (default 10)
  -n, --count N         measure exactly N round trips instead
  -i, --interval SEC    a line every SEC seconds (p50, p99, max)
  -J, --json            JSON: nanoseconds, the histogram's buckets
      --warmup N        round trips before measuring, not recorded (default 10)
      --timeout SEC     wait this long for a reply (default 1): UDP counts
                        the request lost, TCP fails the run
  -S, --tos TOS         IP TOS byte (0x10 ...)

Reports min, mean, p50, p90, p99, p99.9, p99.99, max and standard deviation
of the round-trip time, and round trips (transactions) per second.

Examples:
  blast lat -s                         # serve on port 5202
  blast lat 198.18.0.2 -n 100000       # 100000 TCP round trips of 64 bytes
  blast lat 198.18.0.2 -u -l 1400 -t 30 -i 1
  blast lat 198.18.0.2 -J > rtt.json
  blast lat 198.18.0.2 -p 5201         # against a blast server
`

func runLat(e *env, args []string) int {
	cfg, jsonOut, interval, err := parseLat(args)
	if errors.Is(err, pflag.ErrHelp) {
		io.WriteString(e.stdout, latHelp)
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "blast lat: %s\n", nicinfo.EscapeLine(err.Error()))
		return exitUsage
	}
	if cfg.Server {
		err := latency.Serve(e.ctx, cfg, e.stdout, nil)
		if err != nil {
			fmt.Fprintf(e.stderr, "blast lat: %s\n", nicinfo.EscapeLine(err.Error()))
			if latency.IsUsage(err) {
				return exitUsage
			}
			return exitFailure
		}
		return exitOK
	}

	var progress func(latency.Interval)
	if !jsonOut {
		latency.WriteHeader(e.stdout, cfg)
		if interval {
			latency.WriteIntervalHeader(e.stdout, cfg.UDP)
			progress = func(iv latency.Interval) { latency.WriteInterval(e.stdout, iv, cfg.UDP) }
		}
	}
	res, err := latency.Run(e.ctx, cfg, progress)
	if res != nil {
		if jsonOut {
			latency.WriteJSON(e.stdout, res)
		} else {
			latency.WriteText(e.stdout, res)
		}
	}
	switch {
	case err != nil:
		fmt.Fprintf(e.stderr, "blast lat: %s\n", nicinfo.EscapeLine(err.Error()))
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
func parseLat(args []string) (cfg latency.Config, jsonOut, interval bool, err error) {
	cfg = latency.Defaults()
	fs := pflag.NewFlagSet("lat", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	var (
		secs, ivSecs, timeout float64
		port, tos             string
		help                  bool
	)
	fs.BoolVarP(&cfg.Server, "server", "s", false, "")
	fs.StringVarP(&port, "port", "p", strconv.Itoa(cfg.Port), "")
	fs.StringVarP(&cfg.Bind, "bind", "B", "", "")
	fs.BoolVarP(&cfg.Once, "one-off", "1", false, "")
	fs.BoolVarP(&cfg.UDP, "udp", "u", false, "")
	fs.IntVarP(&cfg.Size, "len", "l", cfg.Size, "")
	fs.Float64VarP(&secs, "time", "t", cfg.Duration.Seconds(), "")
	fs.Int64VarP(&cfg.Count, "count", "n", 0, "")
	fs.Float64VarP(&ivSecs, "interval", "i", 0, "")
	fs.BoolVarP(&jsonOut, "json", "J", false, "")
	fs.IntVar(&cfg.Warmup, "warmup", cfg.Warmup, "")
	fs.Float64Var(&timeout, "timeout", cfg.Timeout.Seconds(), "")
	fs.StringVarP(&tos, "tos", "S", "", "")
	fs.BoolVarP(&help, "help", "h", false, "")
	if err := fs.Parse(args); err != nil {
		return cfg, false, false, fmt.Errorf("%s: run 'blast lat -h' for the flags", flagError(err))
	}
	if help {
		return cfg, false, false, pflag.ErrHelp
	}
	if fs.Changed("time") && fs.Changed("count") {
		return cfg, false, false, errors.New("-t and -n conflict: measure for a time (-t SECONDS) or a number of round trips (-n COUNT), not both")
	}
	if p, err := parsePort(port, cfg.UDP); err != nil {
		return cfg, false, false, err
	} else {
		cfg.Port = p
	}
	rest := fs.Args()
	if len(rest) > 1 {
		return cfg, false, false, fmt.Errorf("too many arguments: %q: give one host", strings.Join(rest, " "))
	}
	if len(rest) == 1 {
		cfg.Host = rest[0]
	}
	if cfg.Server {
		for _, f := range []string{"udp", "len", "time", "count", "interval", "json", "warmup", "timeout"} {
			if fs.Changed(f) {
				return cfg, false, false, fmt.Errorf("--%s is for the client: the server (-s) echoes TCP and UDP on one port as they come", f)
			}
		}
	}
	if fs.Changed("count") && cfg.Count <= 0 {
		return cfg, false, false, fmt.Errorf("-n %d: give a positive number of round trips", cfg.Count)
	}
	var derr error
	if cfg.Duration, derr = seconds("-t", secs); derr != nil {
		return cfg, false, false, derr
	}
	if cfg.Interval, derr = seconds("-i", ivSecs); derr != nil {
		return cfg, false, false, derr
	}
	if cfg.Timeout, derr = seconds("--timeout", timeout); derr != nil {
		return cfg, false, false, derr
	}
	if tos != "" {
		v, err := strconv.ParseUint(tos, 0, 8)
		if err != nil {
			return cfg, false, false, fmt.Errorf("-S %s: the TOS byte is a number from 0 to 255 (0x10, 16, 020)", tos)
		}
		cfg.Sock.TOS = int(v)
	}
	return cfg, jsonOut, cfg.Interval > 0, cfg.Validate()
}

// seconds converts a flag's seconds to a Duration.
func seconds(flag string, s float64) (time.Duration, error) {
	if math.IsNaN(s) || math.IsInf(s, 0) || s < 0 || s > 1e6 {
		return 0, fmt.Errorf("%s %g: give a number of seconds from 0 to 1000000", flag, s)
	}
	return time.Duration(s * float64(time.Second)), nil
}
