package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/blastnet/blast/control"
)

func init() {
	register(command{name: "version", summary: "show blast's version, the commit it was built from and the Go that built it", run: runVersion})
}

func runVersion(e *env, args []string) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintf(e.stdout, "Usage: blast version   (or blast client -v)\n\nPrints the version, the commit (vcs.revision of the build), the Go version and the system.\n")
		return exitOK
	}
	if len(args) > 0 {
		fmt.Fprintf(e.stderr, "blast version: unexpected argument %q: it takes none\n", args[0])
		return exitUsage
	}
	writeVersion(e.stdout)
	return exitOK
}

// writeVersion writes what `blast version` and iperf3's -v show: the
// version, the commit the binary was built from (with "modified" when the
// work tree had changes), the Go toolchain and platform, and the system.
func writeVersion(w io.Writer) {
	fmt.Fprintf(w, "%s\n", control.Version)
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
