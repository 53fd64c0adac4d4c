package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestEveryCommandDefinesItsFlags(t *testing.T) {
	for _, name := range commandNames() {
		t.Run(name, func(t *testing.T) {
			c := commands[name]
			if c.flags == nil {
				t.Fatal("registered without a flag-set constructor")
			}
			fs := c.flags()
			fs.VisitAll(func(f *pflag.Flag) {
				if !f.Hidden && strings.TrimSpace(f.Usage) == "" {
					t.Errorf("--%s has no usage string", f.Name)
				}
			})
			if fs.Lookup("help") == nil {
				t.Error("no --help flag")
			}
			// The help lists the flags from these definitions, and ends
			// with examples of the command.
			help := helpOf(c)
			if !strings.Contains(help, fs.FlagUsages()) {
				t.Errorf("the help does not list the flags from their definitions:\n%s", help)
			}
			_, ex, ok := strings.Cut(help, "\nExamples:\n")
			if !ok {
				t.Fatalf("the help has no examples:\n%s", help)
			}
			if strings.TrimSpace(ex) == "" {
				t.Errorf("the examples section is empty")
			}
		})
	}
}

func TestHelpListsCompletionAndMan(t *testing.T) {
	code, out, _ := runArgs(t, "blast", "help")
	if code != exitOK {
		t.Fatalf("blast help: exit %d", code)
	}
	for _, name := range []string{"completion", "man"} {
		if !strings.Contains(out, fmt.Sprintf("  %-10s %s\n", name, commands[name].summary)) {
			t.Errorf("blast help does not list %s:\n%s", name, out)
		}
	}
}

// TestExamplesAreRealCommandLines parses the blast command line of every
// example in every help (the text up to two spaces, a comment, a pipe or
// a redirection) with the flags of the command it runs: an example with a
// flag that does not exist, or a value of the wrong type, fails.
func TestExamplesAreRealCommandLines(t *testing.T) {
	helps := map[string]string{"blast": ""}
	var b strings.Builder
	usage(&b)
	helps["blast"] = b.String()
	for _, name := range commandNames() {
		helps[name] = helpOf(commands[name])
	}
	cut := regexp.MustCompile(`  | #| \|| >| <| &&|\)`)
	for name, help := range helps {
		_, ex, ok := strings.Cut(help, "\nExamples:\n")
		if !ok {
			t.Errorf("blast help %s: no examples", name)
			continue
		}
		n := 0
		for _, line := range strings.Split(ex, "\n") {
			words := strings.Fields(cut.Split(strings.TrimSpace(line), 2)[0])
			for len(words) > 0 && (words[0] == "sudo" || strings.Contains(words[0], "=")) {
				words = words[1:] // sudo, IPERF3_PASSWORD=...
			}
			if len(words) < 2 || words[0] != "blast" {
				continue
			}
			n++
			args := words[1:]
			fs := rootFlags()
			if args[0] == "mesh" && len(args) > 1 && args[1] == "report" {
				fs, args = newMeshReportFlags().fs, args[2:]
			} else if c, ok := commands[args[0]]; ok {
				fs, args = c.flags(), args[1:]
			} else if mode := shortFlagMode(args); mode != "" {
				fs = commands[mode].flags()
			} else if !strings.HasPrefix(args[0], "-") {
				t.Errorf("blast help %s: example %q: no command %s", name, line, args[0])
				continue
			}
			if err := fs.Parse(args); err != nil {
				t.Errorf("blast help %s: example %q: %v", name, line, err)
			}
		}
		if n == 0 {
			t.Errorf("blast help %s: no example runs blast:\n%s", name, ex)
		}
	}
}
