package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/blastnet/blast/control"
	"github.com/blastnet/blast/control/render"
	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/safetext"
	"github.com/blastnet/blast/units"
)

func init() {
	register(command{name: "server", summary: "serve blast and iperf3 clients, several at once (iperf3's -s)", run: runServer,
		flags: func() *pflag.FlagSet { return newServerFlags("server").fs }})
}

const serverIntro = `Usage: blast server [flags]   (or blast -s [flags])

Any 'iperf3 -c' and any 'blast client' can test against it. Each test prints as
'iperf3 -s' prints it; the lines of tests that run at the same time start with
the test's number ("#3: "). SIGINT or SIGTERM tells running tests the server
is terminating (their clients print what they measured), lets tests that
have ended deliver their results, and exits.

Limits: a connection must send its cookie and parameters within 10 s;
at most 256 such connections wait at once (32 from one address), the rest
are closed. A test takes a slot only once its parameters are valid.

Flags:
`

const serverExamples = `
Examples:
  blast server                     port 5201, up to 64 tests at once
                                   (16 from one address, 1 GiB of buffers)
  blast -s -p 5202 -1              one test on port 5202, then exit
  blast server -B ::1 --max-clients 32
  blast server -p 0                a free port, shown in "Server listening on"
  blast server -D -I /run/blast.pid --logfile /var/log/blast.log
                                   in the background, as iperf3 -s -D does
  blast server --server-bitrate-limit 1G/10 --server-max-duration 60
                                   refuse tests over 60 s, end those that average
                                   over 1 Gbit/s for 10 s (each, and all together)
  blast server --rsa-private-key-path private.pem --authorized-users-path users.csv
                                   only clients with a user and password of users.csv
                                   (iperf3 -c --username U --rsa-public-key-path public.pem)
`

// daemonEnv names the descriptor through which a server that -D started
// in the background tells its parent how starting went.
const daemonEnv = "BLAST_DAEMON_READY_FD"

// serverFlags are blast server's flags and where they land.
type serverFlags struct {
	fs                                        *pflag.FlagSet
	port, maxClients, maxPerHost, maxStreams  int
	bind, bindDev, backend, rxBackend, format string
	maxBytes, maxTestMem, maxMem, allow       string
	pidfile, logfile, idle, rcv, limit        string
	maxDur, maxDurAlias                       string
	interval                                  float64
	oneOff, anySource, json, verbose, debug   bool
	daemon, v4, v6, help                      bool
	auth                                      *serverAuthFlags
}

// newServerFlags defines the flags of blast server, or of blast agent (a
// server without -s, -1 and -D): the parser, the help, the completions and
// the man page all read these definitions.
func newServerFlags(command string) *serverFlags {
	server := command == "server"
	f := &serverFlags{fs: pflag.NewFlagSet(command, pflag.ContinueOnError)}
	fs := f.fs
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	if server {
		fs.BoolP("server", "s", true, "run as a server (implied)")
	}
	fs.IntVarP(&f.port, "port", "p", wire.DefaultPort, "port to listen on (0: a free one)")
	fs.StringVarP(&f.bind, "bind", "B", "", "address to listen on (default: all)")
	fs.StringVar(&f.bindDev, "bind-dev", "", "bind the listener and every data socket to interface `DEV` (SO_BINDTODEVICE)")
	if server {
		fs.BoolVarP(&f.oneOff, "one-off", "1", false, "serve one test, then exit")
	}
	fs.IntVar(&f.maxClients, "max-clients", control.DefaultMaxClients, "tests at the same time; more are told the server is busy")
	fs.IntVar(&f.maxPerHost, "max-per-host", control.DefaultMaxPerHost, "tests at the same time from one address")
	fs.IntVar(&f.maxStreams, "max-streams", wire.MaxStreams, "streams of one test (-P); more are refused")
	fs.StringVar(&f.maxBytes, "max-bytes", "", "refuse tests that ask for more than `SIZE` bytes (-n, -k), such as 10G")
	fs.StringVar(&f.maxTestMem, "max-test-memory", "256M", "refuse a test whose buffers (streams × block size × backend batch) need more than `SIZE`")
	fs.StringVar(&f.maxMem, "max-memory", "1G", "tests whose buffers would take all tests' together over `SIZE` are told the server is busy")
	fs.StringVar(&f.allow, "allow", "", "serve only clients from `CIDR[,CIDR...]` (addresses or prefixes); others are closed unanswered")
	fs.BoolVar(&f.anySource, "any-stream-source", false, "accept a test's data streams from any address that has its cookie (behind NAT); by default only from its control connection's address")
	fs.StringVar(&f.backend, "backend", "", "how to send (see 'blast backends'; readwrite by default)")
	fs.StringVar(&f.rxBackend, "rx-backend", "", "how to receive (default: --backend, or readwrite if that only sends)")
	fs.Float64VarP(&f.interval, "interval", "i", 1, "seconds between interval lines (0: none); also what --get-server-output returns")
	fs.BoolVarP(&f.json, "json", "J", false, "print each test's JSON document on one line when it ends (and answer --get-server-output with JSON)")
	fs.StringVarP(&f.format, "format", "f", "", "`UNIT` of the bitrates: k, m, g, t (bits/s) or K, M, G, T (bytes/s); default: adaptive bits")
	fs.BoolVarP(&f.verbose, "verbose", "V", false, "more detail: iperf3's -V lines for each test, and blast's backend and CPU lines")
	fs.BoolVarP(&f.debug, "debug", "d", false, "debug lines: each test's state changes and what its client sent")
	if server {
		fs.BoolVarP(&f.daemon, "daemon", "D", false, "run in the background (output to --logfile, or nowhere)")
	}
	fs.StringVarP(&f.pidfile, "pidfile", "I", "", "write the server's process id to `FILE` while it runs")
	fs.StringVar(&f.logfile, "logfile", "", "append all output to `FILE`")
	fs.Bool("forceflush", false, "accepted for iperf3's sake: blast never holds output back")
	fs.StringVar(&f.idle, "idle-timeout", "", "with -1, exit if no client connects within `SECS`; without, restart the idle server (close its UDP port) after SECS without one")
	fs.StringVar(&f.rcv, "rcv-timeout", "", "end a test whose receiving streams get no data for `MS` milliseconds (default 120000)")
	fs.StringVar(&f.limit, "server-bitrate-limit", "", "refuse tests that ask for more than `RATE[/SECS]`, end tests that average more over SECS (5); each, and all together")
	fs.StringVar(&f.maxDur, "server-max-duration", "", "refuse tests longer than `SECS` (-t plus -O), and tests with no time limit (-n, -k)")
	fs.StringVar(&f.maxDurAlias, "max-duration", "", "the same as --server-max-duration `SECS`")
	f.auth = addServerAuthFlags(fs)
	fs.BoolVarP(&f.v4, "version4", "4", false, "IPv4 only")
	fs.BoolVarP(&f.v6, "version6", "6", false, "IPv6 only")
	fs.BoolVarP(&f.help, "help", "h", false, "show this help")
	return f
}

// serverHelp is blast server's help, its flags from their definitions.
func serverHelp() string {
	return serverIntro + newServerFlags("server").fs.FlagUsages() + serverExamples
}

func runServer(e *env, args []string) int {
	f := newServerFlags("server")
	oneOff, jsonOut, verbose, debug, daemon := &f.oneOff, &f.json, &f.verbose, &f.debug, &f.daemon
	pidfile, logfile, help := &f.pidfile, &f.logfile, &f.help
	if err := f.fs.Parse(args); err != nil {
		fmt.Fprintf(e.stderr, "blast server: %s: run 'blast help server' for the flags\n", flagError(err))
		return exitUsage
	}
	if *help {
		io.WriteString(e.stdout, serverHelp())
		return exitOK
	}
	cfg, format, err := f.config()
	if err != nil {
		fmt.Fprintf(e.stderr, "blast server: %s\n", safetext.Line(err.Error()))
		return exitUsage
	}

	child := os.Getenv(daemonEnv) != ""
	if *daemon && !child {
		return daemonize(e, args, *logfile, *jsonOut)
	}
	var ready *daemonChild
	if child {
		ready = openDaemonChild()
		defer ready.close()
	}

	out, errOut := e.stdout, e.stderr
	if *logfile != "" {
		f, err := os.OpenFile(*logfile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			fmt.Fprintf(io.MultiWriter(errOut, ready), "blast server: --logfile: %v\n", err)
			return exitFailure
		}
		defer f.Close()
		out, errOut = f, f
	}
	if ready != nil {
		errOut = io.MultiWriter(errOut, ready)
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(errOut, "blast server: "+format+"\n", a...)
		return exitFailure
	}
	if *pidfile != "" {
		if err := checkPidfile(*pidfile); err != nil {
			return fail("%v", err)
		}
	}

	console := control.NewConsole(out, control.ConsoleOptions{JSON: *jsonOut, Debug: *debug,
		Text: render.Text{Verbose: *verbose, Format: format}, OneOff: *oneOff, MaxClients: cfg.MaxClients})
	var interrupted atomic.Int64
	cfg.OnResult = func(r *result.Result) {
		if errors.Is(r.Err, control.ErrShutdown) {
			interrupted.Add(1)
		}
	}
	console.Attach(&cfg)
	srv, err := control.Listen(cfg)
	if err != nil {
		return fail("%v", err)
	}
	if *pidfile != "" {
		if err := writePidfile(*pidfile); err != nil {
			srv.Close()
			return fail("%v", err)
		}
		defer removePidfile(*pidfile)
	}
	console.Listening(srv.Addr())
	if ready != nil {
		ready.ready(srv.Addr())
	}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	err = srv.Serve(e.ctx)
	say := func(line string) {
		if *jsonOut {
			fmt.Fprintln(errOut, line)
		} else {
			console.Println(line)
		}
	}
	switch {
	case errors.Is(err, control.ErrIdle):
		say(fmt.Sprintf("blast server: no client connected within %g s (--idle-timeout); exiting", cfg.IdleTimeout.Seconds()))
		return exitOK
	case err != nil:
		return fail("%v", err)
	case e.ctx.Err() != nil:
		why := "interrupted"
		select {
		case s := <-sigs:
			why = signalName(s)
		default:
		}
		n := interrupted.Load()
		tests := "tests"
		if n == 1 {
			tests = "test"
		}
		say(fmt.Sprintf("blast server: shutting down (%s), %d %s interrupted", why, n, tests))
	}
	return exitOK
}

// config turns the parsed flags into the server's configuration, checked:
// an error is a usage error, in words that name the fix.
func (f *serverFlags) config() (cfg control.ServerConfig, format byte, err error) {
	if f.fs.NArg() > 0 {
		return cfg, 0, fmt.Errorf("unexpected argument %q: the %s takes only flags", f.fs.Arg(0), f.fs.Name())
	}
	if !validInterval(f.interval) { // NaN and ±Inf too
		return cfg, 0, fmt.Errorf("-i %g: must be 0 (off) or 0.1 to 60 seconds", f.interval)
	}
	unit, err := units.ParseFormat(f.format)
	if err != nil {
		return cfg, 0, err
	}
	format = byte(unit)
	if f.port < 0 || f.port > 65535 {
		return cfg, 0, fmt.Errorf("-p %d: must be 1 to 65535, or 0 for a free port", f.port)
	}
	cfg = control.ServerConfig{Bind: f.bind, Port: f.port, OneOff: f.oneOff, MaxClients: f.maxClients, MaxPerHost: f.maxPerHost,
		MaxStreams: f.maxStreams, AnyStreamSource: f.anySource, Device: f.bindDev,
		Backend: f.backend, RxBackend: f.rxBackend, Interval: time.Duration(f.interval * float64(time.Second)), JSONOutput: f.json}
	switch {
	case f.v4 && f.v6:
		return cfg, 0, errors.New("-4 and -6 both given: choose one")
	case f.v4:
		cfg.Family = "4"
	case f.v6:
		cfg.Family = "6"
	}
	secs := func(flag, s string, min, max int) (time.Duration, error) {
		n, err := strconv.Atoi(s)
		if err != nil || n < min || n > max {
			return 0, fmt.Errorf("%s %q: want whole seconds, %d to %d", flag, s, min, max)
		}
		return time.Duration(n) * time.Second, nil
	}
	if f.idle != "" {
		if cfg.IdleTimeout, err = secs("--idle-timeout", f.idle, 1, wire.MaxTime); err != nil {
			return cfg, 0, err
		}
	}
	if f.maxDurAlias != "" {
		if f.maxDur != "" && f.maxDur != f.maxDurAlias {
			return cfg, 0, fmt.Errorf("--max-duration %s and --server-max-duration %s: they are the same limit; give one", f.maxDurAlias, f.maxDur)
		}
		f.maxDur = f.maxDurAlias
	}
	if f.maxDur != "" {
		if cfg.MaxDuration, err = secs("--server-max-duration", f.maxDur, 0, wire.MaxTime); err != nil {
			return cfg, 0, fmt.Errorf("%v (0: no limit)", err)
		}
	}
	if f.rcv != "" {
		ms, err := strconv.Atoi(f.rcv)
		if err != nil || ms < int(control.MinRcvTimeout.Milliseconds()) || ms > wire.MaxTime*1000 {
			return cfg, 0, fmt.Errorf("--rcv-timeout %q: want milliseconds, %d to %d (iperf3's default is 120000)", f.rcv, control.MinRcvTimeout.Milliseconds(), wire.MaxTime*1000)
		}
		cfg.RcvTimeout = time.Duration(ms) * time.Millisecond
	}
	for _, sz := range []struct {
		flag, s string
		to      *int64
	}{{"--max-bytes", f.maxBytes, &cfg.MaxBytes}, {"--max-test-memory", f.maxTestMem, &cfg.MaxTestMemory}, {"--max-memory", f.maxMem, &cfg.MaxMemory}} {
		if sz.s == "" {
			continue
		}
		n, err := units.ParseSizeFlag(sz.flag, sz.s, "a size such as 512M or 2G", false)
		if err != nil {
			return cfg, 0, err
		}
		*sz.to = n
	}
	if f.allow != "" {
		if cfg.Allow, err = control.ParseAllow(f.allow); err != nil {
			return cfg, 0, err
		}
	}
	if f.limit != "" {
		if cfg.RateLimit, err = control.ParseRateLimit(f.limit); err != nil {
			return cfg, 0, err
		}
	}
	if cfg.Auth, err = f.auth.config(); err != nil {
		return cfg, 0, err
	}
	// An unknown or unusable backend is a usage error, as in every mode.
	for _, b := range []struct{ flag, name string }{{"--backend", f.backend}, {"--rx-backend", f.rxBackend}} {
		if b.name == "" {
			continue
		}
		if _, err := engine.Usable(b.name); err != nil {
			return cfg, 0, fmt.Errorf("%s: %v", b.flag, err)
		}
	}
	if f.bindDev != "" {
		if _, err := net.InterfaceByName(f.bindDev); err != nil {
			return cfg, 0, fmt.Errorf("--bind-dev %s: no such interface here (see 'ip link')", f.bindDev)
		}
	}
	if err := checkServerCounts(serverCount{"--max-clients", f.maxClients}, serverCount{"--max-per-host", f.maxPerHost},
		serverCount{"--max-streams", f.maxStreams}); err != nil {
		return cfg, 0, err // before Defaults, which reads 0 as "the default"
	}
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return cfg, 0, err
	}
	return cfg, format, nil
}

func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// daemonize is -D: it starts the server again in the background, in a
// session of its own with its output in the logfile (or nowhere), waits
// until that server listens, and returns. The server says how starting
// went through a pipe: "READY pid address", or its error.
func daemonize(e *env, args []string, logfile string, jsonOut bool) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "blast server: -D: "+format+"\n", a...)
		return exitFailure
	}
	exe, err := os.Executable()
	if err != nil {
		return fail("cannot find this program to start it again: %v", err)
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return fail("%v", err)
	}
	defer null.Close()
	out := null
	if logfile != "" {
		if out, err = os.OpenFile(logfile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err != nil {
			return fail("--logfile: %v", err)
		}
		defer out.Close()
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fail("%v", err)
	}
	defer r.Close()
	cmd := exec.Command(exe, append([]string{"server"}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, out, out
	cmd.ExtraFiles = []*os.File{w} // descriptor 3
	cmd.Env = append(os.Environ(), daemonEnv+"=3")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return fail("start %s: %v", exe, err)
	}
	r.SetReadDeadline(time.Now().Add(30 * time.Second))
	msg, rerr := io.ReadAll(r)
	if line, ok := bytes.CutPrefix(msg, []byte("READY ")); ok {
		cmd.Process.Release()
		pid, addr, _ := strings.Cut(strings.TrimSpace(string(line)), " ")
		if !jsonOut {
			fmt.Fprintf(e.stdout, "Server listening on %s (in the background, pid %s)\n", addr, pid)
		}
		return exitOK
	}
	if rerr != nil {
		cmd.Process.Kill()
	}
	werr := cmd.Wait()
	e.stderr.Write(msg)
	var ee *exec.ExitError
	switch {
	case rerr != nil:
		return fail("the background server did not start within 30 s (%v); see the logfile", rerr)
	case errors.As(werr, &ee) && ee.ExitCode() > 0:
		if len(msg) == 0 {
			fail("the background server exited with status %d before it listened", ee.ExitCode())
		}
		return ee.ExitCode()
	}
	return fail("the background server ended before it listened (%v)", werr)
}

// daemonChild is the server -D started: before it listens, its errors go
// to the parent too; once it listens, it tells the parent so.
type daemonChild struct{ f *os.File }

func openDaemonChild() *daemonChild {
	fd, _ := strconv.Atoi(os.Getenv(daemonEnv))
	os.Unsetenv(daemonEnv)
	if fd < 3 {
		return &daemonChild{}
	}
	return &daemonChild{f: os.NewFile(uintptr(fd), "daemon-ready")}
}

func (d *daemonChild) Write(b []byte) (int, error) {
	if d == nil || d.f == nil {
		return len(b), nil
	}
	return d.f.Write(b)
}

func (d *daemonChild) ready(addr net.Addr) {
	if d.f != nil {
		fmt.Fprintf(d.f, "READY %d %v\n", os.Getpid(), addr)
	}
	d.close()
}

func (d *daemonChild) close() {
	if d.f != nil {
		d.f.Close()
		d.f = nil
	}
}
