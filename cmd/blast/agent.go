package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/blastnet/blast/agent"
	"github.com/blastnet/blast/control"
	"github.com/blastnet/blast/control/render"
	"github.com/blastnet/blast/internal/safetext"
)

func init() {
	register(command{name: "agent", summary: "a server that a mesh asks to run tests to other agents (blast mesh)", run: runAgent,
		flags: func() *pflag.FlagSet { return newAgentFlags().fs }})
}

const agentIntro = `Usage: blast agent [-p PORT] [--control-port PORT] [--token-file FILE] [--name NAME] [--zone ZONE] [server flags]

A blast server (any blast client or iperf3 -c can test against its data port,
with every limit of 'blast server') beside a control endpoint, on which
'blast mesh' asks the agent to run a test to another agent and report it.

The control endpoint takes only requests signed with the mesh's token: the
same token on every agent and the mesh, from --token-file or $BLAST_TOKEN
(make one with: openssl rand -hex 32). The token never crosses the network.
A request is signed for one agent as it runs now (its name and an instance
id it draws at start, which 'blast mesh' learns from it), and taken once,
within 2 minutes of the agent's clock: a copy seen on the wire is refused
by every other agent, by this one, and by this one after a restart. The
control endpoint is plain HTTP: a request's body can be read on the way,
and delayed or dropped, not changed or replayed.
The agent runs at most --max-tests tests of its own at once and, with
--max-test-seconds N, at most N test-seconds of them a minute (a bucket that
holds a minute's worth): a mesh asking for more is answered 429 with when
to try again, and waits.

--allow guards both ports. The control port also holds at most 256
connections (at most an eighth of the descriptor limit, the rest is the
data server's), 16 from one address; when all are taken, a newcomer takes
the place of the oldest idle connection of the address that holds the most.
A request's header must arrive within 5 s, its body within 10 s.

The name defaults to $NODE_NAME (Kubernetes' downward API), then the host
name; the zone to $BLAST_ZONE. The agent is ready when its data port
accepts connections.

Flags:
`

const agentExamples = `
Examples:
  BLAST_TOKEN=$(cat /etc/blast/token) blast agent
                                   data port 5201 (TCP and UDP), control port 5202
  blast agent --token-file /etc/blast/token --name rack1-h07 --zone rack1
  blast agent -p 15201 --token-file token --allow 198.18.0.0/15
                                   control port 15202; both ports only to the lab's range
`

type agentFlags struct {
	*serverFlags
	controlPort, maxTests int
	maxTestSeconds        int
	tokenFile, name, zone string
	tlsCert, tlsKey       string
}

// newAgentFlags defines blast agent's flags: the server's (but -s, -1
// and -D) and the agent's own.
func newAgentFlags() *agentFlags {
	f := &agentFlags{serverFlags: newServerFlags("agent")}
	fs := f.fs
	fs.IntVar(&f.controlPort, "control-port", 0, "`PORT` of the control endpoint (default: the data port + 1)")
	fs.StringVar(&f.tokenFile, "token-file", "", "read the mesh's token from `FILE` (default: $BLAST_TOKEN)")
	fs.StringVar(&f.name, "name", "", "the agent's name in a mesh (default: $NODE_NAME, then the host name)")
	fs.StringVar(&f.zone, "zone", "", "the agent's zone in a mesh (default: $BLAST_ZONE)")
	fs.IntVar(&f.maxTests, "max-tests", agent.DefaultMaxTests, "tests the agent runs to other agents at once")
	fs.IntVar(&f.maxTestSeconds, "max-test-seconds", 0, "a budget of `N` test-seconds a minute for the tests the agent runs (0: none; --max-tests alone bounds them); a mesh asking for more waits")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "serve the control endpoint over TLS with the certificate (and its chain) in `FILE` (PEM; with --tls-key)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "the TLS certificate's private key in `FILE` (PEM)")
	return f
}

func agentHelp() string {
	return agentIntro + newAgentFlags().fs.FlagUsages() + agentExamples
}

func runAgent(e *env, args []string) int {
	f := newAgentFlags()
	usage := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "blast agent: %s\n", safetext.Line(fmt.Sprintf(format, a...)))
		return exitUsage
	}
	if err := f.fs.Parse(args); err != nil {
		fmt.Fprintf(e.stderr, "blast agent: %s: run 'blast help agent' for the flags\n", flagError(err))
		return exitUsage
	}
	if f.help {
		io.WriteString(e.stdout, agentHelp())
		return exitOK
	}
	srv, format, err := f.config()
	if err != nil {
		return usage("%v", err)
	}
	if f.controlPort < 0 || f.controlPort > 65535 {
		return usage("--control-port %d: must be 1 to 65535 (0: the data port + 1)", f.controlPort)
	}
	if f.controlPort == 0 && f.port == 65535 {
		return usage("-p 65535: the control port would be 65536; give --control-port")
	}
	if f.controlPort != 0 && f.controlPort == f.port {
		return usage("--control-port %d is the data port: choose another", f.controlPort)
	}
	if f.maxTests < 1 || f.maxTests > 64 {
		return usage("--max-tests %d: must be 1 to 64", f.maxTests)
	}
	if f.maxTestSeconds < 0 || f.maxTestSeconds > 64*3600 {
		return usage("--max-test-seconds %d: must be 0 (no budget) to %d", f.maxTestSeconds, 64*3600)
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return usage("--tls-cert and --tls-key go together: give both, or neither for plain HTTP")
	}
	var tlsCfg *tls.Config
	if f.tlsCert != "" {
		if tlsCfg, err = agent.LoadTLS(f.tlsCert, f.tlsKey); err != nil {
			return usage("%v", err)
		}
	}
	token, err := agent.ReadToken(f.tokenFile)
	if err != nil {
		return usage("%v", err)
	}
	if strings.HasPrefix(string(token), "REPLACE-ME") {
		fmt.Fprintln(e.stderr, "blast agent: warning: the token is deploy/kubernetes' placeholder: anyone who reads the repository has it; replace it (deploy/kubernetes/README.md)")
	}
	name := f.name
	if name == "" {
		name = os.Getenv("NODE_NAME")
	}
	if name == "" {
		if name, err = os.Hostname(); err != nil || name == "" {
			return usage("no name: give --name (the host has none: %v)", err)
		}
	}
	zone := f.zone
	if zone == "" {
		zone = os.Getenv("BLAST_ZONE")
	}

	out := e.stdout
	if f.logfile != "" {
		lf, err := os.OpenFile(f.logfile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			fmt.Fprintf(e.stderr, "blast agent: --logfile: %v\n", err)
			return exitFailure
		}
		defer lf.Close()
		out = lf
	}
	if f.pidfile != "" {
		if err := checkPidfile(f.pidfile); err != nil {
			fmt.Fprintf(e.stderr, "blast agent: %v\n", err)
			return exitFailure
		}
	}
	console := control.NewConsole(out, control.ConsoleOptions{JSON: f.json, Debug: f.debug,
		Text: render.Text{Verbose: f.verbose, Format: format}, MaxClients: srv.MaxClients})
	console.Attach(&srv)
	a, err := agent.Listen(agent.Config{Server: srv, ControlPort: f.controlPort, Token: token, Name: name, Zone: zone,
		MaxTests: f.maxTests, MaxTestSeconds: f.maxTestSeconds, Log: out, TLS: tlsCfg})
	if err != nil {
		fmt.Fprintf(e.stderr, "blast agent: %v\n", err)
		return exitFailure
	}
	if f.pidfile != "" {
		if err := writePidfile(f.pidfile); err != nil {
			fmt.Fprintf(e.stderr, "blast agent: %v\n", err)
			return exitFailure
		}
		defer removePidfile(f.pidfile)
	}
	zoneText := ""
	if zone != "" {
		zoneText = ", zone " + zone
	}
	proto := "TLS"
	if tlsCfg == nil {
		proto = "plain HTTP: anyone on the path reads requests and replies; --tls-cert and --tls-key for TLS"
	}
	fmt.Fprintf(out, "blast agent %s%s: data on %s, control on %s (%s)\n", name, zoneText, a.DataAddr(), a.ControlAddr(), proto)
	if err := a.Serve(e.ctx); err != nil && !errors.Is(err, e.ctx.Err()) {
		fmt.Fprintf(e.stderr, "blast agent: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(out, "blast agent %s: shutting down\n", name)
	return exitOK
}
