package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/blastnet/blast/engine"
)

// blast's dispatch is its own; cobra only writes the completion scripts
// and the man pages from a tree of cobra.Commands made, at run time, of the
// registered commands and their flag definitions (command.flags), and
// answers the scripts' requests (blast __complete WORDS...).

func init() {
	register(command{name: "completion", summary: "write the shell completion script for bash, zsh or fish", run: runCompletion,
		flags: func() *pflag.FlagSet { return newCompletionFlags().fs }})
}

const completionIntro = `Usage: blast completion bash|zsh|fish

Writes the completion script for the shell to standard output. It
completes the commands, every flag of every command (from the
definitions 'blast help COMMAND' lists), the names after --backend and
--rx-backend and their options after the colon, and interface names. The
script asks blast itself (blast __complete WORDS...) as you type, so it
follows the blast that is installed. The bash script needs the
bash-completion package.

Flags:
`

const completionExamples = `
Examples:
  source <(blast completion bash)                    # this shell only
  blast completion bash > /usr/share/bash-completion/completions/blast
  blast completion zsh > "${fpath[1]}/_blast"        # then start a new zsh
  blast completion fish > ~/.config/fish/completions/blast.fish
  sudo make install                                  # installs all three
`

// completionShells are the shells blast writes a script for.
var completionShells = []struct {
	name string
	gen  func(root *cobra.Command, w io.Writer) error
}{
	{"bash", func(root *cobra.Command, w io.Writer) error { return root.GenBashCompletionV2(w, true) }},
	{"zsh", func(root *cobra.Command, w io.Writer) error { return root.GenZshCompletion(w) }},
	{"fish", func(root *cobra.Command, w io.Writer) error { return root.GenFishCompletion(w, true) }},
}

// completionFlags are blast completion's flags.
type completionFlags struct {
	fs   *pflag.FlagSet
	help bool
}

// newCompletionFlags defines blast completion's flags: the parser, the
// help, the completions and the man page all read these definitions.
func newCompletionFlags() *completionFlags {
	f := &completionFlags{fs: pflag.NewFlagSet("completion", pflag.ContinueOnError)}
	f.fs.SetOutput(io.Discard)
	f.fs.BoolVarP(&f.help, "help", "h", false, "show this help")
	return f
}

func runCompletion(e *env, args []string) int {
	f := newCompletionFlags()
	usage := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "blast completion: "+format+"\n", a...)
		return exitUsage
	}
	if err := f.fs.Parse(args); err != nil {
		return usage("%s: run 'blast help completion' for the usage", flagError(err))
	}
	if f.help {
		io.WriteString(e.stdout, completionIntro+f.fs.FlagUsages()+completionExamples)
		return exitOK
	}
	switch f.fs.NArg() {
	case 0:
		return usage("name the shell: bash, zsh or fish")
	case 1:
	default:
		return usage("too many arguments: %q: name one shell: bash, zsh or fish", strings.Join(f.fs.Args(), " "))
	}
	for _, sh := range completionShells {
		if sh.name == f.fs.Arg(0) {
			if err := sh.gen(commandTree(false), e.stdout); err != nil {
				fmt.Fprintf(e.stderr, "blast completion: %v\n", err)
				return exitFailure
			}
			return exitOK
		}
	}
	return usage("unknown shell %q: the shells are bash, zsh and fish", f.fs.Arg(0))
}

// complete answers a completion script: args are cobra's request
// (__complete or __completeNoDesc) and the words typed so far, the last
// one being completed. A line of bare flags completes as the mode they
// choose (blast -t -s ... as ttcp mode), as dispatch runs it.
func complete(e *env, args []string) int {
	words := args[1:]
	if n := len(words); n > 1 && strings.HasPrefix(words[0], "-") {
		if mode := shortFlagMode(words[:n-1]); mode != "" {
			words = append([]string{mode}, words...)
		}
	}
	root := commandTree(false)
	root.SetArgs(append([]string{args[0]}, words...))
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	if err := root.ExecuteContext(e.ctx); err != nil {
		fmt.Fprintf(e.stderr, "blast %s: %v\n", args[0], err)
		return exitUsage
	}
	return exitOK
}

// commandNames are the registered commands' names, sorted.
func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// commandTree is blast as a cobra.Command tree: the root with rootFlags,
// one child per registered command with the flags its command.flags
// defines (hidden ones stay hidden), and a help command. With docs, every
// command carries its help text too, split into the man page's
// description and examples (manText).
func commandTree(docs bool) *cobra.Command {
	noop := func(*cobra.Command, []string) {}
	root := &cobra.Command{
		Use:               "blast COMMAND",
		Short:             tagline,
		SilenceErrors:     true,
		SilenceUsage:      true,
		DisableAutoGenTag: true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	addFlags(root, rootFlags(), docs)
	root.SetHelpCommand(&cobra.Command{
		Use:               "help [COMMAND]",
		Short:             "list the commands, or show a command's flags and examples",
		Run:               noop,
		ValidArgsFunction: completeCommand,
	})
	if docs {
		var b strings.Builder
		usage(&b)
		_, help, _ := strings.Cut(b.String(), "\n")
		root.Long, root.Example = manText(help, "")
	}
	for _, name := range commandNames() {
		c := commands[name]
		child := &cobra.Command{Use: name, Short: c.summary, Run: noop, ValidArgsFunction: cobra.NoFileCompletions}
		if fn, ok := argCompletions[name]; ok {
			child.ValidArgsFunction = fn
		}
		fs := c.flags()
		if docs {
			child.Long, child.Example = manText(helpOf(c), fs.FlagUsages())
		}
		addFlags(child, fs, docs)
		for flag, fn := range flagCompletions {
			if fs.Lookup(flag) != nil {
				child.RegisterFlagCompletionFunc(flag, fn)
			}
		}
		if name == "mesh" {
			// blast mesh report FILE: the one subcommand.
			rfs := newMeshReportFlags().fs
			sub := &cobra.Command{Use: "report FILE.json", Short: "the matrix, outliers, CSV and heatmap of a mesh document", Run: noop}
			if docs {
				sub.Long, sub.Example = manText(meshReportIntro+rfs.FlagUsages()+meshReportExamples, rfs.FlagUsages())
			}
			addFlags(sub, rfs, docs)
			child.AddCommand(sub)
		}
		root.AddCommand(child)
	}
	return root
}

// addFlags gives cmd the flags of fs, in fs's order. The usage strings
// lose the back quotes that name a flag's value in the help (`FILE`):
// completions and man pages show them as they are. For the man pages
// (docs), they are escaped as the Markdown cobra renders them from.
func addFlags(cmd *cobra.Command, fs *pflag.FlagSet, docs bool) {
	fs.VisitAll(func(f *pflag.Flag) {
		_, f.Usage = pflag.UnquoteUsage(f)
		if docs {
			f.Usage = markdownEscaper.Replace(f.Usage)
		}
	})
	cmd.Flags().AddFlagSet(fs)
	cmd.Flags().SortFlags = fs.SortFlags
}

// helpOf is what 'blast help NAME' prints.
func helpOf(c command) string {
	var b strings.Builder
	c.run(&env{ctx: context.Background(), argv0: "blast", stdin: strings.NewReader(""), stdout: &b, stderr: io.Discard}, []string{"--help"})
	return b.String()
}

// argCompletions complete a command's arguments. A command not here takes
// a host or nothing, which no file name completes.
var argCompletions = map[string]cobra.CompletionFunc{
	"completion": completeShell,
	"man":        completeDir,
	"nic":        completeInterface,
}

// flagCompletions complete the values of the flags of these names, in
// every command that has one; other flags complete file names.
var flagCompletions = map[string]cobra.CompletionFunc{
	"backend":    completeBackend,
	"rx-backend": completeBackend,
	"bind-dev":   completeInterface,
	"interface":  completeInterface, // ttcp's -I
	"capture":    completeDir,
	"sysfs":      completeDir,
	"after":      completeDir,
	"offline":    completeDir,
	"plot":       cobra.FixedCompletions([]cobra.Completion{"svg", "png"}, cobra.ShellCompDirectiveFilterFileExt),
}

func completeCommand(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, n := range commandNames() {
		out = append(out, cobra.CompletionWithDesc(n, commands[n].summary))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func completeShell(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, sh := range completionShells {
		out = append(out, sh.name)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func completeDir(_ *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return nil, cobra.ShellCompDirectiveFilterDirs
}

// completeInterface offers this machine's interfaces (nic: the first
// argument only).
func completeInterface(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	ifs, err := net.Interfaces()
	if err != nil || (cmd.Name() == "nic" && len(args) > 0) {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, ifc := range ifs {
		out = append(out, ifc.Name)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeBackend offers the registered backends (NAME, with what each
// does) and, after NAME:, that backend's options (OPT or OPT=, with their
// help), as NAME[:OPTIONS] takes them.
func completeBackend(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	name, _, hasOpts := strings.Cut(toComplete, ":")
	if !hasOpts {
		for _, n := range engine.Names() {
			out = append(out, cobra.CompletionWithDesc(n, backendDocs[n][0]))
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
	b, err := engine.Lookup(name)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	prefix := toComplete[:strings.LastIndexAny(toComplete, ":,")+1]
	for _, o := range engine.OptionsOf(b) {
		opt := o.Name
		if o.Kind != engine.Flag {
			opt += "="
		}
		out = append(out, cobra.CompletionWithDesc(prefix+opt, o.Help))
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}
