// Package golden compares a test's output with a golden file, a file kept
// in the package's testdata that holds the expected output byte for byte.
// Run a package's tests with -update to rewrite its golden files from what
// the tests now produce, then review the change with git diff.
//
// It is for tests only: import it from _test.go files and nowhere else, so
// that package testing (and the -update flag) stay out of the blast binary.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// update is registered once here; every test binary that imports golden
// accepts -update.
var update = flag.Bool("update", false, "rewrite the golden files with what the tests produce")

// Updating reports whether the tests run with -update: a test that keeps
// golden files Check cannot compare byte for byte (pictures, compared
// pixel by pixel within a tolerance) writes them then, and compares
// otherwise.
func Updating() bool { return *update }

// Check compares got with the golden file at path (relative to the test's
// package directory, e.g. "testdata/golden/client-p1.txt"). On a
// difference it reports a go-cmp diff (-want +got) as a test error; a
// missing file is fatal. With -update it writes got to path instead,
// creating the directory if need be, and leaves a file that already holds
// got untouched.
func Check[T ~string | ~[]byte](tb testing.TB, path string, got T) {
	tb.Helper()
	if *update {
		if old, err := os.ReadFile(path); err == nil && string(old) == string(got) {
			return
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			tb.Fatal(err)
		}
		tb.Logf("rewrote %s", path)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (run go test with -update to create it)", err)
	}
	if bytes.Equal(want, []byte(got)) {
		return
	}
	tb.Errorf("%s differs (-want +got); rerun with -update if intended:\n%s", path, cmp.Diff(string(want), string(got)))
}
