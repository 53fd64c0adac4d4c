package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/blastnet/blast/engine"
)

func init() {
	register(command{name: "backends", summary: "list the ways of moving bytes and whether each can run here", run: runBackends,
		flags: func() *pflag.FlagSet { return newBackendsFlags().fs }})
}

const backendsIntro = `Usage: blast backends [options]

Every backend (a way of moving bytes between blast and the kernel), what it
does, what it moves, its options, and whether it can run on this machine:
"usable", "not supported here: WHY", or "probe failed: WHY".

Pick one with --backend NAME (sending side) and --rx-backend NAME
(receiving side). The options listed are each backend's knobs, written
as in batch=64,gso.

Options:
`

const backendsExamples = `
Examples:
  blast backends
  blast backends -J | jq '.[] | select(.usable) | .name'
  blast client 10.0.0.2 --backend zerocopy      # then send with one of them
`

// backendsFlags are blast backends' flags.
type backendsFlags struct {
	fs         *pflag.FlagSet
	json, help bool
}

// newBackendsFlags defines blast backends' flags: the parser, the help,
// the completions and the man page all read these definitions.
func newBackendsFlags() *backendsFlags {
	f := &backendsFlags{fs: pflag.NewFlagSet("backends", pflag.ContinueOnError)}
	f.fs.SetOutput(io.Discard)
	f.fs.SortFlags = false
	f.fs.BoolVarP(&f.json, "json", "J", false, "JSON instead of text")
	f.fs.BoolVarP(&f.help, "help", "h", false, "show this help")
	return f
}

// backendsHelp is blast backends' help, its flags from their definitions.
func backendsHelp() string {
	return backendsIntro + newBackendsFlags().fs.FlagUsages() + backendsExamples
}

// backendInfo is what `blast backends` says about one backend.
type backendInfo struct {
	Name    string       `json:"name"`
	Usable  bool         `json:"usable"`
	Status  string       `json:"status"`
	Does    string       `json:"does,omitempty"`
	Moves   string       `json:"moves,omitempty"`
	Options []optionInfo `json:"options,omitempty"`
}

// optionInfo is one option a backend declares.
type optionInfo struct {
	Name    string `json:"name"`
	Usage   string `json:"usage"`
	Default string `json:"default"`
	Help    string `json:"help"`
}

// backendDocs describes the backends blast ships; a backend registered
// from elsewhere is listed with its probe result alone.
var backendDocs = map[string][2]string{
	"readwrite": {"write(2) and read(2), one buffer per call: the classic path", "TCP, UDP; send, receive"},
	"sendfile":  {"sendfile(2) from a memfd holding the pattern, or from a file: no copy through user memory", "TCP; send"},
	"splice":    {"vmsplice(2)/splice(2) through a pipe; receives socket -> pipe -> /dev/null or the output file", "TCP; send, receive"},
	"zerocopy":  {"MSG_ZEROCOPY sends, completions read from the error queue; says how many the kernel copied anyway", "TCP, UDP; send"},
	"trunc":     {"recv(2) with MSG_TRUNC: the kernel discards the data without copying it (sink mode only)", "TCP, UDP; receive"},
	"mmsg":      {"sendmmsg(2)/recvmmsg(2) in batches, optionally UDP_SEGMENT (GSO) and UDP_GRO", "UDP; send, receive"},
	"iouring":   {"io_uring send/receive, a batch of operations per io_uring_enter", "TCP, UDP; send, receive"},
	"afxdp":     {"AF_XDP: frames straight to and from the NIC's queue, bypassing the stack", "UDP; send, receive"},
}

func runBackends(e *env, args []string) int {
	f := newBackendsFlags()
	fs, jsonOut, help := f.fs, &f.json, &f.help
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(e.stderr, "blast backends: %s: run 'blast help backends' for the options\n", flagError(err))
		return exitUsage
	}
	if *help {
		fmt.Fprint(e.stdout, backendsHelp())
		return exitOK
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(e.stderr, "blast backends: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	infos := listBackends()
	if *jsonOut {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(infos); err != nil {
			fmt.Fprintf(e.stderr, "blast backends: %v\n", err)
			return exitFailure
		}
		return exitOK
	}
	writeBackends(e.stdout, infos)
	return exitOK
}

// listBackends probes every registered backend.
func listBackends() []backendInfo {
	var infos []backendInfo
	for _, name := range engine.Names() {
		b, err := engine.Lookup(name)
		if err != nil {
			continue
		}
		perr := b.Probe()
		d := backendDocs[name]
		in := backendInfo{Name: name, Usable: perr == nil, Status: engine.ProbeWords(perr), Does: d[0], Moves: d[1]}
		for _, o := range engine.OptionsOf(b) {
			in.Options = append(in.Options, optionInfo{Name: o.Name, Usage: o.Usage(), Default: o.Default, Help: o.Help})
		}
		infos = append(infos, in)
	}
	return infos
}

func writeBackends(w io.Writer, infos []backendInfo) {
	width := 0
	for _, in := range infos {
		width = max(width, len(in.Name))
	}
	pad := strings.Repeat(" ", width+2)
	for _, in := range infos {
		fmt.Fprintf(w, "%-*s  %s\n", width, in.Name, in.Status)
		if in.Does != "" {
			fmt.Fprintf(w, "%s%s\n", pad, in.Does)
		}
		if in.Moves != "" {
			fmt.Fprintf(w, "%s%s\n", pad, in.Moves)
		}
		for _, o := range in.Options {
			fmt.Fprintf(w, "%s  %-12s %s (default: %s)\n", pad, o.Usage, o.Help, o.Default)
		}
	}
}
