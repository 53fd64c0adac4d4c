package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
)

// debianPackage names the Debian package of each peer tool.
var debianPackage = map[string]string{
	"iperf3":   "iperf3",
	"sockperf": "sockperf",
	"qperf":    "qperf",
	"trafgen":  "netsniff-ng",
}

// InstallPeers installs, from Debian, the packages of the tools that are
// missing: apt-get update once, then one apt-get install. Progress goes to
// log.
func InstallPeers(ctx context.Context, tools []string, log io.Writer) error {
	var pkgs []string
	for _, t := range tools {
		if _, err := exec.LookPath(t); err == nil {
			continue
		}
		p, ok := debianPackage[t]
		if !ok {
			return fmt.Errorf("bench: %s is missing and bench knows no package for it", t)
		}
		if !slices.Contains(pkgs, p) {
			pkgs = append(pkgs, p)
		}
	}
	if len(pkgs) == 0 {
		return nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("bench: missing %v and no apt-get to install them: install them by hand", pkgs)
	}
	fmt.Fprintf(log, "bench: installing %v from Debian\n", pkgs)
	run := func(args ...string) error {
		c := exec.CommandContext(ctx, "apt-get", args...)
		c.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		c.Stdout, c.Stderr = log, log
		if err := c.Run(); err != nil {
			return fmt.Errorf("bench: apt-get %s: %w", args[0], err)
		}
		return nil
	}
	if err := run("update", "-qq"); err != nil {
		return err
	}
	return run(append([]string{"install", "-y", "-qq"}, pkgs...)...)
}
