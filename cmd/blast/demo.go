package main

import (
	"fmt"
	"io"
	"os"

	"github.com/blastnet/blast/demo"
)

func init() {
	register(command{name: "demo", summary: "build a lab of network namespaces and measure across it", run: runDemo})
}

const demoHelp = `Usage: blast demo

Builds a lab of network namespaces (as root): a plain veth link, one limited
to 100 Mbit/s, and a routed path through a router namespace; runs a
ttcp-mode transfer across each, receiver in the far namespace; prints both
ends' lines and a summary; removes the lab (also on Ctrl-C). Not as root,
it runs one transfer over loopback and says why.
`

func runDemo(e *env, args []string) int {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "--help" {
			io.WriteString(e.stdout, demoHelp)
			return exitOK
		}
		fmt.Fprintf(e.stderr, "blast: demo takes no arguments (got %q): run 'blast demo'\n", args[0])
		return exitUsage
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(e.stderr, "blast: demo: find the blast binary: %v\n", err)
		return exitFailure
	}
	if _, err := demo.Run(e.ctx, demo.Config{Exe: exe, Out: e.stdout, Root: os.Geteuid() == 0}); err != nil {
		fmt.Fprintf(e.stderr, "blast: demo: %v\n", err)
		return exitFailure
	}
	return exitOK
}
