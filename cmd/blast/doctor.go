package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/blastnet/blast/doctor"
	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/internal/safetext"
	"github.com/blastnet/blast/nicinfo"
	"github.com/blastnet/blast/plot"
	"github.com/blastnet/blast/units"
)

func init() {
	register(command{name: "doctor", summary: "why is it slow: short tests both ways against a blast server, one ranked verdict", run: runDoctor,
		flags: func() *pflag.FlagSet { return newDoctorFlags().fs }})
}

const doctorIntro = `Usage: blast doctor HOST [-p PORT] [-t SECONDS] [-4|-6] [-b RATE] [-J]
       blast doctor --offline DIR [--after DIR2] [IFACE]

Against a blast server on HOST (blast server answers tests and blast lat
on its one port), runs five short tests:

  1. TCP upload      blast client HOST -t 3
  2. path MTU        both ways: don't-fragment UDP probes, a search over
                     packet sizes (blast server sends the download's and
                     reports the upload's; against iperf3: "not
                     measured"), against both interfaces' MTUs (D29: a
                     hop that carries less than both ends, with its MTU;
                     a black hole there skips tests 3 and 4, which would
                     stall on it)
  3. TCP download    blast client HOST -t 3 -R
  4. UDP upload      at 90% of the TCP upload (at most 500 Mbit/s), with
                     datagrams that fill this side's MTU (the path's, when
                     D29 found a smaller hop)
  5. latency         blast lat HOST -p PORT -t 2 (TCP, 64 bytes)

A direction where TCP lost 2% or more of its segments (and moved at most
400 Mbit/s) also gets UDP at 80% and at 2.5 times its rate (2.5 times more
while that passes, up to 1 Gbit/s): loss that grows with the rate is a
policer between the hosts (D26), named with the rate it passes.

Every test carries both ends' interface reports and findings (link rules
D1-D13), the path and transport findings (D14 and up: shapers, windows,
MTU, buffer overflows, loss, small reads, CPU), and the two TCP
directions are compared (D7). The verdict names the most likely cause
first, with its evidence and the fix; a healthy path gets one line.

Flags:
`

const doctorExamples = `
Exit status: 0 healthy, 1 a finding at WARN or ERROR (or a test failed),
2 usage error.

Examples:
  blast server                       # on the far host
  blast doctor 198.18.0.2
  blast doctor 198.18.0.2 -t 10 -J > doctor.json
  blast doctor 198.18.0.2 --plot doctor.svg
  blast doctor --offline /tmp/before --after /tmp/after
`

// doctorHelp is blast doctor's help, its flags from their definitions.
func doctorHelp() string { return doctorIntro + newDoctorFlags().fs.FlagUsages() + doctorExamples }

func runDoctor(e *env, args []string) int {
	cfg, o, offline, err := parseDoctor(args)
	jsonOut, plotFile := o.json, o.plot
	if errors.Is(err, pflag.ErrHelp) {
		io.WriteString(e.stdout, doctorHelp())
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "blast doctor: %s\n", safetext.Line(err.Error()))
		return exitUsage
	}
	if offline != nil {
		return runDoctorOffline(e, *offline, o)
	}
	if !jsonOut && !o.csv {
		cfg.Progress = func(s doctor.Step) {
			fmt.Fprintf(e.stderr, "doctor: %d/%d %s: %s\n", s.N, s.Of, s.Name, safetext.Line(s.Command))
		}
	}
	rep, err := doctor.Run(e.ctx, cfg)
	if err != nil {
		fmt.Fprintf(e.stderr, "blast doctor: %s\n", safetext.Line(err.Error()))
		return exitFailure
	}
	writeDoctor(e.stdout, rep, o)
	if plotFile != "" {
		if err := plot.Doctor(plotFile, rep); err != nil {
			fmt.Fprintf(e.stderr, "blast doctor: --plot %s: %v\n", plotFile, err)
			return exitFailure
		}
	}
	if e.ctx.Err() != nil {
		fmt.Fprintln(e.stderr, "blast doctor: interrupted")
		return exitFailure
	}
	if !rep.Healthy {
		return exitFailure
	}
	return exitOK
}

// offlineArgs is doctor --offline: a capture, maybe a second, an interface.
type offlineArgs struct {
	dir, after, iface string
}

// doctorOut is how the report is written: -J, --csv, --plot.
type doctorOut struct {
	json, csv bool
	plot      string
}

// writeDoctor writes the report as o asks.
func writeDoctor(w io.Writer, rep *doctor.Report, o doctorOut) {
	switch {
	case o.json:
		doctor.WriteJSON(w, rep)
	case o.csv:
		doctor.WriteCSV(w, rep)
	default:
		doctor.WriteText(w, rep)
	}
}

// doctorFlags are blast doctor's flags and where they land.
type doctorFlags struct {
	fs            *pflag.FlagSet
	o             doctorOut
	port, rate    string
	format        string
	secs          float64
	v4, v6, help  bool
	offDir, after string
}

// newDoctorFlags defines blast doctor's flags: the parser, the help, the
// completions and the man page all read these definitions.
func newDoctorFlags() *doctorFlags {
	f := &doctorFlags{fs: pflag.NewFlagSet("doctor", pflag.ContinueOnError)}
	fs := f.fs
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	fs.StringVarP(&f.port, "port", "p", "5201", "`PORT` of the blast server on HOST")
	fs.Float64VarP(&f.secs, "time", "t", 3, "length of each throughput test in `SECONDS`")
	fs.StringVarP(&f.rate, "bitrate", "b", "", "the UDP test's `RATE` in bits/s with K, M, G (default: from the TCP upload)")
	fs.BoolVarP(&f.v4, "version4", "4", false, "IPv4 only")
	fs.BoolVarP(&f.v6, "version6", "6", false, "IPv6 only")
	fs.StringVarP(&f.format, "format", "f", "", "`UNIT` of the rates in the text: k, m, g, t (bits/s) or K, M, G, T (bytes/s); default: SI bits as fits")
	fs.BoolVarP(&f.o.json, "json", "J", false, "the report as one JSON document")
	fs.StringVar(&f.o.plot, "plot", "", "draw the tests' rates and the verdict into `FILE` (.svg or .png)")
	fs.BoolVar(&f.o.csv, "csv", false, "CSV: a row per test, the verdict, a row per finding")
	fs.StringVar(&f.offDir, "offline", "", "no tests: run the interface rules over a capture in `DIR` (blast nic --capture DIR)")
	fs.StringVar(&f.after, "after", "", "with --offline: a second capture `DIR2`, for counter deltas")
	fs.BoolVarP(&f.help, "help", "h", false, "show this help")
	return f
}

func parseDoctor(args []string) (cfg doctor.Config, o doctorOut, off *offlineArgs, err error) {
	f := newDoctorFlags()
	fs := f.fs
	if err := fs.Parse(args); err != nil {
		return cfg, f.o, nil, fmt.Errorf("%s: run 'blast doctor -h' for the flags", flagError(err))
	}
	o = f.o
	port, rate, secs, v4, v6, help, offDir, after := f.port, f.rate, f.secs, f.v4, f.v6, f.help, f.offDir, f.after
	if help {
		return cfg, o, nil, pflag.ErrHelp
	}
	if o.json && o.csv {
		return cfg, o, nil, errors.New("--csv and -J: pick one output format")
	}
	if cfg.Unit, err = units.ParseFormat(f.format); err != nil {
		return cfg, o, nil, err
	}
	rest := fs.Args()
	if offDir != "" {
		for _, f := range []string{"port", "time", "bitrate", "version4", "version6", "plot", "format"} {
			if fs.Changed(f) {
				return cfg, o, nil, fmt.Errorf("--%s is for a run against a server: --offline runs no tests", f)
			}
		}
		if len(rest) > 1 {
			return cfg, o, nil, fmt.Errorf("too many arguments: %q: give at most one interface", strings.Join(rest, " "))
		}
		off = &offlineArgs{dir: offDir, after: after}
		if len(rest) == 1 {
			off.iface = rest[0]
		}
		return cfg, o, off, nil
	}
	if o.plot != "" {
		if err := plot.CheckPath(o.plot); err != nil {
			return cfg, o, nil, fmt.Errorf("--plot %s: the file name must end in .svg or .png", o.plot)
		}
	}
	if after != "" {
		return cfg, o, nil, errors.New("--after needs --offline: blast doctor --offline BEFORE --after AFTER")
	}
	switch len(rest) {
	case 0:
		return cfg, o, nil, errors.New("no host: blast doctor HOST (a blast server runs there: blast server), or --offline DIR")
	case 1:
		cfg.Host = rest[0]
	default:
		return cfg, o, nil, fmt.Errorf("too many arguments: %q: give one host", strings.Join(rest, " "))
	}
	if v4 && v6 {
		return cfg, o, nil, errors.New("-4 and -6 conflict: pick one address family, or neither")
	}
	if v4 {
		cfg.Family = "4"
	}
	if v6 {
		cfg.Family = "6"
	}
	if cfg.Port, err = parsePort(port, false); err != nil {
		return cfg, o, nil, err
	}
	if secs < 1 || secs > 3600 {
		return cfg, o, nil, fmt.Errorf("-t %g: give whole seconds from 1 to 3600 for each test", secs)
	}
	cfg.Duration = time.Duration(secs * float64(time.Second))
	if rate != "" {
		v, err := units.ParseBits(rate)
		if err != nil || !(v > 0 && v <= units.MaxRate) { // NaN, +Inf too
			return cfg, o, nil, fmt.Errorf("-b %s: give a positive rate in bits per second (100M, 1G)", rate)
		}
		cfg.UDPRate = v
	}
	return cfg, o, nil, nil
}

// runDoctorOffline runs the interface rules over a captured tree (and a
// second capture for counter deltas), and ranks every finding into one
// verdict, as a run against a server does.
func runDoctorOffline(e *env, o offlineArgs, out doctorOut) int {
	src, err := loadTree("--offline", o.dir)
	if err != nil {
		fmt.Fprintf(e.stderr, "blast doctor: %s\n", safetext.Line(err.Error()))
		return exitUsage
	}
	var after *nicinfo.Source
	if o.after != "" {
		if after, err = loadTree("--after", o.after); err != nil {
			fmt.Fprintf(e.stderr, "blast doctor: %s\n", safetext.Line(err.Error()))
			return exitUsage
		}
	}
	rep := &doctor.Report{Host: "offline " + o.dir, Tests: []doctor.Test{}}
	var lists [][]finding.Finding
	add := func(r *nicinfo.Result, err error) error {
		if err != nil {
			return err
		}
		rep.Interfaces = append(rep.Interfaces, r.Interface)
		lists = append(lists, r.Findings)
		return nil
	}
	err = func() error {
		if after == nil {
			names := []string{o.iface}
			if o.iface == "" {
				if names, err = src.Names(); err != nil {
					return err
				}
			}
			for _, n := range names {
				if err := add(nicinfo.Analyze(src, nil, n)); err != nil {
					return err
				}
			}
			return nil
		}
		// A card renamed between the captures is matched by its
		// permanent MAC and bus address, as blast nic does.
		p, err := nicinfo.Pair(src, after)
		if err != nil {
			return err
		}
		if o.iface != "" {
			m, err := p.Find(o.iface)
			if err != nil {
				return err
			}
			return add(p.Analyze(m))
		}
		for _, m := range p.Matches {
			if err := add(p.Analyze(m)); err != nil {
				return err
			}
		}
		for _, n := range p.New {
			if err := add(nicinfo.Analyze(after, nil, n)); err != nil {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		fmt.Fprintf(e.stderr, "blast doctor: %s\n", safetext.Line(err.Error()))
		return exitFailure
	}
	rep.Finish(lists)
	writeDoctor(e.stdout, rep, out)
	if !rep.Healthy {
		return exitFailure
	}
	return exitOK
}
