// Command blastbench runs bench's suite: blast against iperf3 and the
// other peers on a netns lab it builds, then writes the results JSON and
// the README table. It needs root. `make bench` and `make bench-quick` run
// it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/blastnet/blast/bench"
)

func main() {
	os.Exit(run())
}

func run() int {
	quick := flag.Bool("quick", false, "the short suite (about 2 minutes): 3 rounds of 1 s, fewer workloads, no compare")
	pairs := flag.Int("pairs", 0, "rounds per workload, each blast then every peer once (default 5, quick 3)")
	secs := flag.Int("secs", 0, "seconds per run (default 3, quick 1)")
	blast := flag.String("blast", "", "blast binary to measure (default: build ./cmd/blast into a temporary directory)")
	dir := flag.String("dir", ".", "the blast source tree (module root)")
	only := flag.String("only", "", "comma-separated workload IDs to run (results then go nowhere unless -write)")
	write := flag.Bool("write", true, "write bench/results/<date>-<host>.json and the table in bench/README.md")
	cmp := flag.Bool("compare", true, "also run blast compare --lab, TCP and UDP (-secs per backend; default off with -quick)")
	all := flag.Bool("all", false, "also the workloads outside the default suite (UDP 1400 B, qperf): over 15 minutes")
	iperf3 := flag.String("iperf3", "", "a modern iperf3 (3.16 or later) to measure besides Debian's /usr/bin/iperf3;\n"+
		"default: the newest such iperf3 or iperf3-* on PATH; none: Debian's only")
	txCase := flag.String("tx", "", "run one transfer instead of the suite, for profiling: blast -t --backend NAME[:OPTS] in one\n"+
		"namespace to blast -r (-rx) in the other, about -secs long; prints both ends' output and rusage, writes nothing")
	rxCase := flag.String("rx", "", "with -tx: the receiver's --backend NAME[:OPTS] (default readwrite)")
	udp := flag.Bool("u", false, "-tx/-rx: UDP (default TCP)")
	bufLen := flag.Int("l", 0, "-tx/-rx: buffer length (default 131072 for TCP, 64 for UDP)")
	render := flag.String("render", "", "write bench/README.md's tables from this results JSON (of an earlier run) and exit")
	flag.Parse()
	if *render != "" {
		res, err := bench.ReadJSON(*render)
		if err == nil {
			err = bench.UpdateREADME(filepath.Join(*dir, "bench", "README.md"), res, *render)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "blastbench: %v\n", err)
			return 1
		}
		return 0
	}
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "blastbench: unexpected argument %q: bench takes no hosts; it builds its own lab\n", flag.Arg(0))
		return 2
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "blastbench: needs root: it builds a network-namespace lab (sudo make bench-quick)")
		return 2
	}
	cfg := bench.Config{Quick: *quick, Pairs: 5, Secs: 3, Compare: *cmp, All: *all, Dir: *dir, Log: os.Stderr, Iperf3: *iperf3}
	if *quick {
		cfg.Pairs, cfg.Secs = 3, 1
		cfg.Compare = *cmp && isFlagSet("compare")
	}
	if *pairs > 0 {
		cfg.Pairs = *pairs
	}
	if *secs > 0 {
		cfg.Secs = *secs
	}
	if *only != "" {
		cfg.Only = strings.Split(*only, ",")
		cfg.Compare = false
		if !isFlagSet("write") {
			*write = false
		}
	}

	// SIGINT and SIGTERM cancel the context: the running tools are killed
	// and the lab is removed before blastbench exits.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg.Blast = *blast
	if cfg.Blast == "" {
		tmp, err := os.MkdirTemp("", "blastbench-")
		if err != nil {
			fmt.Fprintf(os.Stderr, "blastbench: %v\n", err)
			return 1
		}
		defer os.RemoveAll(tmp)
		cfg.Blast = filepath.Join(tmp, "blast")
		build := exec.CommandContext(ctx, "go", "build", "-o", cfg.Blast, "./cmd/blast")
		build.Dir, build.Stdout, build.Stderr = *dir, os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "blastbench: build blast: %v\n", err)
			return 1
		}
		cfg.BlastBuilt = true
	} else if abs, err := filepath.Abs(cfg.Blast); err == nil {
		cfg.Blast = abs
	}

	if *txCase != "" || *rxCase != "" {
		c, err := bench.ParseCase(*txCase, *rxCase, *udp, *bufLen)
		if err != nil {
			fmt.Fprintf(os.Stderr, "blastbench: -tx/-rx: %v\n", err)
			return 2
		}
		err = bench.RunCase(ctx, cfg.Blast, c, cfg.Secs, os.Stdout)
		if errors.Is(err, context.Canceled) {
			return 130
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "blastbench: %v\n", err)
			return 1
		}
		return 0
	}

	res, err := bench.Run(ctx, cfg)
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "blastbench: interrupted; nothing written")
		return 130
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "blastbench: %v\n", err)
		return 1
	}
	benchDir := filepath.Join(*dir, "bench")
	path := bench.ResultsPath(benchDir, res)
	if *write {
		if err := bench.WriteJSON(path, res); err != nil {
			fmt.Fprintf(os.Stderr, "blastbench: %v\n", err)
			return 1
		}
		if err := bench.UpdateREADME(filepath.Join(benchDir, "README.md"), res, path); err != nil {
			fmt.Fprintf(os.Stderr, "blastbench: README: %v\n", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "blastbench: wrote %s and %s\n", path, filepath.Join(benchDir, "README.md"))
	}
	bench.WriteTables(os.Stdout, res, path)
	return 0
}

func isFlagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
