package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/internal/safetext"
)

func init() {
	register(command{name: "man", summary: "write the man pages (blast.1, blast-COMMAND.1) into a directory", run: runMan,
		flags: func() *pflag.FlagSet { return newManFlags().fs }})
}

const manIntro = `Usage: blast man DIR

Writes blast's man pages into DIR, which it makes if missing: blast.1 and
a blast-COMMAND.1 for every command. Each page is made from the command's
help and its flag definitions, the ones 'blast help COMMAND' shows. The
pages are dated by SOURCE_DATE_EPOCH when it is set (reproducible builds),
otherwise today.

Flags:
`

const manExamples = `
Examples:
  blast man /tmp/man && man -l /tmp/man/blast-client.1
  make man                           # from a checkout: into man/
  sudo make install                  # man pages and completions too
`

// manFlags are blast man's flags.
type manFlags struct {
	fs   *pflag.FlagSet
	help bool
}

// newManFlags defines blast man's flags: the parser, the help, the
// completions and the man page all read these definitions.
func newManFlags() *manFlags {
	f := &manFlags{fs: pflag.NewFlagSet("man", pflag.ContinueOnError)}
	f.fs.SetOutput(io.Discard)
	f.fs.BoolVarP(&f.help, "help", "h", false, "show this help")
	return f
}

func runMan(e *env, args []string) int {
	f := newManFlags()
	usage := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "blast man: %s\n", safetext.Line(fmt.Sprintf(format, a...)))
		return exitUsage
	}
	if err := f.fs.Parse(args); err != nil {
		return usage("%s: run 'blast help man' for the usage", flagText(err))
	}
	if f.help {
		io.WriteString(e.stdout, manIntro+f.fs.FlagUsages()+manExamples)
		return exitOK
	}
	if f.fs.NArg() != 1 {
		return usage("name one directory for the pages: blast man DIR")
	}
	dir := f.fs.Arg(0)
	fail := func(err error) int {
		fmt.Fprintf(e.stderr, "blast man: %s\n", safetext.Line(err.Error()))
		return exitFailure
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err)
	}
	header := &doc.GenManHeader{Section: "1", Source: result.Version, Manual: "blast manual"}
	if err := doc.GenManTree(commandTree(true), header, dir); err != nil {
		return fail(err)
	}
	fmt.Fprintf(e.stdout, "blast man: wrote blast.1 and %d command pages into %s\n", len(commands), safetext.Line(filepath.Clean(dir)))
	return exitOK
}

// manText turns a command's help into the man page's description and
// examples, in the Markdown that cobra renders to roff. The flag list
// (flags, as the help embeds it) is left out with its heading: the page
// lists the same definitions under OPTIONS. The indented lines under
// "Examples:" are the examples. Of the rest, a paragraph with indented
// lines (usage lines, tables) is kept as it is, and the others are prose.
func manText(help, flags string) (desc, examples string) {
	if i := strings.Index(help, flags); flags != "" && i >= 0 {
		before, after := help[:i], help[i+len(flags):]
		body, head := cutLastLine(before)
		switch {
		case head == "Flags:" || head == "Options:":
			before = body
		case strings.HasSuffix(head, ":"):
			before = body + strings.TrimSuffix(head, ":") + " are listed under OPTIONS.\n"
		}
		help = before + after
	}
	var rest, ex []string
	lines := strings.Split(help, "\n")
	for i := 0; i < len(lines); i++ {
		if lines[i] != "Examples:" || ex != nil {
			rest = append(rest, lines[i])
			continue
		}
		j := i + 1
		for j < len(lines) && (lines[j] == "" || lines[j][0] == ' ') {
			j++
		}
		ex = append([]string{}, lines[i+1:j]...)
		i = j - 1
	}
	return markdown(rest), strings.Join(dedent(ex), "\n")
}

// cutLastLine splits text, which ends in a newline, before its last line.
func cutLastLine(text string) (body, last string) {
	text = strings.TrimSuffix(text, "\n")
	i := strings.LastIndex(text, "\n")
	return text[:i+1], text[i+1:]
}

// dedent drops the blank lines at the ends of lines and the indentation
// they all share.
func dedent(lines []string) []string {
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if n := len(l) - len(strings.TrimLeft(l, " ")); indent < 0 || n < indent {
			indent = n
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if len(l) >= indent && indent > 0 {
			l = l[indent:]
		}
		out[i] = l
	}
	return out
}

// markdown renders help text as Markdown paragraphs: one with an indented
// line as a code block (kept line for line), the others as prose with
// every character Markdown would read as markup escaped.
func markdown(lines []string) string {
	var paras []string
	var para []string
	flush := func() {
		if len(para) == 0 {
			return
		}
		code := false
		for _, l := range para {
			code = code || strings.HasPrefix(l, " ")
		}
		if code {
			paras = append(paras, "```\n"+strings.Join(dedent(para), "\n")+"\n```")
		} else {
			paras = append(paras, markdownEscaper.Replace(strings.Join(para, "\n")))
		}
		para = nil
	}
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			flush()
			continue
		}
		para = append(para, l)
	}
	flush()
	return strings.Join(paras, "\n\n")
}

// markdownEscaper escapes the characters Markdown (blackfriday, which
// cobra's man pages go through) may read as markup.
var markdownEscaper = func() *strings.Replacer {
	var pairs []string
	for _, c := range "\\`*_{}[]()#+-.!:|&<>~" {
		pairs = append(pairs, string(c), `\`+string(c))
	}
	return strings.NewReplacer(pairs...)
}()
