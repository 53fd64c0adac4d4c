// Command blast measures links: classic ttcp mode, iperf3-compatible
// client/server mode, backend comparison, NIC inspection and diagnosis.
//
// main only dispatches: each command parses its flags into a Config of the
// package that does the work, runs it, prints, and returns an exit status.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	_ "github.com/blastnet/blast/engine/backends" // every backend, in every mode
	"github.com/blastnet/blast/internal/safetext"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1 // the run failed
	exitUsage   = 2 // the command line is wrong
)

// env is what a command may touch of the process.
type env struct {
	ctx    context.Context
	argv0  string // the name blast was invoked as ("blast", "ttcp")
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// command is one `blast NAME ...` subcommand.
type command struct {
	name    string
	summary string
	run     func(e *env, args []string) int
	// flags defines the command's flags afresh, with their help: the
	// command's parser and help, the shell completions and the man pages
	// all read these definitions.
	flags func() *pflag.FlagSet
}

var commands = map[string]command{}

func register(c command) { commands[c.name] = c }

// rootFlags are the flags blast takes before a command: dispatch reads
// them itself (-t, -r, -c and -s choose a mode, see shortFlagMode); these
// definitions are for the completions and the man page.
func rootFlags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("blast", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.BoolP("help", "h", false, "list the commands (blast help COMMAND: a command's flags and examples)")
	fs.BoolP("version", "v", false, "show the version, the commit and the Go that built blast (blast version)")
	return fs
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	e := &env{ctx: ctx, argv0: filepath.Base(os.Args[0]), stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}
	code := dispatch(e, os.Args[1:])
	stop()
	os.Exit(code)
}

// dispatch picks the command: invoked as ttcp, or with ttcp's -t/-r, it is
// classic ttcp mode; -c HOST and -s are iperf3's client and server;
// otherwise the first argument names the command.
func dispatch(e *env, args []string) int {
	if e.argv0 == "ttcp" {
		return commands["ttcp"].run(e, args)
	}
	if len(args) == 0 {
		usage(e.stderr)
		return exitUsage
	}
	switch args[0] {
	case cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd: // from the completion scripts
		return complete(e, args)
	case "-h", "--help", "help":
		if len(args) > 1 {
			if c, ok := commands[args[1]]; ok {
				return c.run(e, []string{"--help"})
			}
			fmt.Fprintf(e.stderr, "blast: help %s: no such command: run 'blast help' for the list\n", safetext.Line(args[1]))
			return exitUsage
		}
		usage(e.stdout)
		return exitOK
	case "--version":
		return commands["version"].run(e, args[1:])
	case "-v":
		if len(args) == 1 { // iperf3's -v; with more, ttcp's verbose flag
			return commands["version"].run(e, nil)
		}
	}
	if c, ok := commands[args[0]]; ok {
		return c.run(e, args[1:])
	}
	if mode := shortFlagMode(args); mode != "" {
		if c, ok := commands[mode]; ok {
			return c.run(e, args)
		}
	}
	fmt.Fprintf(e.stderr, "blast: unknown command %q: run 'blast help' for the list\n", args[0])
	return exitUsage
}

// shortFlagMode tells the mode a command line of bare flags asks for: ttcp
// for -t or -r (alone or grouped, as in -ts), client for -c HOST before
// them, server for -s without -t or -r.
func shortFlagMode(args []string) string {
	server := false
	for _, a := range args {
		if a == "--" {
			break
		}
		if len(a) < 2 || a[0] != '-' || a[1] == '-' {
			continue
		}
		for _, r := range a[1:] {
			switch r {
			case 't', 'r':
				return "ttcp"
			case 'c':
				return "client"
			case 's':
				server = true
				continue
			}
			if !strings.ContainsRune("uDvT46BdR", r) { // the rest is a value
				break
			}
		}
	}
	if server {
		return "server"
	}
	return ""
}

// tagline says what blast is, in the usage and the man page.
const tagline = "measure a link, compare ways of moving bytes, and find out why it is slow"

func usage(w io.Writer) {
	fmt.Fprintf(w, "blast: %s.\n\n", tagline)
	fmt.Fprintf(w, `Classic ttcp mode:
  blast -r -s                 receive (sink) on port 5001
  blast -t -s HOST            transmit a pattern to HOST
  blast -t HOST < file        send a file; blast -r > file receives it

Commands:
`)
	for _, n := range commandNames() {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, `
Examples:
  blast server                       on one host; then, on another:
  blast client 10.0.0.2              throughput, as iperf3 -c 10.0.0.2
  blast lat 10.0.0.2 -p 5201         round trips against the same server
  blast doctor 10.0.0.2              why is it slow: a ranked verdict
  sudo blast compare --lab           every backend side by side, on this machine
  blast nic                          the interfaces and what is wrong with them

Run 'blast help COMMAND' for a command's flags and examples.
`)
}
