package bench

import (
	"bufio"
	"context"
	"os/exec"
	"regexp"
	"strings"
)

// Caps is what the blast binary under test can do; workloads that need
// more say so instead of running.
type Caps struct {
	Backends map[string]bool // usable backends, from `blast backends`
	Client   bool            // `blast client` exists
	Latency  bool            // `blast lat` exists
	// OptionArgs returns the ttcp flags for backend name with options
	// opts ("gso"); nil when ttcp mode takes no backend options.
	OptionArgs func(name, opts string) []string `json:"-"`
	// OptionSyntax is how options are given, in words ("" for none).
	OptionSyntax string `json:"option_syntax,omitempty"`
}

var backendLineRe = regexp.MustCompile(`^([a-z0-9_-]+)\s+(\S+)`)

// DetectCaps asks the blast binary what it has. It runs only help and
// listing commands, which send nothing.
func DetectCaps(ctx context.Context, blast string) Caps {
	c := Caps{Backends: map[string]bool{}}
	if out, err := exec.CommandContext(ctx, blast, "backends").Output(); err == nil {
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		for sc.Scan() {
			if m := backendLineRe.FindStringSubmatch(sc.Text()); m != nil {
				c.Backends[m[1]] = m[2] == "usable"
			}
		}
	}
	c.Client = exec.CommandContext(ctx, blast, "client", "-h").Run() == nil
	c.Latency = exec.CommandContext(ctx, blast, "lat", "-h").Run() == nil
	help, _ := exec.CommandContext(ctx, blast, "-t", "-h").Output()
	c.OptionSyntax, c.OptionArgs = optionSyntax(string(help))
	return c
}

// optionSyntax reads from ttcp's help how backend options are given.
func optionSyntax(help string) (string, func(name, opts string) []string) {
	switch {
	case strings.Contains(help, "--backend-opt"):
		return "--backend NAME --backend-opt OPTS", func(name, opts string) []string {
			return []string{"--backend", name, "--backend-opt", opts}
		}
	case regexp.MustCompile(`--backend[ =]NAME:`).MatchString(help) || regexp.MustCompile(`--backend[ =][a-z]+:[a-z]`).MatchString(help):
		return "--backend NAME:OPTS", func(name, opts string) []string {
			return []string{"--backend", name + ":" + opts}
		}
	case regexp.MustCompile(`--backend[ =][a-z]+,[a-z]`).MatchString(help):
		return "--backend NAME,OPTS", func(name, opts string) []string {
			return []string{"--backend", name + "," + opts}
		}
	}
	return "", nil
}
