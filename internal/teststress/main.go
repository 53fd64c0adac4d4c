// Command teststress is `make test-stress`: it runs the test suite (no
// fuzzing) several rounds while a load generator keeps every CPU busy,
// and prints each test that failed in any round, with its output. A test
// that fails here is a defect to fix, not to retry: the suite must pass on
// a busy host.
//
//	go run ./internal/teststress [-rounds 5] [-load=true] [packages]
//
// The load is a busy loop per CPU in this process, started before the
// first round and stopped after the last (it also stops by itself after
// -max). The lab tests' blast binary is built once, for every round.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	rounds := flag.Int("rounds", 5, "how many times to run the suite")
	load := flag.Bool("load", true, "keep every CPU busy with a busy loop while the suite runs")
	maxLoad := flag.Duration("max", 2*time.Hour, "stop the load after this long whatever happens")
	timeout := flag.Duration("timeout", 10*time.Minute, "go test's -timeout for each package")
	flag.Parse()
	pkgs := flag.Args()
	if len(pkgs) == 0 {
		pkgs = []string{"./..."}
	}
	if *rounds < 1 {
		fmt.Fprintln(os.Stderr, "teststress: -rounds must be at least 1")
		os.Exit(2)
	}
	os.Exit(run(*rounds, *load, *maxLoad, *timeout, pkgs))
}

// failure is one test's failure in one round.
type failure struct {
	round   int
	pkg     string
	test    string
	elapsed float64
	output  string
}

func run(rounds int, load bool, maxLoad, timeout time.Duration, pkgs []string) int {
	dir, err := os.MkdirTemp("", "blast-stress")
	if err != nil {
		fmt.Fprintln(os.Stderr, "teststress:", err)
		return 2
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "blast")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/blast").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "teststress: build blast: %v\n%s", err, out)
		return 2
	}
	if err := os.Symlink("blast", filepath.Join(dir, "ttcp")); err != nil {
		fmt.Fprintln(os.Stderr, "teststress:", err)
		return 2
	}
	// The test binaries are built before the load starts (a build under
	// load only takes longer; it checks nothing).
	if out, err := exec.Command("go", append([]string{"test", "-count=1", "-run", "^$"}, pkgs...)...).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "teststress: build the tests: %v\n%s", err, out)
		return 2
	}
	stop := func() {}
	if load {
		stop = busy(runtime.NumCPU(), maxLoad)
		fmt.Printf("teststress: a busy loop on each of %d CPUs\n", runtime.NumCPU())
	}
	var all []failure
	for r := 1; r <= rounds; r++ {
		start := time.Now()
		fails, tests, err := round(r, bin, timeout, pkgs)
		if err != nil {
			stop()
			fmt.Fprintln(os.Stderr, "teststress:", err)
			return 2
		}
		fmt.Printf("round %d/%d: %d tests, %d failed, %v, load average %s\n",
			r, rounds, tests, len(fails), time.Since(start).Round(time.Second), loadavg())
		for _, f := range fails {
			fmt.Printf("  FAIL %s %s (%.2fs)\n", f.pkg, f.test, f.elapsed)
		}
		all = append(all, fails...)
	}
	stop()
	if len(all) == 0 {
		fmt.Printf("teststress: %d rounds, no failure\n", rounds)
		return 0
	}
	fmt.Printf("\nteststress: %d failures in %d rounds; their output:\n", len(all), rounds)
	for _, f := range all {
		fmt.Printf("\n=== round %d: %s %s\n%s", f.round, f.pkg, f.test, f.output)
	}
	return 1
}

// event is one line of go test -json.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

// round runs the suite once and returns the failed tests (a package that
// failed outside any test counts as a test named "(package)").
func round(r int, bin string, timeout time.Duration, pkgs []string) ([]failure, int, error) {
	args := append([]string{"test", "-count=1", "-json", "-timeout", timeout.String()}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "BLAST_TEST_BIN="+bin)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, 0, err
	}
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	fails, tests := parse(r, out)
	cmd.Wait() // its status is what the events said
	return fails, tests, nil
}

func parse(r int, rd io.Reader) ([]failure, int) {
	outputs := map[string]*strings.Builder{}
	var fails []failure
	tests := 0
	failedIn := map[string]bool{}
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "output":
			b := outputs[key]
			if b == nil {
				b = &strings.Builder{}
				outputs[key] = b
			}
			b.WriteString(e.Output)
		case "pass", "skip":
			if e.Test != "" {
				tests++
			}
			delete(outputs, key)
		case "fail":
			out := ""
			if b := outputs[key]; b != nil {
				out = b.String()
			}
			delete(outputs, key)
			if e.Test == "" {
				if failedIn[e.Package] {
					continue // its tests' failures are listed
				}
				fails = append(fails, failure{r, e.Package, "(package)", e.Elapsed, out})
				continue
			}
			tests++
			// A parent fails with its subtests: list only the leaves.
			parent := false
			for _, f := range fails {
				if f.pkg == e.Package && strings.HasPrefix(f.test, e.Test+"/") {
					parent = true
				}
			}
			failedIn[e.Package] = true
			if !parent {
				fails = append(fails, failure{r, e.Package, e.Test, e.Elapsed, out})
			}
		}
	}
	sort.SliceStable(fails, func(i, j int) bool { return fails[i].pkg < fails[j].pkg })
	return fails, tests
}

// busy starts a busy loop on n goroutines (the runtime spreads them over
// the CPUs) and returns the function that stops them; they stop by
// themselves after max.
func busy(n int, max time.Duration) func() {
	var done atomic.Bool
	var wg sync.WaitGroup
	deadline := time.Now().Add(max)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := uint64(1)
			for i := 0; !done.Load(); i++ {
				x = x*6364136223846793005 + 1442695040888963407
				if i%(1<<20) == 0 && time.Now().After(deadline) {
					return
				}
			}
			_ = x
		}()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			done.Store(true)
			wg.Wait()
		})
	}
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
