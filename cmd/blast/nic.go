package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/internal/safetext"
	"github.com/blastnet/blast/nicinfo"
)

func init() {
	register(command{name: "nic", summary: "inspect network interfaces and diagnose their links", run: runNic,
		flags: func() *pflag.FlagSet { return newNicFlags().fs }})
}

const nicIntro = `Usage: blast nic [IFACE] [options]

Without IFACE: a table of every interface (driver, bus, speed, duplex,
autonegotiation, link, how the name was assigned). With IFACE: the full
report (identity, naming, link modes, queues, offloads, every counter) and
the diagnosis rules that fire on its state.

Two captures of the same machine (--sysfs DIR --after DIR2) diagnose the
counter changes between them too. A card is followed by its permanent MAC
and bus address, so one renamed between the captures (eth0 became eth2
under a new kernel) is reported as such; IFACE is its name in the first
capture (or, if that has none of the name, in the second).

Exit status: 0, or 1 when an interface's report holds an ERROR finding (a
link that cannot carry a test as it is: a duplex mismatch, a flap), so a
script or health check can act on it; 2 for a usage error.

Options:
`

const nicExamples = `
Examples:
  blast nic                           # table of all interfaces
  blast nic eth0                      # full report of eth0
  blast nic --to 198.18.0.2           # which NIC carries traffic there
  blast nic eth0 --pin lan0           # pin the name lan0 to this card
  blast nic --capture /tmp/before     # support bundle: capture, run the
  blast nic --capture /tmp/after      #   workload, capture again, then
  blast nic --sysfs /tmp/before --after /tmp/after eth0
  blast nic -J eth0 | jq .findings
`

// nicHelp is blast nic's help, its flags from their definitions.
func nicHelp() string { return nicIntro + newNicFlags().fs.FlagUsages() + nicExamples }

// nicConfig is what the command line of `blast nic` asks for.
type nicConfig struct {
	Iface   string
	JSON    bool
	To      string
	Pin     string
	Capture string
	Sysfs   string
	After   string
}

// nicFlags are blast nic's flags and where they land.
type nicFlags struct {
	fs   *pflag.FlagSet
	c    nicConfig
	help bool
}

// newNicFlags defines blast nic's flags: the parser, the help, the
// completions and the man page all read these definitions.
func newNicFlags() *nicFlags {
	f := &nicFlags{fs: pflag.NewFlagSet("nic", pflag.ContinueOnError)}
	fs, c := f.fs, &f.c
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	fs.BoolVarP(&c.JSON, "json", "J", false, "JSON instead of text")
	fs.StringVar(&c.To, "to", "", "find the interface that carries traffic to `HOST`, print the route,\n"+
		"then that interface's report (a name uses its first address)")
	fs.StringVar(&c.Pin, "pin", "", "with IFACE: how to give this card the name `NAME` on every boot\n"+
		"(the systemd .link file and the legacy udev rule, where to put them,\n"+
		"what to do after)")
	fs.StringVar(&c.Capture, "capture", "", "save this machine's interfaces into `DIR`, a new or empty directory\n"+
		"(sysfs, udev, ethtool answers)")
	fs.StringVar(&c.Sysfs, "sysfs", "", "analyze a tree captured with --capture in `DIR` instead of this machine")
	fs.StringVar(&c.After, "after", "", "with --sysfs: a second capture `DIR2` of the same machine\n"+
		"(the counter changes between the two are diagnosed too)")
	fs.BoolVarP(&f.help, "help", "h", false, "show this help")
	return f
}

// parseNic turns the command line into a nicConfig; it checks everything
// that does not need the system.
func parseNic(args []string) (nicConfig, error) {
	f := newNicFlags()
	fs := f.fs
	err := fs.Parse(args)
	c := f.c
	if err != nil {
		return c, fmt.Errorf("%s: run 'blast nic -h' for the options", flagError(err))
	}
	if f.help {
		return c, pflag.ErrHelp
	}
	set := func(name string) bool { return fs.Changed(name) }
	for _, f := range []string{"to", "pin", "capture", "sysfs", "after"} {
		if v, _ := fs.GetString(f); set(f) && v == "" {
			return c, fmt.Errorf("--%s needs a value: run 'blast nic -h' for the options", f)
		}
	}
	rest := fs.Args()
	if len(rest) > 1 {
		return c, fmt.Errorf("too many arguments: %q: give one interface, or none for the table", strings.Join(rest, " "))
	}
	if len(rest) == 1 {
		c.Iface = rest[0]
	}
	switch {
	case c.After != "" && c.Sysfs == "":
		return c, errors.New("--after needs --sysfs: blast nic --sysfs BEFORE --after AFTER [IFACE]")
	case c.Pin != "" && c.Iface == "":
		return c, errors.New("--pin needs an interface: blast nic IFACE --pin NAME")
	case c.Pin != "" && c.After != "":
		return c, errors.New("--pin and --after conflict: the advice is made from one tree; drop --after")
	case c.To != "" && c.Iface != "":
		return c, fmt.Errorf("--to and %q conflict: --to finds the interface itself; drop one", c.Iface)
	case c.To != "" && c.Sysfs != "":
		return c, errors.New("--to and --sysfs conflict: the route lookup asks this machine's kernel, not a capture")
	case c.Capture != "" && (c.Sysfs != "" || c.To != "" || c.Pin != "" || c.JSON):
		return c, errors.New("--capture takes no other option: blast nic --capture DIR [IFACE]")
	}
	return c, nil
}

func runNic(e *env, args []string) int {
	c, err := parseNic(args)
	if errors.Is(err, pflag.ErrHelp) {
		io.WriteString(e.stdout, nicHelp())
		return exitOK
	}
	if err != nil {
		return nicUsage(e, "%v", err)
	}
	if c.Capture != "" {
		return nicCapture(e, c)
	}

	// The source: this machine, or one or two captured trees.
	var src, after *nicinfo.Source
	list := "blast nic" // how to list the interfaces, for messages
	if c.Sysfs != "" {
		list = "blast nic --sysfs " + c.Sysfs
		if src, err = loadTree("--sysfs", c.Sysfs); err != nil {
			return nicUsage(e, "%v", err)
		}
		if c.After != "" {
			if after, err = loadTree("--after", c.After); err != nil {
				return nicUsage(e, "%v", err)
			}
		}
	} else {
		if src, err = nicinfo.Open(nicinfo.Config{}); err != nil {
			return nicFail(e, list, err)
		}
		defer src.Close()
	}

	var route *nicinfo.Route
	if c.To != "" {
		if route, err = routeTo(e, c.To); err != nil {
			return nicFail(e, list, err)
		}
		c.Iface = route.Iface
	}

	var pairing *nicinfo.Pairing
	if after != nil {
		if pairing, err = nicinfo.Pair(src, after); err != nil {
			return nicFail(e, list, err)
		}
	}
	if c.Iface == "" {
		if err := captureOrder(c, src, after); err != nil {
			return nicUsage(e, "%v", err)
		}
		return nicAll(e, c, list, src, after, pairing)
	}
	var match nicinfo.Match
	if pairing != nil {
		var why string
		if match, why = findMatch(c, pairing); why != "" {
			return nicUsage(e, "%s: see '%s' for the list", why, list)
		}
	} else if names, err := src.Names(); err != nil {
		return nicFail(e, list, err)
	} else if !slices.Contains(names, c.Iface) {
		in := ""
		if c.Sysfs != "" {
			in = " in " + c.Sysfs
		}
		return nicUsage(e, "no interface %q%s: see '%s' for the list", c.Iface, in, list)
	}
	if err := captureOrder(c, src, after); err != nil {
		return nicUsage(e, "%v", err)
	}

	if c.Pin != "" {
		ifc, err := src.Inspect(c.Iface)
		if err != nil {
			return nicFail(e, list, err)
		}
		a, err := nicinfo.Advise(ifc, c.Pin)
		if err != nil {
			// A bad name or nothing to match: the user picks another name or interface.
			return nicUsage(e, "--pin %s: %v", c.Pin, strings.TrimPrefix(err.Error(), "nicinfo: "))
		}
		if c.JSON {
			return nicJSON(e, list, a)
		}
		if err := nicinfo.WriteAdvice(e.stdout, a); err != nil {
			return nicFail(e, list, err)
		}
		return exitOK
	}

	var r *nicinfo.Result
	if pairing != nil {
		r, err = pairing.Analyze(match)
	} else {
		r, err = nicinfo.Analyze(src, nil, c.Iface)
	}
	if err != nil {
		return nicFail(e, list, err)
	}
	// An ERROR finding (a link that cannot carry the test as it is)
	// fails the command, for scripts and health checks.
	code := exitOK
	if slices.ContainsFunc(r.Findings, func(f finding.Finding) bool { return f.Severity >= finding.Error }) {
		code = exitFailure
	}
	if c.JSON {
		if route != nil {
			return max(code, nicJSON(e, list, struct {
				Host  string         `json:"host"`
				Route *nicinfo.Route `json:"route"`
				*nicinfo.Result
			}{c.To, route, r}))
		}
		return max(code, nicJSON(e, list, r))
	}
	if route != nil {
		fmt.Fprintln(e.stdout, safetext.Escape(routeLine(c.To, route)))
		fmt.Fprintln(e.stdout)
	}
	if err := nicinfo.WriteResult(e.stdout, r); err != nil {
		return nicFail(e, list, err)
	}
	return code
}

// findMatch finds IFACE across two captures: the card named so in the
// first (or, when the first has none of the name, in the second), under
// its name in each. why says, when it is not in both, which lacks it.
func findMatch(c nicConfig, p *nicinfo.Pairing) (m nicinfo.Match, why string) {
	if m, err := p.Find(c.Iface); err == nil {
		return m, ""
	}
	switch {
	case slices.Contains(p.Gone, c.Iface):
		why = fmt.Sprintf("no interface %q in %s", c.Iface, c.After)
		if m, ok := matchOf(p, c.Iface); ok {
			why += fmt.Sprintf(" (%s there is another card, %s in %s)", c.Iface, m.Before, c.Sysfs)
		} else if slices.Contains(p.New, c.Iface) {
			why += fmt.Sprintf(" (%s there is another card, not in %s)", c.Iface, c.Sysfs)
		}
	case slices.Contains(p.New, c.Iface):
		why = fmt.Sprintf("no interface %q in %s (it is new in %s: 'blast nic --sysfs %s %s' shows its state)", c.Iface, c.Sysfs, c.After, c.After, c.Iface)
	default:
		why = fmt.Sprintf("no interface %q in %s", c.Iface, c.Sysfs)
	}
	return nicinfo.Match{}, why
}

// captureOrder refuses two captures given the wrong way round (the
// second taken before the first): every counter would go backwards.
func captureOrder(c nicConfig, src, after *nicinfo.Source) error {
	if after == nil {
		return nil
	}
	t0, t1 := src.Captured(), after.Captured()
	if t0.IsZero() || t1.IsZero() || !t1.Before(t0) {
		return nil
	}
	return fmt.Errorf("--after %s was captured (%s) before --sysfs %s (%s): give the earlier capture to --sysfs: blast nic --sysfs %s --after %s",
		c.After, t1.UTC().Format(time.DateTime+" UTC"), c.Sysfs, t0.UTC().Format(time.DateTime+" UTC"), c.After, c.Sysfs)
}

// nicAll handles the command without an interface: the table of this machine,
// or the table and the analysis of every interface of a captured tree.
func nicAll(e *env, c nicConfig, list string, src, after *nicinfo.Source, p *nicinfo.Pairing) int {
	if c.Sysfs == "" {
		ifcs, err := src.All()
		if err != nil {
			return nicFail(e, list, err)
		}
		if c.JSON {
			return nicJSON(e, list, ifcs)
		}
		if err := nicinfo.WriteTable(e.stdout, ifcs); err != nil {
			return nicFail(e, list, err)
		}
		return exitOK
	}

	last := src // the tree whose state the table shows
	if after != nil {
		last = after
	}
	names, err := last.Names()
	if err != nil {
		return nicFail(e, list, err)
	}
	if p != nil {
		for _, n := range p.Gone {
			fmt.Fprintf(e.stderr, "blast: nic: note: %s is in %s but not in %s: not analyzed\n", safetext.Escape(n), c.Sysfs, c.After)
		}
	}
	var results []*nicinfo.Result
	for _, n := range names {
		var r *nicinfo.Result
		if p == nil {
			r, err = nicinfo.Analyze(src, nil, n)
		} else if m, ok := matchOf(p, n); ok {
			r, err = p.Analyze(m)
		} else {
			fmt.Fprintf(e.stderr, "blast: nic: note: %s is in %s but not in %s: state rules only\n", safetext.Escape(n), c.After, c.Sysfs)
			r, err = nicinfo.Analyze(after, nil, n)
		}
		if err != nil {
			return nicFail(e, list, err)
		}
		results = append(results, r)
	}
	if c.JSON {
		if results == nil {
			results = []*nicinfo.Result{}
		}
		return nicJSON(e, list, results)
	}
	ifcs := make([]*nicinfo.Interface, len(results))
	for i, r := range results {
		ifcs[i] = r.Interface
	}
	if err := nicinfo.WriteTable(e.stdout, ifcs); err != nil {
		return nicFail(e, list, err)
	}
	for _, r := range results {
		fmt.Fprintln(e.stdout)
		if err := nicinfo.WriteResult(e.stdout, r); err != nil {
			return nicFail(e, list, err)
		}
	}
	return exitOK
}

// matchOf is the match of the interface named name in the second capture.
func matchOf(p *nicinfo.Pairing, name string) (nicinfo.Match, bool) {
	for _, m := range p.Matches {
		if m.After == name {
			return m, true
		}
	}
	return nicinfo.Match{}, false
}

// nicCapture saves this machine's interfaces (or one) under c.Capture.
func nicCapture(e *env, c nicConfig) int {
	const list = "blast nic"
	if ents, err := os.ReadDir(c.Capture); err == nil && len(ents) > 0 {
		return nicUsage(e, "--capture %s: directory not empty: give a new or empty directory", c.Capture)
	}
	src, err := nicinfo.Open(nicinfo.Config{})
	if err != nil {
		return nicFail(e, list, err)
	}
	defer src.Close()
	var names []string
	if c.Iface != "" {
		all, err := src.Names()
		if err != nil {
			return nicFail(e, list, err)
		}
		if !slices.Contains(all, c.Iface) {
			return nicUsage(e, "no interface %q: see 'blast nic' for the list", c.Iface)
		}
		names = []string{c.Iface}
	}
	if err := src.Capture(c.Capture, names...); err != nil {
		return nicFail(e, list, err)
	}
	got, err := loadTree("--capture", c.Capture)
	if err == nil {
		names, err = got.Names()
	}
	if err != nil {
		return nicFail(e, list, err)
	}
	fmt.Fprintf(e.stdout, "captured %s to %s; analyze it with: blast nic --sysfs %s\n", safetext.Escape(strings.Join(names, ", ")), c.Capture, c.Capture)
	return exitOK
}

// loadTree opens a captured tree, saying what is wrong in one line and,
// when dir holds a tree or lies inside one, which directory to give.
func loadTree(flag, dir string) (*nicinfo.Source, error) {
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s %s: cannot read it (%v): give a tree made by 'blast nic --capture DIR'", flag, dir, pathErr(err))
	case !st.IsDir():
		return nil, fmt.Errorf("%s %s: not a directory: give a tree made by 'blast nic --capture DIR'", flag, dir)
	}
	s, err := nicinfo.Load(dir)
	if err == nil {
		_, err = s.Names()
	}
	if err == nil {
		return s, nil
	}
	if hint := treeHint(flag, dir); hint != "" {
		return nil, fmt.Errorf("%s %s: %s", flag, dir, hint)
	}
	if isTree(dir) { // sys/class/net is there but cannot be read
		return nil, fmt.Errorf("%s %s: %v", flag, dir, strings.TrimPrefix(err.Error(), "nicinfo: "))
	}
	return nil, fmt.Errorf("%s %s: not a captured tree (no readable sys/class/net): give a tree made by 'blast nic --capture DIR'", flag, dir)
}

// treeHint names the directory to give when dir is not a captured tree:
// one holding before/ and after/ (a scenario), the sys/ of a tree or
// another directory inside one, a bare copy of sysfs, or the live /sys.
// It is "" when there is nothing better to say.
func treeHint(flag, dir string) string {
	before, after := filepath.Join(dir, "before"), filepath.Join(dir, "after")
	hasB, hasA := isTree(before), isTree(after)
	switch {
	case flag == "--after" && hasA:
		return fmt.Sprintf("holds after/, not a tree: use --after %s", after)
	case flag == "--sysfs" && hasB && hasA:
		return fmt.Sprintf("holds before/ (and after/), not a tree: use --sysfs %s --after %s", before, after)
	case hasB:
		return fmt.Sprintf("holds before/, not a tree: use %s %s", flag, before)
	case hasA:
		return fmt.Sprintf("holds after/, not a tree: use %s %s", flag, after)
	}
	sysfs := isDir(filepath.Join(dir, "class", "net"))
	for up, k := dir, 0; k < 4; k++ {
		if sameDir(up, "/sys") {
			return "that is this machine's live sysfs, not a capture: run blast nic without --sysfs, or save it with 'blast nic --capture DIR'"
		}
		if k > 0 && isTree(up) {
			if sameDir(filepath.Join(up, "sys"), "/sys") {
				break // "/" holds the live sysfs, not a capture
			}
			if sysfs {
				return fmt.Sprintf("holds class/net, not sys/class/net: it is the sys/ of the captured tree %s: use %s %s", up, flag, up)
			}
			return fmt.Sprintf("lies inside the captured tree %s: use %s %s", up, flag, up)
		}
		parent := filepath.Dir(up)
		if parent == up {
			break
		}
		up = parent
	}
	if sysfs {
		return "holds class/net, not sys/class/net: a captured tree keeps sysfs under sys/ (move it to T/sys and give --sysfs T), or make one with 'blast nic --capture DIR'"
	}
	return ""
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// sameDir says a and b are the same directory.
func sameDir(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// isTree says dir looks like a captured tree: it holds sys/class/net.
func isTree(dir string) bool { return isDir(filepath.Join(dir, "sys", "class", "net")) }

// pathErr is the reason of a *fs.PathError without the path, which the
// message already names.
func pathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// routeTo resolves host (an address, or a name whose first address is used)
// and asks the kernel which interface carries traffic to it.
func routeTo(e *env, host string) (*nicinfo.Route, error) {
	addr, err := netip.ParseAddr(host)
	if err != nil {
		addrs, lerr := net.DefaultResolver.LookupNetIP(e.ctx, "ip", host)
		if lerr == nil && len(addrs) == 0 {
			lerr = errors.New("no address")
		}
		var dns *net.DNSError
		if errors.As(lerr, &dns) {
			lerr = errors.New(dns.Err)
		}
		if lerr != nil {
			return nil, fmt.Errorf("--to %s: cannot resolve the name (%v): give an address or a name that resolves", host, lerr)
		}
		addr = addrs[0]
	}
	return nicinfo.InterfaceFor(addr.Unmap())
}

// routeLine says where traffic to host goes: "route to H (ADDR): via IFACE,
// gateway G, source S".
func routeLine(host string, r *nicinfo.Route) string {
	to := host
	if a, err := netip.ParseAddr(host); err != nil || a.Unmap() != r.Dst {
		to += " (" + r.Dst.String() + ")"
	}
	gw := "none (on-link)"
	if r.Gateway.IsValid() {
		gw = r.Gateway.String()
	}
	src := "-"
	if r.Src.IsValid() {
		src = r.Src.String()
	}
	return fmt.Sprintf("route to %s: interface %s (ifindex %d), gateway %s, source %s", to, r.Iface, r.Index, gw, src)
}

// nicJSON writes v as indented JSON, with what a terminal would act on
// escaped (safetext.JSON): the strings come from files.
func nicJSON(e *env, list string, v any) int {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nicFail(e, list, err)
	}
	if _, err := e.stdout.Write(safetext.JSON(b.Bytes())); err != nil {
		return nicFail(e, list, err)
	}
	return exitOK
}

// nicUsage and nicFail write one line, escaped (safetext.Escape): names
// and errors may come from the files of a tree.
func nicUsage(e *env, format string, a ...any) int {
	fmt.Fprintf(e.stderr, "%s\n", safetext.Escape(fmt.Sprintf("blast: nic: "+format, a...)))
	return exitUsage
}

// nicFail reports a run-time failure in one line, with the fix where there
// is one; list is how to list the interfaces read ("blast nic" for this
// machine, "blast nic --sysfs DIR" for a capture, where an interface
// cannot vanish: its error says what is missing).
func nicFail(e *env, list string, err error) int {
	msg := strings.TrimPrefix(err.Error(), "nicinfo: ")
	switch {
	case errors.Is(err, nicinfo.ErrNoInterface) && list == "blast nic":
		msg += " (it vanished while being read): see 'blast nic' for the list"
	case errors.Is(err, nicinfo.ErrNotSupported):
		msg += ": live inspection needs Linux; analyze a capture from a Linux machine with --sysfs DIR"
	case errors.Is(err, os.ErrPermission):
		msg += ": run as root"
	}
	fmt.Fprintf(e.stderr, "blast: nic: %s\n", safetext.Escape(msg))
	return exitFailure
}
