package archtest

import (
	"fmt"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// module is blast's module path.
const module = "github.com/blastnet/blast"

// layers are blast's product packages (their non-test files), from the
// bottom up. A package imports only packages of the layers below its own:
// nothing in a lower layer knows the modes, control or cmd/blast above it,
// and internal/uring, below engine, never imports engine. A package that
// is in no layer, test helper or tool fails TestPackagesPlaced, so a new
// package is placed here when it is made.
var layers = []struct {
	name string
	pkgs []string
}{
	{"vocabulary: no blast imports", []string{"finding", "internal/safetext", "units"}},
	{"foundations: only the vocabulary", []string{
		"internal/clock", "internal/fairpool", "internal/hostload", "internal/uring",
		"bpf", "nicinfo", "pathinfo", "pathmtu", "stats", "netlab",
		"mesh/discover", "mesh/plan",
	}},
	{"the data-path contract", []string{"engine"}},
	{"backends, and what reads the engine's results", []string{
		"engine/sockets", "engine/mmsg", "engine/iouring", "engine/afxdp",
		"internal/verify", "report", "pathdiag",
	}},
	{"the one registry of backends", []string{"engine/backends"}},
	{"modes over the engine", []string{"latency", "ttcp"}},
	{"iperf3's wire: states, frames, parameters and results as exchanged", []string{"control/wire"}},
	{"what one side of a test measured, added up once (its Summary), and judged", []string{"control/result"}},
	{"iperf3's text and -J, blast's CSV, from a Result's Summary", []string{"control/render"}},
	{"iperf3's protocol (its UDP echo shares latency's sessions)", []string{"control"}},
	{"what runs control's tests", []string{"doctor", "agent", "compare", "demo"}},
	{"the agents' mesh", []string{"mesh"}},
	{"pictures of every mode's results", []string{"plot"}},
	{"blast against its peers", []string{"bench"}},
	{"commands", []string{"cmd/blast", "bench/cmd/blastbench", "bench/cmd/blastsoak"}},
}

// testHelpers are packages that only tests import (their files are not
// _test.go files, but they link package testing or build labs for tests);
// no product package imports one, and they may import any product
// package and each other.
var testHelpers = []string{
	"engine/enginetest", "internal/testkit", "internal/blasttest", "internal/golden",
	"internal/k8stest", "internal/timingcheck", "internal/verify/verifytest",
	"netlab/labtest", "internal/archtest",
}

// tools are programs of the repository's own that no package imports:
// make test-stress's runner.
var tools = []string{"internal/teststress"}

// outside lists, for each module outside the standard library, the blast
// packages whose non-test files may import it; "*" is every package.
// Tests may import any module in go.mod.
var outside = map[string][]string{
	"golang.org/x/sys":                        {"*"},
	"golang.org/x/net":                        {"*"},
	"github.com/vishvananda/netlink":          {"*"},
	"github.com/vishvananda/netns":            {"*"},
	"github.com/safchain/ethtool":             {"*"},
	"github.com/spf13/cobra":                  {"cmd/blast"},
	"github.com/spf13/pflag":                  {"cmd/blast"},
	"github.com/schollz/progressbar":          {"cmd/blast"},
	"github.com/cilium/ebpf":                  {"bpf", "internal/verify/verifytest"},
	"github.com/google/gopacket":              {"engine/afxdp"},
	"github.com/HdrHistogram/hdrhistogram-go": {"latency"},
	"gonum.org/v1/gonum":                      {"stats"},
	"gonum.org/v1/plot":                       {"plot"},
	"golang.org/x/image":                      {"plot"},
	"github.com/google/go-cmp":                {"internal/golden"},
}

// imports maps each package of the module (its path below the module) to
// what its files import: product files and test files apart.
type imports struct {
	product map[string]map[string]bool
	tests   map[string]map[string]bool
}

// moduleRoot is the directory of blast's go.mod, above this package's.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module "+module+"\n") {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatalf("no go.mod of %s above this package", module)
		}
		dir = up
	}
}

// readImports parses the imports of every Go file under root that belongs
// to the module: whatever its OS or build tags, except the files that
// //go:build ignore leaves out of every build; not below testdata, nor in
// a nested module (deploy, deploy/image, internal/k8stest/apiserver: their
// own go.mod and rules).
func readImports(t *testing.T, root string) imports {
	t.Helper()
	im := imports{product: map[string]map[string]bool{}, tests: map[string]map[string]bool{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "vendor" || name == "testdata") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); p != root && err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		for _, g := range f.Comments {
			if g.Pos() > f.Package {
				break
			}
			for _, c := range g.List {
				if expr, err := constraint.Parse(c.Text); err == nil && expr.String() == "ignore" {
					return nil
				}
			}
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		set := im.product
		if strings.HasSuffix(p, "_test.go") {
			set = im.tests
		}
		if set[pkg] == nil {
			set[pkg] = map[string]bool{}
		}
		for _, s := range f.Imports {
			ip, err := strconv.Unquote(s.Path.Value)
			if err != nil {
				return err
			}
			set[pkg][ip] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return im
}

// rule is the import rule over the data above.
type rule struct {
	layer  map[string]int // product package -> index in layers
	helper map[string]bool
	tool   map[string]bool
}

func newRule(t *testing.T) rule {
	t.Helper()
	r := rule{layer: map[string]int{}, helper: map[string]bool{}, tool: map[string]bool{}}
	place := func(pkg, where string) {
		t.Helper()
		if _, ok := r.layer[pkg]; ok || r.helper[pkg] || r.tool[pkg] {
			t.Fatalf("%s is placed twice (again in %s)", pkg, where)
		}
	}
	for i, l := range layers {
		for _, p := range l.pkgs {
			place(p, l.name)
			r.layer[p] = i
		}
	}
	for _, p := range testHelpers {
		place(p, "testHelpers")
		r.helper[p] = true
	}
	for _, p := range tools {
		place(p, "tools")
		r.tool[p] = true
	}
	return r
}

// where names a package's place in the rule.
func (r rule) where(pkg string) string {
	switch i, ok := r.layer[pkg]; {
	case ok:
		return fmt.Sprintf("layer %d, %s", i, layers[i].name)
	case r.helper[pkg]:
		return "a test helper"
	case r.tool[pkg]:
		return "a tool"
	}
	return "placed nowhere"
}

// check returns a line for each import of from's non-test files that the
// rule forbids.
func (r rule) check(from string, imps map[string]bool) []string {
	var bad []string
	for _, ip := range sortedKeys(imps) {
		if ip == module || strings.HasPrefix(ip, module+"/") {
			to := strings.TrimPrefix(strings.TrimPrefix(ip, module), "/")
			if why := r.blast(from, to); why != "" {
				bad = append(bad, fmt.Sprintf("%s (%s) imports %s (%s): %s", from, r.where(from), to, r.where(to), why))
			}
			continue
		}
		first, _, _ := strings.Cut(ip, "/")
		if !strings.Contains(first, ".") {
			continue // the standard library
		}
		if why := r.other(from, ip); why != "" {
			bad = append(bad, fmt.Sprintf("%s (%s) imports %s: %s", from, r.where(from), ip, why))
		}
	}
	return bad
}

// blast says why from may not import to, both blast packages, or "".
func (r rule) blast(from, to string) string {
	switch {
	case r.tool[to]:
		return "a tool is a program; no package imports it"
	case r.helper[to] && !r.helper[from]:
		return "a test helper is for tests: import it from _test.go files only"
	case r.helper[from] || r.tool[from]:
		return ""
	}
	lf, okf := r.layer[from]
	lt, okt := r.layer[to]
	switch {
	case !okf || !okt:
		return "place the package in layers (internal/archtest)"
	case lt >= lf:
		return "a package imports only from the layers below its own: move what both need down, or have the caller pass it in"
	}
	return ""
}

// other says why from may not import the outside package ip, or "".
func (r rule) other(from, ip string) string {
	for mod, users := range outside {
		if ip != mod && !strings.HasPrefix(ip, mod+"/") {
			continue
		}
		if slices.Contains(users, "*") || slices.Contains(users, from) {
			return ""
		}
		return fmt.Sprintf("only %s may use %s", strings.Join(users, ", "), mod)
	}
	return "a module no rule names: add it to outside (internal/archtest) with the packages that may use it"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestImportRule holds every package's non-test files to the rule.
func TestImportRule(t *testing.T) {
	r := newRule(t)
	im := readImports(t, moduleRoot(t))
	for _, from := range sortedKeys(im.product) {
		for _, line := range r.check(from, im.product[from]) {
			t.Error(line)
		}
	}
}

// TestPackagesPlaced checks that the rule places every package of the
// module, and nothing that is not one.
func TestPackagesPlaced(t *testing.T) {
	r := newRule(t)
	im := readImports(t, moduleRoot(t))
	have := map[string]bool{}
	for pkg := range im.product {
		have[pkg] = true
	}
	for pkg := range im.tests {
		have[pkg] = true // a directory of tests only is placed too
	}
	var placed []string
	placed = append(placed, sortedKeys(r.layer)...)
	placed = append(placed, sortedKeys(r.helper)...)
	placed = append(placed, sortedKeys(r.tool)...)
	sort.Strings(placed)
	if diff := cmp.Diff(placed, sortedKeys(have)); diff != "" {
		t.Errorf("the packages the rule places (-) and the module's (+) differ: place a new package in layers, testHelpers or tools (internal/archtest), and drop one that is gone:\n%s", diff)
	}
}

// TestRuleCatches checks the rule on imports it must refuse and allow, so
// that a rule that lets everything through cannot pass.
func TestRuleCatches(t *testing.T) {
	r := newRule(t)
	for _, tc := range []struct {
		from, imp string
		ok        bool
	}{
		{"internal/uring", module + "/engine", false},
		{"engine/iouring", module + "/internal/uring", true},
		{"engine", module + "/control", false},
		{"nicinfo", module + "/cmd/blast", false},
		{"report", module + "/engine", true},
		{"compare", module + "/netlab", true},
		{"compare", module + "/netlab/labtest", false},
		{"control", module + "/internal/testkit", false},
		{"internal/blasttest", module + "/netlab", true},
		{"control", module + "/ttcp", true},
		{"ttcp", module + "/latency", false},
		{"control", "github.com/spf13/cobra", false},
		{"cmd/blast", "github.com/spf13/cobra/doc", true},
		{"engine", "golang.org/x/sys/unix", true},
		{"report", "github.com/google/go-cmp/cmp", false},
		{"report", "example.com/new", false},
		{"report", "net/netip", true},
	} {
		got := r.check(tc.from, map[string]bool{tc.imp: true})
		if (len(got) == 0) != tc.ok {
			t.Errorf("%s importing %s: %q, want allowed %v", tc.from, tc.imp, got, tc.ok)
		}
	}
}
