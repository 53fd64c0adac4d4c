package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/blasttest"
)

// flagWords are what completing "-" offers for fs: --long, and -s where
// there is a shorthand, of every flag that is not hidden; and the hidden
// flags' words, which nothing may offer.
func flagWords(fs *pflag.FlagSet) (shown, hidden []string) {
	fs.VisitAll(func(f *pflag.Flag) {
		words := []string{"--" + f.Name}
		if f.Shorthand != "" {
			words = append(words, "-"+f.Shorthand)
		}
		if f.Hidden {
			hidden = append(hidden, words...)
		} else {
			shown = append(shown, words...)
		}
	})
	sort.Strings(shown)
	return shown, hidden
}

// completions runs the request a completion script makes (blast
// __completeNoDesc WORDS...) and returns the words offered.
func completions(t *testing.T, words ...string) []string {
	t.Helper()
	code, out, errs := runArgs(t, "blast", append([]string{"__completeNoDesc"}, words...)...)
	if code != exitOK {
		t.Fatalf("blast __completeNoDesc %q: exit %d, stderr %q", words, code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], ":") {
		t.Fatalf("blast __completeNoDesc %q: no directive at the end:\n%s", words, out)
	}
	got := lines[:len(lines)-1]
	sort.Strings(got)
	return got
}

func TestCompletionScripts(t *testing.T) {
	for _, tc := range []struct{ shell, registers string }{
		{"bash", "complete -o default -F __start_blast blast"},
		{"zsh", "#compdef blast"},
		{"fish", "complete -c blast "},
	} {
		t.Run(tc.shell, func(t *testing.T) {
			code, out, errs := runArgs(t, "blast", "completion", tc.shell)
			if code != exitOK || errs != "" {
				t.Fatalf("exit %d, stderr %q", code, errs)
			}
			// The script registers itself for blast and asks blast for the
			// words (TestCompletionOffersEveryFlag checks what it answers).
			for _, want := range []string{tc.registers, "__complete"} {
				if !strings.Contains(out, want) {
					t.Errorf("the %s script lacks %q", tc.shell, want)
				}
			}
		})
	}
}

// TestCompletionOffersEveryFlag asks what the scripts ask, for "-" after
// every command: every flag that is not hidden, long and short, and no
// hidden one.
func TestCompletionOffersEveryFlag(t *testing.T) {
	for _, name := range commandNames() {
		t.Run(name, func(t *testing.T) {
			want, _ := flagWords(commands[name].flags())
			if diff := cmp.Diff(want, completions(t, name, "-")); diff != "" {
				t.Errorf("blast %s -<TAB> (-want +got):\n%s", name, diff)
			}
		})
	}
	t.Run("root", func(t *testing.T) {
		want, _ := flagWords(rootFlags())
		if diff := cmp.Diff(want, completions(t, "-")); diff != "" {
			t.Errorf("blast -<TAB> (-want +got):\n%s", diff)
		}
	})
}

func TestCompletionValues(t *testing.T) {
	modes := engine.Names()
	for _, tc := range []struct {
		words []string
		want  []string
	}{
		{[]string{""}, append(commandNames(), "help")},
		{[]string{"help", ""}, commandNames()},
		{[]string{"completion", ""}, []string{"bash", "fish", "zsh"}},
		{[]string{"client", "--backend", ""}, modes},
		{[]string{"server", "--rx-backend", ""}, modes},
		{[]string{"ttcp", "-t", "--backend", ""}, modes},
		{[]string{"client", "--backend", "mmsg:"}, []string{"mmsg:batch=", "mmsg:gro", "mmsg:gso"}},
		{[]string{"client", "--backend", "mmsg:gso,"}, []string{"mmsg:gso,batch=", "mmsg:gso,gro", "mmsg:gso,gso"}},
		// A line of bare flags completes as the mode they choose.
		{[]string{"-t", "-s", "--ba"}, []string{"--backend"}},
		{[]string{"-s", "--max-c"}, []string{"--max-clients"}},
		{[]string{"-c", "h", "--bid"}, []string{"--bidir"}},
	} {
		t.Run(strings.Join(tc.words, " "), func(t *testing.T) {
			want := append([]string{}, tc.want...)
			sort.Strings(want)
			if diff := cmp.Diff(want, completions(t, tc.words...)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompletionUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"completion", "nonsense"}, "blast completion: unknown shell \"nonsense\": the shells are bash, zsh and fish\n"},
		{[]string{"completion"}, "blast completion: name the shell: bash, zsh or fish\n"},
		{[]string{"completion", "bash", "zsh"}, "blast completion: too many arguments: \"bash zsh\": name one shell: bash, zsh or fish\n"},
		{[]string{"completion", "--nonsense"}, "blast completion: unknown flag: --nonsense: run 'blast help completion' for the usage\n"},
		{[]string{"man"}, "blast man: name one directory for the pages: blast man DIR\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errs := runArgs(t, "blast", tc.args...)
			if code != exitUsage || out != "" || errs != tc.want {
				t.Errorf("exit %d, stdout %q, stderr:\n got %q\nwant %q", code, out, errs, tc.want)
			}
		})
	}
}

// roffText undoes the roff escapes of a man page, so that its flags read
// as typed.
var roffText = strings.NewReplacer(`\-`, "-", `\fB`, "", `\fI`, "", `\fP`, "", `\fR`, "", `\&`, "", `\e`, `\`)

func TestManPages(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man1") // made by blast man
	code, out, errs := runArgs(t, "blast", "man", dir)
	if code != exitOK || errs != "" {
		t.Fatalf("blast man: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	want := []string{"blast.1", "blast-mesh-report.1"} // blast mesh report: the one subcommand
	for _, name := range commandNames() {
		want = append(want, "blast-"+name+".1")
	}
	sort.Strings(want)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("pages (-want +got):\n%s", diff)
	}

	pages := map[string]*pflag.FlagSet{"blast.1": rootFlags(), "blast-mesh-report.1": newMeshReportFlags().fs}
	for _, name := range commandNames() {
		pages["blast-"+name+".1"] = commands[name].flags()
	}
	for page, fs := range pages {
		t.Run(page, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, page))
			if err != nil {
				t.Fatal(err)
			}
			text := roffText.Replace(string(b))
			_, opts, ok := strings.Cut(text, ".SH OPTIONS\n")
			if !ok {
				t.Fatalf("no OPTIONS section:\n%s", text)
			}
			opts, _, _ = strings.Cut(opts, "\n.SH ")
			for _, sec := range []string{".SH NAME", ".SH SYNOPSIS", ".SH DESCRIPTION", ".SH EXAMPLE"} {
				if !strings.Contains(text, sec+"\n") {
					t.Errorf("no %s section", sec)
				}
			}
			fs.VisitAll(func(f *pflag.Flag) {
				name := "--" + f.Name
				if f.Shorthand != "" {
					name = "-" + f.Shorthand + ", --" + f.Name
				}
				// A flag's entry starts a line: "-p, --port=5201".
				has := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\b`).MatchString(opts)
				switch {
				case f.Hidden && has:
					t.Errorf("hidden flag %s is listed", name)
				case !f.Hidden && !has:
					t.Errorf("flag %s is not listed:\n%s", name, opts)
				}
			})
		})
	}
}

func TestManText(t *testing.T) {
	const flags = "  -J, --json   JSON\n  -h, --help   show this help\n"
	for _, tc := range []struct {
		name, help, desc, examples string
	}{
		{
			name: "intro, flags, examples",
			help: "Usage: blast x [-J]\n       blast x HOST\n\nDoes x. Then y_z (*not* [this]).\n\nFlags:\n" + flags +
				"\nExamples:\n  blast x            # one\n  blast x HOST\n",
			desc:     "```\nUsage: blast x [-J]\n       blast x HOST\n```\n\nDoes x\\. Then y\\_z \\(\\*not\\* \\[this\\]\\)\\.",
			examples: "blast x            # one\nblast x HOST",
		},
		{
			name:     "a heading that says more, prose after the examples",
			help:     "Usage: blast y\n\nFlags (-J for humans):\n" + flags + "\nExamples:\n  blast y\n    continued\nWorks against\nanything.\n",
			desc:     "Usage\\: blast y\n\nFlags \\(\\-J for humans\\) are listed under OPTIONS\\.\n\nWorks against\nanything\\.",
			examples: "blast y\n  continued",
		},
		{
			name: "flags not in the help",
			help: "Usage: blast z\n",
			desc: "Usage\\: blast z",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			desc, ex := manText(tc.help, flags)
			if diff := cmp.Diff(tc.desc, desc); diff != "" {
				t.Errorf("description (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.examples, ex); diff != "" {
				t.Errorf("examples (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBashCompletionEndToEnd sources the bash script with bash-completion
// and completes "-" after every command, as a user's TAB does: the script
// runs the blast binary for the words.
func TestBashCompletionEndToEnd(t *testing.T) {
	const bashCompletion = "/usr/share/bash-completion/bash_completion"
	if _, err := os.Stat(bashCompletion); err != nil {
		t.Skipf("needs the bash-completion package (%v)", err)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("needs bash")
	}
	if blasttest.Bin == "" {
		t.Skip("needs the blast binary, which TestMain builds as root")
	}
	// One bash sources the scripts once and completes every command in
	// turn, each reply after a line naming its command.
	names := commandNames()
	script := `source ` + bashCompletion + `
source <(blast completion bash)
for name in ` + strings.Join(names, " ") + `; do
	COMPREPLY=()
	COMP_WORDS=(blast "$name" -); COMP_CWORD=2; COMP_LINE="blast $name -"; COMP_POINT=${#COMP_LINE}
	__start_blast 2>/dev/null
	printf '== %s\n' "$name"
	printf '%s\n' "${COMPREPLY[@]}"
done
`
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(blasttest.Bin)+":"+os.Getenv("PATH"), "BLAST_COMPLETION_DESCRIPTIONS=false")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	replies := map[string][]string{}
	var cur string
	for _, line := range strings.Split(string(out), "\n") {
		if name, ok := strings.CutPrefix(line, "== "); ok {
			cur = name
			replies[cur] = []string{}
			continue
		}
		if w := strings.TrimSpace(line); w != "" && cur != "" {
			replies[cur] = append(replies[cur], w)
		}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			got, ok := replies[name]
			if !ok {
				t.Fatalf("no completion for %s in:\n%s", name, out)
			}
			sort.Strings(got)
			want, _ := flagWords(commands[name].flags())
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("blast %s -<TAB> in bash (-want +got):\n%s", name, diff)
			}
		})
	}
}
