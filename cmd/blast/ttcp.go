package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/blastnet/blast/internal/clock"
	"github.com/blastnet/blast/internal/safetext"
	"github.com/blastnet/blast/plot"
	"github.com/blastnet/blast/report"
	"github.com/blastnet/blast/stats"
	"github.com/blastnet/blast/ttcp"
	"github.com/blastnet/blast/units"
)

func init() {
	register(command{name: "ttcp", summary: "classic ttcp mode (same as blast -t / blast -r)", run: runTTCP,
		flags: func() *pflag.FlagSet { return newTTCPFlags("blast").fs }})
}

// ttcpIntro and ttcpOutro frame ttcp mode's help, whose flags come from
// their definitions (newTTCPFlags); {prog} is the name blast was invoked
// as (blast or ttcp). Names of blast's other commands stay "blast": the
// ttcp link runs ttcp mode only, so "ttcp backends" would not work.
const ttcpIntro = `Usage: {prog} -t [options] HOST [< in]
       {prog} -r [options] [> out]
       {prog} -t -R [options] [< in]   and   {prog} -r -R [options] HOST [> out]
{also}
Classic ttcp: a plain TCP stream (or UDP with 4-byte sentinels) to port
5001, no control channel; works against any ttcp.

Options:
`

const ttcpOutro = `
There is no --rx-backend here: ttcp's two ends are two processes, and
each takes --backend. --rx-backend belongs where one process runs both
ends (blast compare).

Several transfers (--repeat, --confidence; TCP only, with -s or -F):
each is a connection of its own, reported in ttcp's lines, then one line
with the mean, spread and confidence interval of the throughput. The end
that listens (the receiver, or with -R the transmitter) keeps listening
from the first transfer to the last. With --repeat N both ends take N
transfers. With --confidence the end that connects decides when the
interval is narrow enough; the end that listens takes transfers (at
most --max-runs) until none comes within {wait} after the last one ends,
says so, and summarizes what it took. A classic ttcp makes one transfer
a run: run it once per transfer against {prog} -r -s --repeat N.

Examples:
  {prog} -r -s                       # sink on port 5001
  {prog} -t -s -n 100000 198.18.0.2  # send 800 MiB of pattern
  tar cf - dir | {prog} -t 198.18.0.2    and    {prog} -r -B | tar xf -
  {prog} -t -R -s                    # behind a NAT: wait for the receiver,
  {prog} -r -R -s 198.18.0.1         # which connects out to the transmitter
  {prog} -r -s -u --backend mmsg:batch=64,gro
  {prog} -t -s -u -l 64 -n 1000000 --backend mmsg:batch=64,gso 198.18.0.2
  {prog} -t --backend sendfile -F big.iso 198.18.0.2
  {prog} -r --verify   and   {prog} -t --verify -n 100000 198.18.0.2
  {prog} -r -s -u -I veth1 --backend afxdp
  {prog} -t -s -u -l 18 -n 1000000 --backend afxdp:queues=2 198.18.0.2
  {prog} -r -s --repeat 5   and   {prog} -t -s --repeat 5 --plot runs.svg 198.18.0.2
  {prog} -r -s --confidence 95,5   and   {prog} -t -s --confidence 95,5 --csv runs.csv 198.18.0.2
`

// helpFor renders ttcp mode's help for the name blast was invoked as.
func helpFor(prog string) string {
	also := "       (also: blast ttcp ..., or the binary invoked as ttcp)\n"
	if prog == "ttcp" {
		also = ""
	}
	r := strings.NewReplacer("{prog}", prog, "{also}", also, "{wait}", ttcpNextWait.String())
	return r.Replace(ttcpIntro) + newTTCPFlags(prog).fs.FlagUsages() + r.Replace(ttcpOutro)
}

// ttcpFlags are ttcp mode's flags and where they land.
type ttcpFlags struct {
	fs                              *pflag.FlagSet
	cfg                             ttcp.Config
	transmit, receive, v4, v6, help bool
	format, port, tos, rate         string
	backend, rxBackend, dstMAC      string
	rep                             repeatFlags
	csv                             string // --csv FILE, or - for standard output
	json                            bool
}

// ttcpNextWait is how long the end that listens waits for the next
// transfer of a --confidence run, after one ends, before it takes the
// peer to have stopped (a variable for tests).
var ttcpNextWait = 3 * time.Second

// ttcpClock times that wait (nil: the real clock; tests set a fake).
var ttcpClock clock.Clock

// ttcpRun is what ttcp mode does beside its Config: repetitions and the
// outputs of their results.
type ttcpRun struct {
	plan stats.Plan
	plot string
	csv  string // a file, or - for standard output; "" none
	json bool   // -J: one JSON document on standard output, the ttcp lines on standard error
}

// newTTCPFlags defines ttcp mode's flags for blast invoked as prog: the
// parser, the help, the completions and the man page all read these
// definitions.
func newTTCPFlags(prog string) *ttcpFlags {
	f := &ttcpFlags{cfg: ttcp.Defaults(), fs: pflag.NewFlagSet(prog, pflag.ContinueOnError)}
	fs, cfg := f.fs, &f.cfg
	cfg.Prog = prog
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	fs.BoolVarP(&f.transmit, "transmit", "t", false, "transmit to HOST (with -R: wait for the receiver to connect)")
	fs.BoolVarP(&f.receive, "receive", "r", false, "receive (with -R: connect to the transmitter on HOST)")
	fs.BoolVarP(&cfg.SinkMode, "sink", "s", false, "-t: send a pattern; -r: discard what arrives\n(without -s: standard input to standard output)")
	fs.BoolVarP(&cfg.UDP, "udp", "u", false, "UDP instead of TCP")
	fs.IntVarP(&cfg.BufLen, "buflen", "l", cfg.BufLen, "buffer length in bytes")
	fs.IntVarP(&cfg.NBuf, "nbuf", "n", cfg.NBuf, "buffers to send")
	fs.StringVarP(&f.port, "port", "p", strconv.Itoa(cfg.Port), "port number or service name")
	fs.IntVarP(&cfg.SockBuf, "sockbuf", "b", 0, "socket buffer size (SO_SNDBUF on -t, SO_RCVBUF on -r)")
	fs.BoolVarP(&cfg.NoDelay, "nodelay", "D", false, "TCP_NODELAY")
	fs.BoolVarP(&cfg.Debug, "debug", "d", false, "set SO_DEBUG (needs root)")
	fs.BoolVarP(&cfg.Blocks, "blocks", "B", false, "-r: write only whole -l blocks to standard output (for tar)")
	fs.BoolVarP(&cfg.Reverse, "reverse", "R", false, "reverse: the receiver connects (-r -R HOST), the transmitter listens\n(-t -R), e.g. out of a NAT; TCP only")
	fs.StringVarP(&f.format, "format", "f", "K", "`UNIT` of the rate: k, m, g (bits/s) or K, M, G (bytes/s)")
	fs.IntVarP(&cfg.Align, "align", "A", cfg.Align, "buffer alignment in bytes")
	fs.IntVarP(&cfg.Offset, "offset", "O", 0, "buffer offset from the alignment, in bytes")
	fs.BoolVarP(&cfg.Verbose, "verbose", "v", false, "verbose: CPU seconds, buffer address")
	fs.BoolVarP(&cfg.Touch, "touch", "T", false, "touch each byte received")
	fs.StringVarP(&f.tos, "tos", "S", "", "IP TOS byte (0x10 ...)")
	fs.BoolVarP(&f.v4, "ipv4", "4", false, "IPv4 only")
	fs.BoolVarP(&f.v6, "ipv6", "6", false, "IPv6 only")
	fs.StringVar(&f.backend, "backend", cfg.Backend, "how this end moves bytes, `NAME[:OPTS]` (see 'blast backends').\n"+
		"The transmitter's backend sends, the receiver's receives. OPTS,\n"+
		"comma-separated: batch=N (mmsg: datagrams per call; iouring: operations\n"+
		"per submission), gso and gro (mmsg), zc and multishot (iouring, afxdp),\n"+
		"file=PATH (sendfile, splice; same as -F), queues=N, threads=N and\n"+
		"dstmac=MAC (afxdp)")
	fs.StringVar(&f.rxBackend, "rx-backend", "", "refused: in ttcp mode each end is its own process and takes --backend")
	fs.MarkHidden("rx-backend")
	fs.StringVarP(&cfg.File, "file", "F", "", "-t: send `FILE`, to its end, with --backend sendfile or splice\n(instead of -s or standard input)")
	fs.StringVar(&f.rate, "rate", "", "pace the transmitter at `RATE`, bits/s with K, M, G (e.g. 100M)")
	fs.StringVarP(&cfg.Device, "interface", "I", "", "send and receive on interface `IFACE` only\n(afxdp: the interface its AF_XDP sockets and XDP program use)")
	fs.StringVar(&f.dstMAC, "dst-mac", "", "-t --backend afxdp: the frames' destination `MAC`\n(instead of the neighbour table's; same as afxdp:dstmac=MAC)")
	fs.BoolVar(&cfg.Verify, "verify", false, "send numbered, checksummed -l blocks (-t) and check them (-r)\n"+
		"(implies -s; give both ends --verify and the same -l): corrupt,\n"+
		"missing, duplicate and reordered blocks are counted, and any corrupt\n"+
		"or missing one (on TCP, any out of place) is an error, exit 1")
	addRepeatFlags(fs, &f.rep, "throughput")
	fs.StringVar(&f.csv, "csv", "", "also write the runs' throughput as CSV to `FILE` (- for standard\noutput, where the ttcp lines then go to standard error): a row per\nrun and the summary")
	fs.BoolVarP(&f.json, "json", "J", false, "one JSON document on standard output (the ttcp lines go to standard\nerror): the transfer, or with --repeat {runs, repeat}")
	fs.BoolVarP(&f.help, "help", "h", false, "show this help")
	return f
}

func runTTCP(e *env, args []string) int {
	prog := "blast"
	if e.argv0 == "ttcp" {
		prog = "ttcp"
	}
	cfg, tr, err := parseTTCPRun(args, prog)
	if errors.Is(err, pflag.ErrHelp) {
		io.WriteString(e.stdout, helpFor(prog))
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "%s: %v\n", prog, err)
		return exitUsage
	}
	cfg.Stdin, cfg.Stdout, cfg.Stderr = e.stdin, e.stdout, e.stderr
	side := prog + "-r"
	if cfg.Transmit {
		side = prog + "-t"
	}
	fail := func(err error) int {
		fmt.Fprintf(e.stderr, "%s: %v\n", side, err)
		if ttcp.IsUsage(err) {
			return exitUsage
		}
		return exitFailure
	}
	if tr.plan.IsZero() && tr.csv == "" && tr.plot == "" && !tr.json {
		if _, err := ttcp.Run(e.ctx, cfg); err != nil {
			return fail(err)
		}
		return exitOK
	}
	if tr.json {
		cfg.Stdout = e.stderr
	}

	// Several transfers, or one with its figure in a file.
	var csvOut io.Writer
	switch tr.csv {
	case "":
	case "-":
		csvOut, cfg.Stdout = e.stdout, e.stderr
	default:
		f, err := os.Create(tr.csv)
		if err != nil {
			fmt.Fprintf(e.stderr, "%s: --csv %s: %v\n", side, tr.csv, errors.Unwrap(err))
			return exitFailure
		}
		defer f.Close()
		csvOut = f
	}
	out := cfg.Stdout // the ttcp lines, and the runs' summary
	var runs []report.TTCPRun
	rr, lastErr, stopNote := runTTCPSession(e, cfg, tr.plan, out, func(r *report.TTCPResult) { runs = append(runs, r.JSON()) })
	if !tr.plan.IsZero() && rr.Runs > 0 {
		writeTTCPSummary(out, side, rr)
		if stopNote != "" {
			fmt.Fprintf(out, "%s: %s\n", side, stopNote)
		}
	}
	if csvOut != nil && rr.Runs > 0 {
		if err := stats.WriteCSV(csvOut, side, "bits_per_second", rr); err != nil && lastErr == nil {
			lastErr = fmt.Errorf("--csv %s: %w", tr.csv, err)
		}
	}
	if tr.json && len(runs) > 0 {
		var doc any = runs[0]
		if !tr.plan.IsZero() {
			doc = struct {
				Runs   []report.TTCPRun `json:"runs"`
				Repeat stats.Result     `json:"repeat"`
			}{runs, rr}
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil && lastErr == nil {
			lastErr = fmt.Errorf("-J: %w", err)
		}
	}
	if tr.plot != "" && rr.Runs > 0 {
		if err := plotTTCP(tr.plot, cfg, side, rr); err != nil && lastErr == nil {
			lastErr = fmt.Errorf("--plot %s: %w", tr.plot, err)
		}
	}
	if lastErr != nil {
		if !tr.plan.IsZero() && rr.Runs > 0 {
			lastErr = fmt.Errorf("run %d: %w", rr.Runs+1, lastErr)
		}
		return fail(lastErr)
	}
	return exitOK
}

// runTTCPSession runs the transfers plan asks for (one for the zero
// plan), each printing ttcp's lines to out after "== run N" (none for
// one), hands each transfer's result to each, and returns the throughput
// of each in bit/s, the error that ended them, and a note when the peer
// stopped a --confidence run.
func runTTCPSession(e *env, cfg ttcp.Config, plan stats.Plan, out io.Writer, each func(*report.TTCPResult)) (stats.Result, error, string) {
	if plan.IsZero() {
		rr, err := stats.Run(e.ctx, plan, func(int) (float64, error) {
			res, err := ttcp.Run(e.ctx, cfg)
			if err != nil || res == nil {
				return 0, err
			}
			each(res)
			return ttcpRate(res), nil
		})
		return rr, err, ""
	}
	sess, err := ttcp.NewSession(cfg)
	if err != nil {
		return stats.Result{}, err, ""
	}
	defer sess.Close()
	sess.Clock = ttcpClock
	listens := cfg.Transmit == cfg.Reverse
	var wait time.Duration
	if plan.Level != 0 && listens {
		// The peer decides when the interval is narrow enough: take its
		// transfers until it stops.
		plan.Follow, wait = true, ttcpNextWait
	}
	stopped := ""
	rr, err := stats.Run(e.ctx, plan, func(i int) (float64, error) {
		fmt.Fprintf(out, "== run %d\n", i+1)
		res, err := sess.Next(e.ctx, wait)
		if errors.Is(err, ttcp.ErrNoTransfer) {
			side, peer := cfg.Prog+"-r", "transmitter"
			if cfg.Transmit {
				side, peer = cfg.Prog+"-t", "receiver"
			}
			stopped = fmt.Sprintf("no transfer within %s after run %d: the %s has stopped", wait, i, peer)
			fmt.Fprintf(out, "%s: %s\n", side, stopped)
			return 0, stats.ErrDone
		}
		if err != nil || res == nil {
			return 0, err
		}
		each(res)
		return ttcpRate(res), nil
	})
	if stopped != "" {
		stopped = ""
		if note := rr.Note(); note == "" && !rr.Met {
			stopped = fmt.Sprintf("the peer stopped after %d runs with the %s interval at ±%s, wider than ±%s",
				rr.Runs, stats.LevelPercent(rr.Summary.Level), stats.Percent(rr.Summary.HalfWidthPct), stats.Percent(rr.Plan.Width/2))
		}
	}
	return rr, err, stopped
}

// ttcpRate is a transfer's throughput in bit/s, over ttcp's timed section.
func ttcpRate(r *report.TTCPResult) float64 {
	if r.Real <= 0 {
		return 0
	}
	return float64(r.Bytes) * 8 / r.Real.Seconds()
}

// writeTTCPSummary writes the line after the runs, in the words of the
// other modes' (stats.Summary.Line), and why a --confidence run stopped
// short of its width.
func writeTTCPSummary(w io.Writer, side string, rr stats.Result) {
	fmt.Fprintf(w, "\n%s: throughput: %s\n", side, rr.Summary.Line(units.SIRate))
	if note := rr.Note(); note != "" {
		fmt.Fprintf(w, "%s: %s\n", side, note)
	}
}

// plotTTCP draws the runs' throughput into path.
func plotTTCP(path string, cfg ttcp.Config, side string, rr stats.Result) error {
	var title string
	switch {
	case cfg.Transmit && cfg.Reverse:
		title = fmt.Sprintf("%s -t -R on port %d", cfg.Prog, cfg.Port)
	case cfg.Transmit:
		title = fmt.Sprintf("%s -t -> %s", cfg.Prog, cfg.Host)
	case cfg.Reverse:
		title = fmt.Sprintf("%s -r -R -> %s", cfg.Prog, cfg.Host)
	default:
		title = fmt.Sprintf("%s -r on port %d", cfg.Prog, cfg.Port)
	}
	title += ": TCP"
	if cfg.Transmit && !cfg.SendsFile() {
		title += fmt.Sprintf(", %d buffers of %d bytes a run", cfg.NBuf, cfg.BufLen)
	}
	runs := "runs"
	if rr.Runs == 1 {
		runs = "run"
	}
	title += fmt.Sprintf(", %d %s", rr.Runs, runs)
	s := rr.Summary
	var iv *plot.Interval
	caption := []string{fmt.Sprintf("Throughput of each run at this end (%s), over ttcp's timed section.", side)}
	if s.HasInterval() {
		iv = &plot.Interval{Low: s.Low, High: s.High}
		caption = append(caption, fmt.Sprintf("The band is the %s confidence interval of the mean (±%s); sd %s.",
			stats.LevelPercent(s.Level), stats.Percent(s.HalfWidthPct), units.SIRate(s.StdDev)))
	}
	if note := rr.Note(); note != "" {
		caption = append(caption, strings.ToUpper(note[:1])+note[1:]+".")
	}
	return plot.Runs(path, rr.Values, s.Mean, iv, title, caption...)
}

// parseTTCP turns ttcp's command line into a Config.
func parseTTCP(args []string, prog string) (ttcp.Config, error) {
	cfg, _, err := parseTTCPRun(args, prog)
	return cfg, err
}

// parseTTCPRun turns ttcp's command line into a Config and what runs
// beside it: repetitions, --csv and --plot.
func parseTTCPRun(args []string, prog string) (_ ttcp.Config, tr ttcpRun, err error) {
	defer func() { err = printable(err) }()
	f := newTTCPFlags(prog)
	fs := f.fs
	if err := fs.Parse(args); err != nil {
		return f.cfg, tr, fmt.Errorf("%s: run '%s -h' for the options", flagError(err), prog)
	}
	cfg := f.cfg
	transmit, receive, v4, v6, help := f.transmit, f.receive, f.v4, f.v6, f.help
	format, port, tos, rate := f.format, f.port, f.tos, f.rate
	backend, rxBackend, dstMAC := f.backend, f.rxBackend, f.dstMAC
	if help {
		return cfg, tr, pflag.ErrHelp
	}
	if cfg.Verify {
		cfg.SinkMode = true // the blocks take the pattern's place
	}
	switch {
	case transmit && receive:
		return cfg, tr, errors.New("-t and -r conflict: transmit (-t HOST) or receive (-r), not both")
	case !transmit && !receive:
		return cfg, tr, fmt.Errorf("say -t HOST to transmit or -r to receive: run '%s -h' for the options", prog)
	case v4 && v6:
		return cfg, tr, errors.New("-4 and -6 conflict: choose one address family, or neither for both")
	}
	if fs.Changed("rx-backend") {
		return cfg, tr, fmt.Errorf("--rx-backend %s: in ttcp mode each end is its own process: give the receiver --backend %s (%s -r --backend %s); --rx-backend is for blast compare, where one process runs both ends", rxBackend, rxBackend, prog, rxBackend)
	}
	name, opts, hasOpts := strings.Cut(backend, ":")
	cfg.Backend = name
	if hasOpts {
		cfg.BackendOpts = opts
	}
	if fs.Changed("dst-mac") {
		mac, err := net.ParseMAC(dstMAC)
		switch {
		case err != nil || len(mac) != 6:
			return cfg, tr, fmt.Errorf("--dst-mac %s: not an Ethernet address (e.g. 02:00:00:00:00:01)", dstMAC)
		case !transmit:
			return cfg, tr, fmt.Errorf("--dst-mac %s: only the transmitter (-t) builds frames; drop it on the receiver", dstMAC)
		}
		cfg.DstMAC = mac.String()
	}
	cfg.Transmit = transmit
	if v4 {
		cfg.Family = 4
	} else if v6 {
		cfg.Family = 6
	}
	rest := fs.Args()
	if len(rest) > 1 {
		return cfg, tr, fmt.Errorf("too many arguments: %q: give one host", strings.Join(rest, " "))
	}
	if len(rest) == 1 {
		cfg.Host = rest[0]
	}
	if len(format) != 1 {
		return cfg, tr, fmt.Errorf("-f %s: unknown format: use k, m, g (kilo/mega/gigabits) or K, M, G (bytes)", format)
	}
	cfg.Format = format[0]
	p, err := parsePort(port, cfg.UDP)
	if err != nil {
		return cfg, tr, err
	}
	cfg.Port = p
	if tos != "" {
		v, err := strconv.ParseUint(tos, 0, 8)
		if err != nil {
			return cfg, tr, fmt.Errorf("-S %s: the TOS byte is a number from 0 to 255 (0x10, 16, 020)", tos)
		}
		cfg.TOS = int(v)
	}
	if rate != "" {
		r, err := units.ParseBits(rate)
		if err != nil {
			return cfg, tr, fmt.Errorf("--rate %s: a rate is bits per second, a number with an optional K, M or G (e.g. 100M)", rate)
		}
		cfg.Rate = r
	}
	if err := cfg.Validate(); err != nil {
		return cfg, tr, err
	}
	return cfg, tr, f.runFlags(cfg, &tr)
}

// runFlags checks the flags of repetition and output against cfg into tr.
func (f *ttcpFlags) runFlags(cfg ttcp.Config, tr *ttcpRun) error {
	plan, err := f.rep.plan()
	if err != nil {
		return err
	}
	tr.plan, tr.plot, tr.csv, tr.json = plan, f.rep.plot, f.csv, f.json
	if f.fs.Changed("csv") && f.csv == "" {
		return errors.New("--csv \"\": give a file, or - for standard output")
	}
	switch {
	case f.json && f.csv == "-":
		return errors.New("-J and --csv - both write to standard output: give --csv a file")
	case f.json && !cfg.Transmit && !cfg.SinkMode:
		return errors.New("-J and -r without -s both write to standard output: add -s")
	}
	if f.csv == "-" && !cfg.Transmit && !cfg.SinkMode {
		return errors.New("--csv - and -r without -s both write to standard output: give --csv a file, or add -s")
	}
	if plan.IsZero() {
		return nil
	}
	switch {
	case cfg.Transmit && !cfg.SinkMode && !cfg.SendsFile():
		return errors.New("--repeat and --confidence need -s or -F on the transmitter: standard input is read once, by the first transfer")
	case !cfg.Transmit && !cfg.SinkMode:
		return errors.New("--repeat and --confidence need -s on the receiver: without it the transfers would go to standard output one after another")
	}
	_, err = ttcp.NewSession(cfg)
	return err
}

// parsePort takes a port number or a service name, as ttcp does.
func parsePort(s string, udp bool) (int, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 || n > 65535 {
			return 0, fmt.Errorf("-p %s: a port is a number from 1 to 65535", s)
		}
		return n, nil
	}
	network := "tcp"
	if udp {
		network = "udp"
	}
	n, err := net.LookupPort(network, s)
	if err != nil {
		return 0, fmt.Errorf("-p %s: not a port number or a known service name", s)
	}
	return n, nil
}

// flagError keeps pflag's message to one line, without Go's parser detail.
// A whole number too large for its flag says so, with the limit, where
// pflag would say "must be an integer".
func flagError(err error) string { return safetext.Line(flagText(err)) }

// flagText is flagError's text, before escaping.
func flagText(err error) string {
	var bad *pflag.InvalidValueError
	if errors.As(err, &bad) {
		name := "--" + bad.GetFlag().Name
		if sh := bad.GetFlag().Shorthand; sh != "" {
			name = "-" + sh
		}
		v := bad.GetValue()
		_, ierr := strconv.ParseInt(v, 0, 64)
		_, ferr := strconv.ParseFloat(v, 64)
		switch {
		case errors.Is(ierr, strconv.ErrRange) && strings.HasPrefix(v, "-"):
			return fmt.Sprintf("%s %s: too small for a 64-bit number (at least %d)", name, v, int64(math.MinInt64))
		case errors.Is(ierr, strconv.ErrRange):
			return fmt.Sprintf("%s %s: too large for a 64-bit number (at most %d)", name, v, int64(math.MaxInt64))
		case errors.Is(ferr, strconv.ErrRange):
			return fmt.Sprintf("%s %s: out of range for a 64-bit number", name, v)
		}
	}
	msg := err.Error()
	if i := strings.Index(msg, ": strconv."); i > 0 {
		msg = msg[:i]
	}
	return msg
}

// printableError is an error whose text quotes the command line (a value
// with a newline or an escape sequence in it), escaped so that it stays
// one line and cannot drive the terminal.
type printableError struct{ err error }

func (e printableError) Error() string { return safetext.Line(e.err.Error()) }
func (e printableError) Unwrap() error { return e.err }

// printable wraps err as a printableError (nil stays nil).
func printable(err error) error {
	if err == nil || errors.Is(err, pflag.ErrHelp) {
		return err
	}
	return printableError{err}
}
