package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/blastnet/blast/control"
	"github.com/blastnet/blast/control/render"
	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/internal/safetext"
	"github.com/blastnet/blast/plot"
	"github.com/blastnet/blast/stats"
	"github.com/blastnet/blast/units"
)

func init() {
	register(command{name: "client", summary: "measure against a blast or iperf3 server (iperf3's -c)", run: runClient, flags: func() *pflag.FlagSet { return newClientFlags().fs }})
}

const clientExamples = `
Works against 'blast server' and any 'iperf3 -s'. Every flag of iperf3 3.21's
client is here; the few blast refuses say why.

Examples:
  blast client 10.0.0.2                 10 s, one stream, client sends
  blast -c 10.0.0.2 -P 4 -t 30 -R       four streams for 30 s, server sends
  blast client 10.0.0.2 --bidir -J      both ways, iperf3's JSON
  blast client 10.0.0.2 -n 1G -w 4M     one GiByte with 4 MiB socket buffers
  blast -c 10.0.0.2 -F big.iso          send a file; -R -F copy.iso receives one
  blast -c 10.0.0.2 -V -f m --logfile run.log --timestamps
  blast client 10.0.0.2 --repeat 5 --plot run.png
                                        five runs, their mean and interval, a picture
  IPERF3_PASSWORD=rossi blast -c 10.0.0.2 --username mario --rsa-public-key-path public.pem
                                        to a server that authenticates (add
                                        --use-pkcs1-padding for iperf3 up to 3.16)
`

// clientFlags are the command line of blast client, iperf3's client flags
// and blast's own.
type clientFlags struct {
	fs  *pflag.FlagSet
	rep repeatFlags
	csv bool

	host, bytes, blocks, window, tos, dscp, rate, fqRate, pacingTimer, length   string
	cc, title, backend, rxBackend, format, pidfile, file, affinity, bind        string
	bindDev, logfile, timestamps, cntlKA, flowLabel, extraData                  string
	port, secs, parallel, omit, mss, connTimeout, cport, rcvTimeout, sndTimeout int
	debug                                                                       int
	interval                                                                    float64

	reverse, bidir, nodelay, udp, dontFrag, udp64, zerocopy, v4, v6, json, sys bool
	serverOut, help, verbose, version, jsonStream, jsonStreamFull              bool
	forceflush, repeating, skipRxCopy, gsro, mptcp, noFQPacing                 bool
	verify                                                                     bool

	auth *clientAuthFlags // --username, --rsa-public-key-path, --use-pkcs1-padding

	// refused are iperf3's flags blast does not take, with the reason.
	refused []refusedFlag
}

// refusedFlag is an iperf3 flag blast refuses: its name, and why.
type refusedFlag struct {
	names, why string
}

// iperf3's flags blast client refuses, in iperf3's words (iperf_error.c)
// and with the reason. They are registered (hidden) so that the refusal
// names them, instead of pflag's "unknown flag".
var refusedClientFlags = []struct {
	long, short string
	value       bool
	why         string
}{
	{"server", "s", false, "cannot be both server and client: run 'blast server' (or blast -s)"},
	{"daemon", "D", false, "some option you are trying to set is server only: run 'blast server'"},
	{"one-off", "1", false, "some option you are trying to set is server only: run 'blast server -1'"},
	{"server-bitrate-limit", "", true, "some option you are trying to set is server only"},
	{"idle-timeout", "", true, "some option you are trying to set is server only"},
	{"server-max-duration", "", true, "some option you are trying to set is server only"},
	{"rsa-private-key-path", "", true, "some option you are trying to set is server only: run 'blast server'"},
	{"authorized-users-path", "", true, "some option you are trying to set is server only: run 'blast server'"},
	{"time-skew-threshold", "", true, "some option you are trying to set is server only: run 'blast server'"},
	{"sctp", "", false, "an option you are trying to set is not implemented yet: blast moves TCP and UDP, not SCTP"},
	{"nstreams", "", true, "an option you are trying to set is not implemented yet: SCTP streams (blast has no SCTP)"},
	{"xbind", "X", true, "an option you are trying to set is not implemented yet: SCTP multi-homing (blast has no SCTP)"},
}

func newClientFlags() *clientFlags {
	f := &clientFlags{fs: pflag.NewFlagSet("client", pflag.ContinueOnError)}
	fs := f.fs
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	fs.StringVarP(&f.host, "client", "c", "", "server to connect to, HOST[%DEV] (or give it as the argument)")
	fs.IntVarP(&f.port, "port", "p", wire.DefaultPort, "server port")
	fs.StringVarP(&f.format, "format", "f", "", "unit of the Bitrate column: k, m, g, t (bits/s) or K, M, G, T (bytes/s)")
	fs.Float64VarP(&f.interval, "interval", "i", 1, "seconds between interval reports (0: none)")
	fs.StringVarP(&f.pidfile, "pidfile", "I", "", "write the process id to this file while the test runs")
	fs.StringVarP(&f.file, "file", "F", "", "send this file (or, with -R, write what arrives to it)")
	fs.StringVarP(&f.affinity, "affinity", "A", "", "N[,M]: pin the client's stream threads to CPU N; ask the server for CPU M")
	fs.StringVarP(&f.bind, "bind", "B", "", "ADDR[%DEV]: local address (and interface) of the control and data connections")
	fs.StringVar(&f.bindDev, "bind-dev", "", "bind the connections to this interface (SO_BINDTODEVICE)")
	fs.BoolVarP(&f.verbose, "verbose", "V", false, "iperf3's verbose lines, the CPU and congestion lines, blast's backend and NIC lines")
	fs.BoolVarP(&f.json, "json", "J", false, "iperf3's JSON output (with blast additions under \"blast\")")
	fs.BoolVar(&f.jsonStream, "json-stream", false, "one JSON event per line as the test runs (iperf3 3.17's format)")
	fs.BoolVar(&f.jsonStreamFull, "json-stream-full-output", false, "with --json-stream, also the whole JSON document at the end")
	fs.StringVar(&f.logfile, "logfile", "", "append the output to this file instead of standard output")
	fs.BoolVar(&f.forceflush, "forceflush", false, "write the log file at every interval (standard output always is)")
	fs.StringVar(&f.timestamps, "timestamps", "", "start every line with the time, in this strftime format")
	fs.Lookup("timestamps").NoOptDefVal = control.DefaultTimestampFormat
	fs.IntVar(&f.rcvTimeout, "rcv-timeout", 0, "milliseconds without data before a receiving client gives up (default 120000)")
	fs.IntVar(&f.sndTimeout, "snd-timeout", 0, "milliseconds sent data may stay unacknowledged (TCP_USER_TIMEOUT; default: the system's)")
	fs.StringVar(&f.cntlKA, "cntl-ka", "", "TCP keepalive on the control connection, [KEEPIDLE/KEEPINTV/KEEPCNT]")
	fs.Lookup("cntl-ka").NoOptDefVal = "//"
	fs.BoolVarP(&f.mptcp, "mptcp", "m", false, "Multipath TCP data streams")
	fs.IntVarP(&f.debug, "debug", "d", 0, "iperf3's debug lines, level 1 to 4 (-d alone: 4)")
	fs.Lookup("debug").NoOptDefVal = "4"
	fs.BoolVarP(&f.version, "version", "v", false, "show the version and quit")
	fs.BoolVarP(&f.udp, "udp", "u", false, "UDP streams, with iperf3's datagram header (loss, jitter, reordering)")
	fs.IntVar(&f.connTimeout, "connect-timeout", 0, "milliseconds to wait for the connection (0: the system's)")
	fs.StringVarP(&f.rate, "bitrate", "b", "", "target bitrate per stream, RATE[/BURST] (k/m/g, 1000-based; 0: unlimited; default 1M for UDP, unlimited for TCP)")
	fs.StringVar(&f.rate, "bandwidth", "", "the same as -b")
	fs.StringVar(&f.pacingTimer, "pacing-timer", "", "accepted for iperf3's scripts: blast paces every buffer to its due time, there is no timer to set")
	fs.StringVar(&f.fqRate, "fq-rate", "", "cap each stream in the kernel (SO_MAX_PACING_RATE), bits/s with k/m/g")
	fs.BoolVar(&f.noFQPacing, "no-fq-socket-pacing", false, "deprecated (iperf3 3.x): turns --fq-rate off")
	fs.IntVarP(&f.secs, "time", "t", 10, "seconds to transmit for")
	fs.StringVarP(&f.bytes, "bytes", "n", "", "bytes to transmit instead of -t (K/M/G/T suffixes, 1024-based)")
	fs.StringVarP(&f.blocks, "blockcount", "k", "", "blocks (-l each) to transmit instead of -t")
	fs.StringVarP(&f.length, "length", "l", "", "bytes per read/write (default 128K for TCP; for UDP the control connection's MSS, as iperf3)")
	fs.IntVar(&f.cport, "cport", 0, "local port of the data streams (stream i takes PORT+i)")
	fs.IntVarP(&f.parallel, "parallel", "P", 1, "parallel streams (1-128)")
	fs.BoolVarP(&f.reverse, "reverse", "R", false, "the server sends, the client receives")
	fs.BoolVar(&f.bidir, "bidir", false, "both send at once")
	fs.StringVarP(&f.window, "window", "w", "", "socket buffer size on both ends (K/M suffixes)")
	fs.StringVarP(&f.cc, "congestion", "C", "", "TCP congestion control algorithm")
	fs.StringVar(&f.cc, "linux-congestion", "", "the same as -C")
	fs.IntVarP(&f.mss, "set-mss", "M", 0, "TCP maximum segment size")
	fs.BoolVarP(&f.nodelay, "no-delay", "N", false, "TCP_NODELAY (blast sets it on every data stream anyway; accepted for iperf3's scripts)")
	fs.BoolVarP(&f.v4, "version4", "4", false, "IPv4 only")
	fs.BoolVarP(&f.v6, "version6", "6", false, "IPv6 only")
	fs.StringVarP(&f.tos, "tos", "S", "", "IP TOS byte (0x hex accepted)")
	fs.StringVar(&f.dscp, "dscp", "", "DSCP value or name (EF, AF11, CS1...)")
	fs.StringVarP(&f.flowLabel, "flowlabel", "L", "", "IPv6 flow label of the data streams (1 to 0xfffff)")
	fs.BoolVarP(&f.zerocopy, "zerocopy", "Z", false, "send with sendfile (the sendfile backend) on both ends")
	fs.BoolVar(&f.skipRxCopy, "skip-rx-copy", false, "receive with MSG_TRUNC (the trunc backend) on both ends, without copying the data")
	fs.IntVarP(&f.omit, "omit", "O", 0, "seconds at the start to leave out of the results")
	fs.StringVarP(&f.title, "title", "T", "", "prefix every output line with this")
	fs.StringVar(&f.extraData, "extra-data", "", "a string to carry in the JSON of both ends")
	fs.BoolVar(&f.serverOut, "get-server-output", false, "show the server's own report")
	fs.BoolVar(&f.udp64, "udp-counters-64bit", false, "64-bit datagram sequence numbers (UDP)")
	fs.BoolVar(&f.gsro, "gsro", false, "UDP GSO and GRO on both ends (blast's UDP default, mmsg:gso,gro; also asks an iperf3 3.21 server)")
	fs.BoolVar(&f.repeating, "repeating-payload", false, "send iperf3's repeating '0'..'9' payload instead of blast's pattern, on both ends")
	fs.BoolVar(&f.verify, "verify", false, "send numbered, checksummed blocks and check them at the receiver, both ways: corrupt, missing, duplicate and reordered blocks are counted, and any corrupt or missing one fails the test (exit 1); needs a blast server")
	fs.BoolVar(&f.dontFrag, "dont-fragment", false, "set the IP don't-fragment bit (UDP)")
	fs.BoolVar(&f.sys, "sys", false, "add the host's load to every interval and the summary: CPU us/sy/id, interrupts/s, context switches/s, the interface's packets/s (the server's too, if it is blast)")
	fs.StringVar(&f.backend, "backend", "", "how to send, NAME[:OPTIONS] (see 'blast backends'; readwrite by default); the server sends with it too")
	fs.StringVar(&f.rxBackend, "rx-backend", "", "how to receive (default: --backend, or readwrite if that only sends)")
	f.auth = addClientAuthFlags(fs)
	addRepeatFlags(fs, &f.rep, "receivers' throughput")
	fs.BoolVar(&f.csv, "csv", false, "CSV instead of text: a row per stream per interval and the totals (with --repeat or --confidence: a row per run and the summary)")
	fs.BoolVarP(&f.help, "help", "h", false, "show this help")
	for _, name := range []string{"bandwidth", "linux-congestion", "no-fq-socket-pacing"} {
		fs.MarkHidden(name)
	}
	for _, r := range refusedClientFlags {
		if r.value {
			fs.StringP(r.long, r.short, "", r.why)
		} else {
			fs.BoolP(r.long, r.short, false, r.why)
		}
		fs.MarkHidden(r.long)
	}
	return f
}

// refusal names the first refused flag given, with the reason.
func (f *clientFlags) refusal() string {
	for _, r := range refusedClientFlags {
		if f.fs.Changed(r.long) {
			name := "--" + r.long
			if r.short != "" {
				name = "-" + r.short + "/" + name
			}
			return name + ": " + r.why
		}
	}
	return ""
}

// clientRun is what runClient needs besides the Config: where the output
// goes and how it looks.
type clientRun struct {
	text       render.Text
	json       bool
	jsonStream bool
	jsonFull   bool
	title      string
	timestamps string
	logfile    string
	forceflush bool
	pidfile    string
	warnings   []string
	// plan repeats the test (--repeat, --confidence); plot draws it;
	// csv writes CSV instead of text.
	plan stats.Plan
	plot string
	csv  bool
}

func runClient(e *env, args []string) int {
	f := newClientFlags()
	if err := f.fs.Parse(args); err != nil {
		fmt.Fprintf(e.stderr, "blast client: %s: run 'blast help client' for the flags\n", flagError(err))
		return exitUsage
	}
	if f.version {
		writeVersion(e.stdout)
		return exitOK
	}
	if f.help {
		fmt.Fprintf(e.stdout, "Usage: blast client HOST [flags]   (or blast -c HOST [flags])\n\n%s%s", f.fs.FlagUsages(), clientExamples)
		return exitOK
	}
	cfg, run, err := f.config(e.ctx)
	if err != nil {
		fmt.Fprintf(e.stderr, "blast client: %s\n", safetext.Line(err.Error()))
		return exitUsage
	}
	return runClientTest(e, cfg, run)
}

// config turns the flags into the test's Config and the output's
// settings; its errors are usage errors.
func (f *clientFlags) config(ctx context.Context) (control.Config, *clientRun, error) {
	fs := f.fs
	fail := func(format string, a ...any) (control.Config, *clientRun, error) {
		return control.Config{}, nil, fmt.Errorf(format, a...)
	}
	if why := f.refusal(); why != "" {
		return fail("%s", why)
	}
	rest := fs.Args()
	switch {
	case f.host == "" && len(rest) == 1:
		f.host = rest[0]
	case f.host == "" && len(rest) == 0:
		return fail("no server given: blast client HOST (or blast -c HOST)")
	case len(rest) > 0:
		return fail("unexpected argument %q: flags go before or after HOST, and only one HOST", rest[0])
	}
	host, hostDev := control.ParseBind(f.host)
	if f.port < 1 || f.port > 65535 {
		return fail("-p %d: port number must be between 1 and 65535 inclusive", f.port)
	}
	cfg := control.Config{
		Host: host, Port: f.port, Duration: time.Duration(f.secs) * time.Second, Parallel: f.parallel,
		Reverse: f.reverse, Bidir: f.bidir, Interval: time.Duration(f.interval * float64(time.Second)),
		Omit: time.Duration(f.omit) * time.Second, MSS: f.mss, NoDelay: f.nodelay, Congestion: f.cc,
		ZeroCopy: f.zerocopy, Title: f.title, GetServerOutput: f.serverOut,
		ConnectTimeout: time.Duration(f.connTimeout) * time.Millisecond,
		BindDev:        hostDev, File: f.file, RepeatingPayload: f.repeating, ExtraData: f.extraData,
		SkipRxCopy: f.skipRxCopy, GSRO: f.gsro, MPTCP: f.mptcp, Verify: f.verify,
	}
	run := &clientRun{text: render.Text{Verbose: f.verbose}, json: f.json || f.jsonStream, jsonStream: f.jsonStream,
		jsonFull: f.jsonStreamFull, title: f.title, timestamps: f.timestamps, logfile: f.logfile,
		forceflush: f.forceflush, pidfile: f.pidfile}
	plan, perr := f.rep.plan()
	if perr != nil {
		return fail("%v", perr)
	}
	run.plan, run.plot, run.csv = plan, f.rep.plot, f.csv
	if f.csv && (f.json || f.jsonStream) {
		return fail("--csv and -J (or --json-stream): pick one output format")
	}
	if !run.plan.IsZero() && f.jsonStream {
		return fail("--json-stream with --repeat or --confidence: the events of several tests make no one stream; use -J (one document with every run and the summary)")
	}
	// --backend NAME:OPTIONS, as in ttcp mode.
	cfg.Backend, cfg.BackendOptions, _ = strings.Cut(f.backend, ":")
	cfg.RxBackend, cfg.RxBackendOptions, _ = strings.Cut(f.rxBackend, ":")
	if err := f.checkNumbers(); err != nil {
		return control.Config{}, nil, err
	}
	var err error
	if f.bytes != "" {
		if cfg.Bytes, err = units.ParseSizeFlag("-n", f.bytes, "a byte count such as 100M or 1G", false); err != nil {
			return fail("%v", err)
		}
	}
	if f.blocks != "" {
		if cfg.Blocks, err = units.ParseSizeFlag("-k", f.blocks, "a block count such as 1000 or 10K", false); err != nil {
			return fail("%v", err)
		}
	}
	if (cfg.Bytes > 0 || cfg.Blocks > 0) && fs.Changed("time") {
		return fail("-t with -n or -k: only one test end condition (-t, -n, -k) may be specified")
	}
	if f.window != "" {
		w, err := units.ParseSizeFlag("-w", f.window, "a size such as 256K or 4M", true)
		if err != nil {
			return fail("%v", err)
		}
		cfg.Window = int(min(w, math.MaxInt))
	}
	if f.length != "" {
		l, err := units.ParseSizeFlag("-l", f.length, "a size such as 128K (TCP) or 1400 (UDP)", false)
		if err != nil {
			return fail("%v", err)
		}
		cfg.BlockLen = int(min(l, math.MaxInt)) // Validate says what -l may be
	}
	cfg.UDP, cfg.DontFragment, cfg.UDP64, cfg.Sys = f.udp, f.dontFrag, f.udp64, f.sys
	if f.rate != "" {
		if cfg.Rate, cfg.Burst, err = units.ParseRate(f.rate); err != nil {
			return fail("%v", err)
		}
		cfg.RateSet = true
	}
	if f.fqRate != "" {
		r, _, err := units.ParseRate(f.fqRate)
		if err != nil || strings.Contains(f.fqRate, "/") {
			return fail("--fq-rate %q: want a rate such as 100M or 1G", f.fqRate)
		}
		cfg.FQRate = int64(r)
	}
	if f.noFQPacing {
		run.warnings = append(run.warnings, "Warning:  --no-fq-socket-pacing is deprecated")
		cfg.FQRate = 0
	}
	if f.pacingTimer != "" {
		if _, err := strconv.ParseUint(strings.TrimRight(f.pacingTimer, "kKmMgG"), 10, 32); err != nil {
			return fail("--pacing-timer %q: want microseconds such as 1000", f.pacingTimer)
		}
	}
	if f.tos != "" && f.dscp != "" {
		return fail("-S and --dscp both given: choose one")
	}
	if f.tos != "" {
		if cfg.TOS, err = units.ParseTOS(f.tos); err != nil {
			return fail("%v", err)
		}
	}
	if f.dscp != "" {
		if cfg.TOS, err = units.ParseDSCP(f.dscp); err != nil {
			return fail("%v", err)
		}
	}
	switch {
	case f.v4 && f.v6:
		return fail("-4 and -6 both given: choose one")
	case f.v4:
		cfg.Family = "4"
	case f.v6:
		cfg.Family = "6"
	}
	if err := f.clientOptions(ctx, &cfg, run); err != nil {
		return control.Config{}, nil, err
	}
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return fail("%v", err)
	}
	if err := cfg.CheckBackends(); err != nil {
		return fail("%v", err)
	}
	if cfg.Auth, err = f.auth.config(ctx); err != nil {
		return fail("%v", err)
	}
	return cfg, run, nil
}

// clientOptions reads the flags iperf3 3.x added to the client over the
// years (output, binding, timeouts, files, affinity) into cfg and run.
func (f *clientFlags) clientOptions(ctx context.Context, cfg *control.Config, run *clientRun) error {
	fs := f.fs
	if f.format != "" {
		if !units.ValidFormat(f.format[0]) {
			return fmt.Errorf("-f %s: bad format specifier (valid formats are in the set [kmgtKMGT])", f.format)
		}
		run.text.Format = f.format[0] // iperf3 reads the first letter: -f mbits is -f m
	}
	if fs.Changed("debug") {
		cfg.DebugLevel = min(max(f.debug, 1), 4)
		if f.debug < 0 {
			cfg.DebugLevel = 4 // iperf3: a negative level is the most
		}
	}
	if f.bind != "" {
		addr, dev := control.ParseBind(f.bind)
		a, err := netip.ParseAddr(addr)
		if err != nil {
			ips, lerr := net.DefaultResolver.LookupNetIP(ctx, "ip", addr)
			if lerr != nil || len(ips) == 0 {
				return fmt.Errorf("-B %s: not an address, and the name does not resolve: %v", f.bind, lerr)
			}
			a = ips[0]
		}
		cfg.Bind = a.Unmap()
		if dev != "" {
			cfg.BindDev = dev
		}
	}
	if f.bindDev != "" {
		cfg.BindDev = f.bindDev
	}
	if fs.Changed("cport") {
		if f.cport < 1 || f.cport > 65535 {
			return fmt.Errorf("--cport %d: port number must be between 1 and 65535 inclusive", f.cport)
		}
		cfg.CPort = f.cport
	}
	if fs.Changed("affinity") {
		a, err := parseAffinity(f.affinity)
		if err != nil {
			return err
		}
		cfg.Affinity, cfg.ServerAffinity = []int{a.cpu}, a.server
		if a.warning != "" {
			run.warnings = append(run.warnings, a.warning)
		}
	}
	if f.flowLabel != "" {
		l, err := strconv.ParseInt(f.flowLabel, 0, 32)
		if err != nil || l < 1 || l > 0xfffff {
			return fmt.Errorf("-L %s: unable to set IPv6 flow label: want 1 to 0xfffff", f.flowLabel)
		}
		cfg.FlowLabel = int(l)
	}
	if fs.Changed("rcv-timeout") {
		cfg.RcvTimeout = time.Duration(f.rcvTimeout) * time.Millisecond
		if f.rcvTimeout < int(control.MinRcvTimeout.Milliseconds()) {
			return fmt.Errorf("--rcv-timeout %d: receive timeout value is incorrect or not in range (%d to %d ms)", f.rcvTimeout, control.MinRcvTimeout.Milliseconds(), wire.MaxTime*1000)
		}
	}
	if fs.Changed("snd-timeout") {
		if f.sndTimeout < 0 {
			return fmt.Errorf("--snd-timeout %d: send timeout value is incorrect or not in range (0 to %d ms)", f.sndTimeout, wire.MaxTime*1000)
		}
		cfg.SndTimeout = time.Duration(f.sndTimeout) * time.Millisecond
	}
	if fs.Changed("cntl-ka") {
		ka, err := control.ParseKeepAlive(f.cntlKA)
		if err != nil {
			return err
		}
		cfg.KeepAlive = ka
	}
	if f.file != "" && !cfg.Reverse && !cfg.Bidir && cfg.Bytes == 0 && cfg.Blocks == 0 && !fs.Changed("time") {
		// iperf3: -F without an end condition sends the file, whole.
		if fi, err := os.Stat(f.file); err == nil {
			cfg.Bytes = fi.Size()
			if cfg.Bytes > 0 {
				cfg.Duration = 0
			}
		}
	}
	if run.json && run.text.Format != 0 {
		run.warnings = append(run.warnings, "warning: Report format (-f) flag ignored with JSON output (-J)")
	}
	if run.json && f.verbose {
		run.warnings = append(run.warnings, "warning: Verbose output (-v) may interfere with JSON output (-J)")
	}
	return nil
}

// runClientTest runs the test and writes its output: iperf3's text, its
// -J document or its --json-stream events, to standard output or the log
// file; errors to standard error (and the log file).
func runClientTest(e *env, cfg control.Config, run *clientRun) int {
	for _, w := range run.warnings {
		fmt.Fprintln(e.stderr, w)
	}
	if run.pidfile != "" {
		err := checkPidfile(run.pidfile)
		if err == nil {
			err = writePidfile(run.pidfile)
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "blast client: %v\n", err)
			return exitFailure
		}
		defer removePidfile(run.pidfile)
	}
	base := e.stdout
	var log *bufio.Writer
	if run.logfile != "" {
		lf, err := os.OpenFile(run.logfile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			fmt.Fprintf(e.stderr, "blast client: --logfile: unable to open log file: %v\n", err)
			return exitFailure
		}
		defer lf.Close()
		log = bufio.NewWriter(lf)
		defer log.Flush()
		base = &flushWriter{w: log, flush: run.forceflush}
	}
	var lockedBase io.Writer = &syncWriter{w: base}
	out := &control.LineWriter{W: lockedBase, Title: run.title, Timestamps: run.timestamps}
	errOut := &control.LineWriter{W: e.stderr, Timestamps: run.timestamps}
	if cfg.DebugLevel > 0 {
		cfg.Debug = out
		if run.json {
			cfg.Debug = errOut // the JSON stays parseable
		}
	}

	if run.plan.IsZero() {
		res, err := runClientOnce(e, cfg, run, out, lockedBase, nil)
		if err != nil {
			fmt.Fprintf(errOut, "blast client: %v\n", err)
			if log != nil && !run.json {
				fmt.Fprintf(out, "blast client: %v\n", err)
			}
			return exitFailure
		}
		if !run.json && !run.csv {
			fmt.Fprintf(out, "\niperf Done.\n")
		}
		return plotClient(errOut, run, res)
	}

	// Several runs: each as usual (in -J, collected into one document),
	// then the spread of the receivers' throughput.
	var docs []json.RawMessage
	var results []*result.Result // one per value of the summary
	rr, err := stats.Run(e.ctx, run.plan, func(i int) (float64, error) {
		if !run.json && !run.csv {
			fmt.Fprintf(out, "== run %d\n", i+1)
		}
		res, err := runClientOnce(e, cfg, run, out, lockedBase, &docs)
		if err != nil {
			return 0, err
		}
		results = append(results, res)
		return res.ReceivedBitsPerSecond(), nil
	})
	// The summary line, printed and written under the plot word for word.
	const whose = "receivers'"
	line := whose + " throughput: " + rr.Summary.Line(units.SIRate)
	switch {
	case run.csv:
		stats.WriteCSV(lockedBase, "client", "bits_per_second", rr)
	case run.json:
		enc := json.NewEncoder(lockedBase)
		enc.SetIndent("", "\t")
		enc.Encode(struct {
			Runs   []json.RawMessage `json:"runs"`
			Repeat stats.Result      `json:"repeat"`
		}{docs, rr})
	default:
		fmt.Fprintf(out, "\nblast: %s\n", line)
		if note := rr.Note(); note != "" {
			fmt.Fprintf(out, "blast: %s\n", note)
		}
		if err == nil {
			fmt.Fprintf(out, "\niperf Done.\n")
		}
	}
	if err != nil {
		fmt.Fprintf(errOut, "blast client: run %d: %v\n", rr.Runs+1, err)
		return exitFailure
	}
	if run.plot == "" {
		return exitOK
	}
	if err := plot.ClientRuns(run.plot, plot.Repeated{Runs: results, Values: rr.Values, Summary: rr.Summary,
		Whose: whose, Line: line, Note: rr.Note()}); err != nil {
		fmt.Fprintf(errOut, "blast client: --plot %s: %v\n", run.plot, err)
		return exitFailure
	}
	return exitOK
}

// runClientOnce runs one test and writes its output: iperf3's text, its
// -J document (into docs when collecting several), or its --json-stream
// events.
func runClientOnce(e *env, cfg control.Config, run *clientRun, out, base io.Writer, docs *[]json.RawMessage) (*result.Result, error) {
	var stream *render.JSONStream
	switch {
	case run.jsonStream:
		stream = &render.JSONStream{W: base}
		cfg.OnStart = func(r *result.Result) { stream.Start(r) }
		cfg.OnInterval = func(r *result.Result, iv *result.Interval) { stream.Interval(r, iv) }
	case run.csv:
		// The rows come at the end, under one header.
	case !run.json:
		first := true
		var mu sync.Mutex
		bar := newProgress(e.stderr, e.stdout, cfg)
		defer bar.finish()
		cfg.OnStart = func(r *result.Result) { run.text.WriteStart(out, r) }
		cfg.OnInterval = func(r *result.Result, iv *result.Interval) {
			mu.Lock()
			defer mu.Unlock()
			run.text.WriteInterval(out, r, iv, first)
			bar.interval(iv)
			first = false
		}
	}
	res, err := control.Run(e.ctx, cfg)
	if res == nil {
		res = control.ErrorResult(cfg.Host, err)
		res.Params.Title, res.Params.ExtraData = cfg.Title, cfg.ExtraData
	}
	switch {
	case run.jsonStream:
		stream.End(res)
		if run.jsonFull {
			render.EncodeJSON(base, res)
		}
	case run.json && docs != nil:
		if b, jerr := render.JSONBytes(res); jerr == nil {
			*docs = append(*docs, b)
		}
	case run.json:
		render.EncodeJSON(base, res)
	case run.csv && docs != nil:
		// Repeated: one row per run at the end.
	case run.csv:
		render.WriteCSV(base, res)
	case len(res.Streams) > 0:
		run.text.WriteSummary(out, res)
	}
	return res, err
}

// plotClient draws a single run into --plot's file.
func plotClient(errOut io.Writer, run *clientRun, res *result.Result) int {
	if run.plot == "" || res == nil {
		return exitOK
	}
	if err := plot.ClientRun(run.plot, res); err != nil {
		fmt.Fprintf(errOut, "blast client: --plot %s: %v\n", run.plot, err)
		return exitFailure
	}
	return exitOK
}

// syncWriter serializes writes from the test's goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// flushWriter writes to a buffered log file, and with --forceflush
// flushes it after every write, as iperf3's --forceflush does after every
// line (blast's standard output is never held back).
type flushWriter struct {
	w     *bufio.Writer
	flush bool
}

func (f *flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil && f.flush {
		err = f.w.Flush()
	}
	return n, err
}
