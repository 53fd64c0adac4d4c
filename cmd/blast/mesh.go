package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/blastnet/blast/agent"
	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/safetext"
	"github.com/blastnet/blast/mesh"
	"github.com/blastnet/blast/mesh/discover"
	"github.com/blastnet/blast/mesh/plan"
	"github.com/blastnet/blast/plot"
	"github.com/blastnet/blast/units"
)

func init() {
	register(command{name: "mesh", summary: "measure many hosts at once through their agents: a matrix of every pair (blast agent)", run: runMesh,
		flags: func() *pflag.FlagSet { return newMeshFlags().fs }})
}

const meshIntro = `Usage: blast mesh --peers FILE|dns:NAME|k8s:SERVICE [--mode MODE] [-t SECS] [-P N] [-u -b RATE] [flags]
       blast mesh report FILE.json [--csv OUT] [--plot OUT.svg|png]

Finds the agents ('blast agent' on each host), plans which pairs run when,
asks each test's source agent to run it to the destination agent, and
writes exactly one JSON document on stdout: {meta, nodes, cells}, a cell per
test with goodput, retransmits, RTT, loss, jitter, CPU, interfaces and
findings, or its error. Progress goes to stderr, so
'kubectl logs job/blast-mesh > mesh.json' is the whole collector.
'blast mesh report' prints the matrix, names the slow cells and nodes, and
writes long CSV and a heatmap.

Peers:
  FILE           one 'NAME ADDRESS[:PORT]' per line (# comments); PORT is
                 the agent's data port, its control port is PORT + 1
  dns:NAME       SRV records of NAME (or _blast._tcp.NAME, _data._tcp.NAME),
                 else its A/AAAA records (a hosts file answers these)
  k8s:SERVICE    the ready endpoints of SERVICE's EndpointSlices (in-cluster,
                 with the pod's service account; k8s:NAMESPACE/SERVICE)

Modes:
  pairs          every ordered pair once, in rounds where no node is in two
                 tests (the circle method: N-1 rounds for even N, each pair
                 one way, then the other)
  fan-in[:NAME]  every other node to one server (NAME, default the first) at
                 once, with a common start; --baseline runs each alone first
  all            everyone at once: in each of N-1 rounds every node sends to
                 one and receives from another (bisection stress)
  ring:K         each node to its next K nodes
  sample:K       each node to K random peers, sending and receiving K times
                 (--seed); for large fleets, where pairs means N-1 rounds

A failed test is a cell with its error; a busy server is tried again
(--retries). Exit status: 0 every test ran, 1 some failed or an agent did
not answer (the document is written either way), 2 usage.

Flags:
`

const meshExamples = `
Examples:
  blast mesh --peers peers.txt --token-file token > mesh.json
  blast mesh --peers peers.txt --mode fan-in:server1 --baseline -t 10 > fanin.json
  blast mesh --peers dns:agents.lab.example --mode sample:3 --dry-run
  blast mesh --peers k8s:blast -P 8 --wait 300 --min-agents 3 > mesh.json
  blast mesh --peers peers.txt -u -b 1G -l 1400 > udp.json
  blast mesh report mesh.json --csv mesh.csv --plot mesh.png
`

type meshFlags struct {
	fs                                  *pflag.FlagSet
	peers, tokenFile, mode, zones, rate string
	tlsCA, tlsServerName                string
	backend                             string
	secs, timeout, wait                 float64
	streams, length, retries, minAgents int
	dataPort                            int
	seed                                uint64
	isolate, baseline, udp, reverse     bool
	dryRun, help                        bool
}

func newMeshFlags() *meshFlags {
	f := &meshFlags{fs: pflag.NewFlagSet("mesh", pflag.ContinueOnError)}
	fs := f.fs
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	fs.StringVar(&f.peers, "peers", "", "where the agents are: `FILE`, dns:NAME or k8s:SERVICE")
	fs.StringVar(&f.tokenFile, "token-file", "", "read the agents' token from `FILE` (default: $BLAST_TOKEN)")
	fs.StringVar(&f.tlsCA, "tls-ca", "", "speak TLS to the agents' control endpoints, checking their certificates against the CA certificates in `FILE` (PEM)")
	fs.StringVar(&f.tlsServerName, "tls-server-name", "", "with --tls-ca: the `NAME` every agent's certificate carries (default: each agent's address)")
	fs.StringVar(&f.mode, "mode", "pairs", "which tests: pairs, fan-in[:NAME], all, ring:K or sample:K")
	fs.BoolVar(&f.isolate, "isolate", false, "one test at a time (pairs, ring, sample)")
	fs.BoolVar(&f.baseline, "baseline", false, "fan-in: run each client alone first")
	fs.StringVar(&f.zones, "zones", "", "only pairs in the same zone (same) or in different zones (cross)")
	fs.Uint64Var(&f.seed, "seed", 1, "sample:K: the draw (the same seed, the same plan)")
	fs.Float64VarP(&f.secs, "time", "t", mesh.DefaultSeconds, "seconds each test runs")
	fs.IntVarP(&f.streams, "parallel", "P", mesh.DefaultStreams, "streams of each test")
	fs.BoolVarP(&f.udp, "udp", "u", false, "UDP (with -b; iperf3's 1 Mbit/s per stream without)")
	fs.StringVarP(&f.rate, "bitrate", "b", "", "`RATE` of each stream, such as 500M or 2G (TCP: unpaced without)")
	fs.IntVarP(&f.length, "length", "l", 0, "bytes per write or datagram (default: blast's)")
	fs.BoolVarP(&f.reverse, "reverse", "R", false, "the destination sends (cells are still src -> dst)")
	fs.StringVar(&f.backend, "backend", "", "how the agents send (see 'blast backends')")
	fs.IntVar(&f.retries, "retries", mesh.DefaultRetries, "times a test is tried again when its server is busy")
	fs.Float64Var(&f.timeout, "test-timeout", 0, "give up on a test after `SECS` (default: -t + 30)")
	fs.IntVar(&f.dataPort, "data-port", wire.DefaultPort, "the agents' data port where the peers give none")
	fs.IntVar(&f.minAgents, "min-agents", 2, "with --wait: agents to wait for")
	fs.Float64Var(&f.wait, "wait", 0, "look for --min-agents agents for up to `SECS` (agents of a DaemonSet start at different times)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print the plan (rounds, tests, estimated time) and measure nothing")
	fs.BoolVarP(&f.help, "help", "h", false, "show this help")
	return f
}

func meshHelp() string {
	return meshIntro + newMeshFlags().fs.FlagUsages() + meshExamples
}

func runMesh(e *env, args []string) int {
	if len(args) > 0 && args[0] == "report" {
		return runMeshReport(e, args[1:])
	}
	f := newMeshFlags()
	usage := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "blast mesh: %s\n", safetext.Line(fmt.Sprintf(format, a...)))
		return exitUsage
	}
	if err := f.fs.Parse(args); err != nil {
		fmt.Fprintf(e.stderr, "blast mesh: %s: run 'blast help mesh' for the flags\n", flagError(err))
		return exitUsage
	}
	if f.help {
		io.WriteString(e.stdout, meshHelp())
		return exitOK
	}
	if f.fs.NArg() > 0 {
		return usage("unexpected argument %q: the agents come from --peers (or did you mean 'blast mesh report FILE'?)", f.fs.Arg(0))
	}
	if f.peers == "" {
		return usage("no --peers: give a file of 'NAME ADDRESS[:PORT]' lines, dns:NAME or k8s:SERVICE")
	}
	src, err := discover.Parse(f.peers)
	if err != nil {
		return usage("--peers: %v", err)
	}
	mode, err := plan.ParseMode(f.mode)
	if err != nil {
		return usage("--mode: %v", err)
	}
	zones, err := plan.ParseZones(f.zones)
	if err != nil {
		return usage("--zones: %v", err)
	}
	opts := plan.Options{Isolate: f.isolate, Baseline: f.baseline, Zones: zones, Seed: f.seed}
	set := mesh.Settings{Proto: "tcp", Seconds: f.secs, Streams: f.streams, Reverse: f.reverse, Len: f.length,
		Backend: f.backend, Retries: f.retries, Timeout: f.timeout}
	switch {
	case !(f.secs >= 1 && f.secs <= 3600):
		return usage("-t %g: must be 1 to 3600 seconds", f.secs)
	case f.streams < 1 || f.streams > wire.MaxStreams:
		return usage("-P %d: must be 1 to %d", f.streams, wire.MaxStreams)
	case f.length < 0 || f.length > 1<<20:
		return usage("-l %d: must be 0 (blast's default) to 1048576 bytes", f.length)
	case f.retries < 0 || f.retries > 20:
		return usage("--retries %d: must be 0 to 20", f.retries)
	case f.timeout != 0 && !(f.timeout >= f.secs+1 && f.timeout <= 7200):
		return usage("--test-timeout %g: must be more than -t (%g) and at most 7200", f.timeout, f.secs)
	case f.dataPort < 1 || f.dataPort > 65534:
		return usage("--data-port %d: must be 1 to 65534 (the control port is the next)", f.dataPort)
	case f.minAgents < 2:
		return usage("--min-agents %d: a mesh needs at least 2", f.minAgents)
	case !(f.wait >= 0 && f.wait <= 86400):
		return usage("--wait %g: must be 0 to 86400 seconds", f.wait)
	case f.baseline && mode.Kind != plan.FanIn:
		return usage("--baseline is for --mode fan-in")
	}
	if f.udp {
		set.Proto = "udp"
	}
	if f.rate != "" {
		bits, burst, err := units.ParseRate(f.rate)
		if err != nil {
			return usage("-b: %v", err)
		}
		if burst != 0 || bits > math.MaxInt64 {
			return usage("-b %s: give a rate such as 500M or 2G (no /BURST in a mesh)", f.rate)
		}
		set.Rate = uint64(bits)
	}
	if f.backend != "" {
		if _, err := engine.Usable(f.backend); err != nil {
			return usage("--backend: %v", err)
		}
	}
	if f.tlsServerName != "" && f.tlsCA == "" {
		return usage("--tls-server-name needs --tls-ca")
	}
	var tlsCfg *tls.Config
	if f.tlsCA != "" {
		if tlsCfg, err = agent.ClientTLS(f.tlsCA, f.tlsServerName); err != nil {
			return usage("%v", err)
		}
	}
	var token []byte
	if !f.dryRun {
		if token, err = agent.ReadToken(f.tokenFile); err != nil {
			return usage("%v", err)
		}
	}

	dopt := discover.Options{DataPort: f.dataPort}
	var found []discover.Peer
	if f.wait > 0 {
		ctx, cancel := context.WithTimeout(e.ctx, time.Duration(f.wait*float64(time.Second)))
		found, err = discover.Wait(ctx, src, dopt, f.minAgents, 2*time.Second)
		cancel()
	} else {
		found, err = discover.Discover(e.ctx, src, dopt)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "blast mesh: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(e.stderr, "blast mesh: %d agents from %s\n", len(found), f.peers)

	if f.dryRun {
		nodes := make([]plan.Node, len(found))
		names := make([]string, len(found))
		for i, p := range found {
			nodes[i], names[i] = plan.Node{Name: p.Name, Zone: p.Zone}, p.Name
		}
		p, err := plan.Build(mode, nodes, opts)
		if err != nil {
			fmt.Fprintf(e.stderr, "blast mesh: %v\n", err)
			return exitFailure
		}
		if err := p.Describe(e.stdout, names, time.Duration((f.secs+1)*float64(time.Second))); err != nil {
			fmt.Fprintf(e.stderr, "blast mesh: %v\n", err)
			return exitFailure
		}
		return exitOK
	}

	doc, err := mesh.Run(e.ctx, mesh.Config{Peers: f.peers, Found: found, Mode: mode, Options: opts, Test: set,
		Token: token, TLS: tlsCfg, Log: e.stderr, Version: result.Version})
	if doc != nil && (len(doc.Cells) > 0 || len(doc.Nodes) > 0) {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if werr := enc.Encode(doc); werr != nil {
			fmt.Fprintf(e.stderr, "blast mesh: writing the document: %v\n", werr)
			return exitFailure
		}
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "blast mesh: %v\n", err)
		return exitFailure
	}
	failed, down := 0, 0
	for _, c := range doc.Cells {
		if c.Err != "" {
			failed++
		}
	}
	for _, n := range doc.Nodes {
		if n.Err != "" {
			down++
		}
	}
	if failed > 0 || down > 0 {
		var parts []string
		if failed > 0 {
			parts = append(parts, fmt.Sprintf("%d of %d tests failed", failed, len(doc.Cells)))
		}
		if down > 0 {
			parts = append(parts, fmt.Sprintf("%d of %d agents did not answer", down, len(doc.Nodes)))
		}
		fmt.Fprintf(e.stderr, "blast mesh: %s (see the cells' and nodes' err)\n", strings.Join(parts, ", "))
		return exitFailure
	}
	fmt.Fprintf(e.stderr, "blast mesh: %d tests done in %v\n", len(doc.Cells), doc.Meta.Finished.Sub(doc.Meta.Started).Round(time.Second))
	return exitOK
}

const meshReportIntro = `Usage: blast mesh report FILE.json [--csv OUT] [--plot OUT.svg|png]

Prints a mesh document (what 'blast mesh' wrote) as a matrix of goodput,
sources in rows and destinations in columns, with each row's and column's
median; then the outlier cells, the nodes that are slow both ways (suspect
their NIC or link, with their findings) or one way, the failed tests and
the agents that did not answer. FILE - reads stdin.

Flags:
`

const meshReportExamples = `
Examples:
  blast mesh report mesh.json
  blast mesh report mesh.json --csv mesh.csv --plot mesh.png
  kubectl -n blast logs job/blast-mesh | blast mesh report - --plot mesh.svg
`

type meshReportFlags struct {
	fs        *pflag.FlagSet
	csv, plot string
	help      bool
}

func newMeshReportFlags() *meshReportFlags {
	f := &meshReportFlags{fs: pflag.NewFlagSet("mesh report", pflag.ContinueOnError)}
	f.fs.SetOutput(io.Discard)
	f.fs.SortFlags = false
	f.fs.StringVar(&f.csv, "csv", "", "also write every cell as a CSV row to `FILE` (- for stdout, instead of the text)")
	f.fs.StringVar(&f.plot, "plot", "", "also draw the matrix as a heatmap into `FILE` (.svg or .png)")
	f.fs.BoolVarP(&f.help, "help", "h", false, "show this help")
	return f
}

func runMeshReport(e *env, args []string) int {
	f := newMeshReportFlags()
	usage := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "blast mesh report: %s\n", safetext.Line(fmt.Sprintf(format, a...)))
		return exitUsage
	}
	if err := f.fs.Parse(args); err != nil {
		fmt.Fprintf(e.stderr, "blast mesh report: %s: run 'blast mesh report -h' for the flags\n", flagError(err))
		return exitUsage
	}
	if f.help {
		io.WriteString(e.stdout, meshReportIntro+f.fs.FlagUsages()+meshReportExamples)
		return exitOK
	}
	if f.fs.NArg() != 1 {
		return usage("give one mesh document (what blast mesh wrote), such as mesh.json")
	}
	if f.plot != "" {
		if err := plot.CheckPath(f.plot); err != nil {
			return usage("--plot: %v", err)
		}
	}
	name := f.fs.Arg(0)
	var in io.Reader = e.stdin
	if name != "-" {
		file, err := os.Open(name)
		if err != nil {
			fmt.Fprintf(e.stderr, "blast mesh report: %v\n", err)
			return exitFailure
		}
		defer file.Close()
		in = file
	}
	doc, err := mesh.ReadDocument(in)
	if err != nil {
		fmt.Fprintf(e.stderr, "blast mesh report: %s: %v\n", name, err)
		return exitFailure
	}
	if f.csv != "-" {
		if err := mesh.Report(e.stdout, doc); err != nil {
			fmt.Fprintf(e.stderr, "blast mesh report: %v\n", err)
			return exitFailure
		}
	}
	if f.csv != "" {
		if err := writeTo(e, f.csv, func(w io.Writer) error { return mesh.WriteCSV(w, doc) }); err != nil {
			fmt.Fprintf(e.stderr, "blast mesh report: --csv: %v\n", err)
			return exitFailure
		}
	}
	if f.plot != "" {
		if err := plot.Mesh(f.plot, doc); err != nil {
			fmt.Fprintf(e.stderr, "blast mesh report: --plot: %v\n", err)
			return exitFailure
		}
	}
	return exitOK
}

// writeTo writes with fn into the file path, or to stdout for "-".
func writeTo(e *env, path string, fn func(io.Writer) error) error {
	if path == "-" {
		return fn(e.stdout)
	}
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fn(file); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}
