package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/blastnet/blast/control"
)

func init() {
	register(command{name: "server", summary: "serve blast and iperf3 clients, several at once (iperf3's -s)", run: runServer})
}

const serverExamples = `
Examples:
  blast server                     port 5201, up to 8 tests at once
  blast -s -p 5202 -1              one test on port 5202, then exit
  blast server -B ::1 --max-clients 32
Any 'iperf3 -c' and any 'blast client' can test against it.
`

func runServer(e *env, args []string) int {
	fs := pflag.NewFlagSet("server", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	fs.BoolP("server", "s", true, "run as a server (implied)")
	port := fs.IntP("port", "p", control.DefaultPort, "port to listen on")
	bind := fs.StringP("bind", "B", "", "address to listen on (default: all)")
	oneOff := fs.BoolP("one-off", "1", false, "serve one test, then exit")
	maxClients := fs.Int("max-clients", 8, "tests at the same time; more are told the server is busy")
	backend := fs.String("backend", "", "how to send (see 'blast backends'; readwrite by default)")
	rxBackend := fs.String("rx-backend", "", "how to receive (default: --backend, or readwrite if that only sends)")
	interval := fs.Float64P("interval", "i", 1, "seconds between the server's interval reports (for --get-server-output)")
	jsonOut := fs.BoolP("json", "J", false, "answer --get-server-output with JSON, and log one JSON result per test")
	v4 := fs.BoolP("version4", "4", false, "IPv4 only")
	v6 := fs.BoolP("version6", "6", false, "IPv6 only")
	help := fs.BoolP("help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(e.stderr, "blast server: %v: run 'blast help server' for the flags\n", err)
		return exitUsage
	}
	if *help {
		fmt.Fprintf(e.stdout, "Usage: blast server [flags]   (or blast -s [flags])\n\n%s%s", fs.FlagUsages(), serverExamples)
		return exitOK
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "blast server: "+format+"\n", a...)
		return exitUsage
	}
	if fs.NArg() > 0 {
		return usage("unexpected argument %q: the server takes only flags", fs.Arg(0))
	}
	if *interval < 0 || (*interval > 0 && *interval < 0.1) || *interval > 60 {
		return usage("-i %g: must be 0 (off) or 0.1 to 60 seconds", *interval)
	}
	cfg := control.ServerConfig{Bind: *bind, Port: *port, OneOff: *oneOff, MaxClients: *maxClients,
		Backend: *backend, RxBackend: *rxBackend, Interval: time.Duration(*interval * float64(time.Second)), JSONOutput: *jsonOut}
	switch {
	case *v4 && *v6:
		return usage("-4 and -6 both given: choose one")
	case *v4:
		cfg.Family = "4"
	case *v6:
		cfg.Family = "6"
	}
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return usage("%v", err)
	}
	if *jsonOut {
		cfg.OnResult = func(r *control.Result) { control.EncodeJSON(e.stdout, r) }
	} else {
		cfg.Log = e.stdout
	}
	srv, err := control.Listen(cfg)
	if err != nil {
		fmt.Fprintf(e.stderr, "blast server: %v\n", err)
		return exitFailure
	}
	if !*jsonOut {
		fmt.Fprintf(e.stdout, "Server listening on %v (up to %d tests at once)\n", srv.Addr(), cfg.MaxClients)
	}
	if err := srv.Serve(e.ctx); err != nil {
		fmt.Fprintf(e.stderr, "blast server: %v\n", err)
		return exitFailure
	}
	return exitOK
}
