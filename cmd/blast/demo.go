package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/blastnet/blast/demo"
)

func init() {
	register(command{name: "demo", summary: "build a lab of network namespaces and measure across it", run: runDemo,
		flags: func() *pflag.FlagSet { return newDemoFlags().fs }})
}

const demoIntro = `Usage: blast demo

Builds a lab of network namespaces (as root): a plain veth link, one limited
to 100 Mbit/s, and a routed path through a router namespace; runs a
ttcp-mode transfer across each, receiver in the far namespace; prints both
ends' lines and a summary; removes the lab (also on Ctrl-C). Not as root,
it runs one transfer over loopback and says why.

Flags:
`

const demoExamples = `
Examples:
  sudo blast demo                    # the three links of the lab
  blast demo                         # not root: one transfer over loopback
  make demo                          # from a checkout: build, then run it
`

// demoFlags are blast demo's flags.
type demoFlags struct {
	fs   *pflag.FlagSet
	help bool
}

// newDemoFlags defines blast demo's flags: the parser, the help, the
// completions and the man page all read these definitions.
func newDemoFlags() *demoFlags {
	f := &demoFlags{fs: pflag.NewFlagSet("demo", pflag.ContinueOnError)}
	f.fs.SetOutput(io.Discard)
	f.fs.BoolVarP(&f.help, "help", "h", false, "show this help")
	return f
}

func runDemo(e *env, args []string) int {
	f := newDemoFlags()
	if err := f.fs.Parse(args); err != nil {
		fmt.Fprintf(e.stderr, "blast: demo: %s: run 'blast help demo'\n", flagError(err))
		return exitUsage
	}
	if f.help {
		io.WriteString(e.stdout, demoIntro+f.fs.FlagUsages()+demoExamples)
		return exitOK
	}
	if f.fs.NArg() > 0 {
		fmt.Fprintf(e.stderr, "blast: demo takes no arguments (got %q): run 'blast demo'\n", f.fs.Arg(0))
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
