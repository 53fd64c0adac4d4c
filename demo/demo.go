// Package demo is `blast demo`: it builds a lab of network namespaces
// (a plain veth link, a 100 Mbit/s-limited one and a routed path through
// a router namespace), runs a ttcp-mode transfer across each with the
// receiver in the other namespace, prints what both ends said, and removes
// the lab. Without root it runs the same transfer over loopback and says
// why.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/blastnet/blast/netlab"
)

// Config is one demo run.
type Config struct {
	// Exe is the blast binary both ends run.
	Exe string
	Out io.Writer
	// Root says whether the lab can be built; tests and main set it from
	// the effective user id.
	Root bool
}

// step is one transfer of the demo.
type step struct {
	title string
	topo  netlab.Topology
	opt   netlab.Options
	nbuf  int // 8 KiB buffers to send
}

var steps = []step{
	{"a plain veth link", netlab.Direct, netlab.Options{}, 131072},
	{"a veth link limited to 100 Mbit/s (tbf)", netlab.Direct, netlab.Options{RateMbit: 100}, 1024},
	{"a routed path: sender -> router -> receiver", netlab.Routed, netlab.Options{}, 131072},
}

// Result is what one transfer measured, as the receiver reported it.
type Result struct {
	Title string
	Bytes int64
	Secs  float64
	Rate  string // as the receiver printed it
}

// Run runs the demo and returns each transfer's result.
func Run(ctx context.Context, c Config) ([]Result, error) {
	if !c.Root {
		fmt.Fprintln(c.Out, "blast demo: not root, so no lab: network namespaces and veth pairs need root.")
		fmt.Fprintln(c.Out, "Running one transfer over loopback instead; run 'sudo make demo' (or 'sudo blast demo') for the lab.")
		fmt.Fprintln(c.Out)
		r, err := loopback(ctx, c)
		if err != nil {
			return nil, err
		}
		summarize(c.Out, []Result{r})
		return []Result{r}, nil
	}
	fmt.Fprintln(c.Out, "blast demo: three labs of network namespaces; in each, a ttcp-mode transfer")
	fmt.Fprintln(c.Out, "from host A to a receiver on host B (198.18.0.0/15, 2001:2::/48). Each lab is removed after its run.")
	var results []Result
	for _, s := range steps {
		r, err := runStep(ctx, c, s)
		if err != nil {
			return results, fmt.Errorf("%s: %w", s.title, err)
		}
		results = append(results, r)
	}
	summarize(c.Out, results)
	return results, nil
}

func runStep(ctx context.Context, c Config, s step) (res Result, err error) {
	defer func() {
		if ctx.Err() != nil {
			err = errors.New("interrupted; the lab is removed")
		}
	}()
	lab, err := netlab.New(s.topo, s.opt)
	if err != nil {
		return Result{}, err
	}
	defer func() {
		if cerr := lab.Close(); err == nil {
			err = cerr
		}
	}()
	fmt.Fprintf(c.Out, "\n== %s\n   %s\n", s.title, lab)
	rxArgs := []string{"-r", "-s", "-l", "131072"}
	txArgs := []string{"-t", "-s", "-n", strconv.Itoa(s.nbuf), lab.B.Addr4.String()}
	fmt.Fprintf(c.Out, "   in %s: blast %s\n   in %s: blast %s\n\n", lab.B.Name, strings.Join(rxArgs, " "), lab.A.Name, strings.Join(txArgs, " "))

	var rxOut, txOut strings.Builder
	rx := lab.B.Command(c.Exe, rxArgs...)
	rx.Stdout, rx.Stderr = &rxOut, &rxOut
	if err := rx.Start(); err != nil {
		return Result{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = netlab.WaitPort(wctx, rx.Process.Pid, "tcp", 5001)
	cancel()
	if err != nil {
		return Result{}, fmt.Errorf("receiver: %w\n%s", err, rxOut.String())
	}
	tx := lab.A.Command(c.Exe, txArgs...)
	tx.Stdout, tx.Stderr = &txOut, &txOut
	if err := tx.Start(); err != nil {
		return Result{}, err
	}
	if err := wait(ctx, tx, tx.Process); err != nil {
		return Result{}, fmt.Errorf("transmitter: %w\n%s", err, txOut.String())
	}
	if err := wait(ctx, rx, rx.Process); err != nil {
		return Result{}, fmt.Errorf("receiver: %w\n%s", err, rxOut.String())
	}
	io.WriteString(c.Out, indent(txOut.String()))
	io.WriteString(c.Out, indent(rxOut.String()))
	return parse(s.title, rxOut.String())
}

func loopback(ctx context.Context, c Config) (Result, error) {
	// A free port: the kernel picks one, we release it for the receiver.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Result{}, err
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	var rxOut, txOut strings.Builder
	rx := exec.Command(c.Exe, "-r", "-s", "-4", "-p", port, "-l", "131072")
	rx.Stdout, rx.Stderr = &rxOut, &rxOut
	if err := rx.Start(); err != nil {
		return Result{}, err
	}
	defer rx.Process.Kill()
	// Without root there is no /proc view of another namespace to wait on,
	// but the receiver is in ours: poll until it listens.
	deadline := time.Now().Add(10 * time.Second)
	for !listening(port) {
		if time.Now().After(deadline) {
			return Result{}, fmt.Errorf("receiver did not listen on port %s:\n%s", port, rxOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Fprintf(c.Out, "== loopback\n   blast -r -s -4 -p %s -l 131072\n   blast -t -s -n 32768 -p %s 127.0.0.1\n\n", port, port)
	tx := exec.Command(c.Exe, "-t", "-s", "-n", "32768", "-p", port, "127.0.0.1")
	tx.Stdout, tx.Stderr = &txOut, &txOut
	if err := tx.Start(); err != nil {
		return Result{}, err
	}
	if err := wait(ctx, tx, tx.Process); err != nil {
		return Result{}, fmt.Errorf("transmitter: %w\n%s", err, txOut.String())
	}
	if err := wait(ctx, rx, rx.Process); err != nil {
		return Result{}, fmt.Errorf("receiver: %w\n%s", err, rxOut.String())
	}
	io.WriteString(c.Out, indent(txOut.String()))
	io.WriteString(c.Out, indent(rxOut.String()))
	return parse("loopback", rxOut.String())
}

// listening reports whether something listens on 127.0.0.1:port, from
// /proc/net/tcp (connecting would use up the receiver's one connection).
func listening(port string) bool {
	p, _ := strconv.Atoi(port)
	data, err := os.ReadFile("/proc/net/tcp")
	return err == nil && strings.Contains(string(data), fmt.Sprintf(":%04X 00000000:0000 0A", p))
}

// waiter is a command to wait for: an exec.Cmd, or a lab's netlab.Cmd,
// whose own Wait reaps it (its exec.Cmd must not be waited for twice).
type waiter interface {
	Wait() error
}

func wait(ctx context.Context, cmd waiter, proc *os.Process) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		proc.Kill()
		<-done
		return errors.New("interrupted")
	}
}

var (
	summaryLine = regexp.MustCompile(`(?m)^blast-r: (\d+) bytes in ([0-9.]+) real seconds`)
	rateLine    = regexp.MustCompile(`(?m)^blast-r: (\S+ \S+/s) \(backend`)
)

func parse(title, out string) (Result, error) {
	m, r := summaryLine.FindStringSubmatch(out), rateLine.FindStringSubmatch(out)
	if m == nil || r == nil {
		return Result{}, fmt.Errorf("the receiver printed no summary:\n%s", out)
	}
	b, _ := strconv.ParseInt(m[1], 10, 64)
	s, _ := strconv.ParseFloat(m[2], 64)
	return Result{Title: title, Bytes: b, Secs: s, Rate: r[1]}, nil
}

func summarize(w io.Writer, rs []Result) {
	fmt.Fprintln(w, "\n== summary (as the receivers measured it)")
	for _, r := range rs {
		fmt.Fprintf(w, "   %-46s %11d bytes in %5.2f s  %14s\n", r.Title, r.Bytes, r.Secs, r.Rate)
	}
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "   " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n   ") + "\n"
}
