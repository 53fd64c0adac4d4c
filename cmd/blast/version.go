package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/pflag"

	"github.com/blastnet/blast/control"
	"github.com/blastnet/blast/control/result"
)

func init() {
	register(command{name: "version", summary: "show blast's version, the commit it was built from and the Go that built it", run: runVersion,
		flags: func() *pflag.FlagSet { return newVersionFlags().fs }})
}

const versionIntro = `Usage: blast version   (or blast --version, blast -v, blast client -v)

Prints the version, the commit (vcs.revision of the build, "modified" when
the work tree had changes), the Go version and platform, and the system.

Flags:
`

const versionExamples = `
Examples:
  blast version
  blast -v                           # iperf3's spelling
  blast version | sed -n 2p          # the commit line
`

// versionFlags are blast version's flags.
type versionFlags struct {
	fs   *pflag.FlagSet
	help bool
}

// newVersionFlags defines blast version's flags: the parser, the help,
// the completions and the man page all read these definitions.
func newVersionFlags() *versionFlags {
	f := &versionFlags{fs: pflag.NewFlagSet("version", pflag.ContinueOnError)}
	f.fs.SetOutput(io.Discard)
	f.fs.BoolVarP(&f.help, "help", "h", false, "show this help")
	return f
}

func runVersion(e *env, args []string) int {
	f := newVersionFlags()
	if err := f.fs.Parse(args); err != nil {
		fmt.Fprintf(e.stderr, "blast version: %s: it takes no arguments\n", flagError(err))
		return exitUsage
	}
	if f.help {
		io.WriteString(e.stdout, versionIntro+f.fs.FlagUsages()+versionExamples)
		return exitOK
	}
	if f.fs.NArg() > 0 {
		fmt.Fprintf(e.stderr, "blast version: unexpected argument %q: it takes none\n", f.fs.Arg(0))
		return exitUsage
	}
	writeVersion(e.stdout)
	return exitOK
}

// writeVersion writes what `blast version` and iperf3's -v show: the
// version, the commit the binary was built from (with "modified" when the
// work tree had changes), the Go toolchain and platform, and the system.
func writeVersion(w io.Writer) {
	fmt.Fprintf(w, "%s\n", result.Version)
	commit, when, modified := "unknown (not built from a git checkout)", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	fmt.Fprintf(w, "commit %s", commit)
	if when != "" {
		fmt.Fprintf(w, " (%s)", when)
	}
	if modified {
		fmt.Fprint(w, ", modified")
	}
	fmt.Fprintf(w, "\n%s %s/%s\n%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, control.SystemInfo())
}
