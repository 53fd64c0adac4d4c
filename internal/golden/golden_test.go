package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB that records what Check reports; Fatal ends
// the goroutine that runs Check, as it does in a test.
type recorder struct {
	testing.TB
	errors, fatals, logs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, a ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, a...))
}
func (r *recorder) Logf(format string, a ...any) { r.logs = append(r.logs, fmt.Sprintf(format, a...)) }
func (r *recorder) Fatal(a ...any)               { r.Fatalf("%s", fmt.Sprint(a...)) }
func (r *recorder) Fatalf(format string, a ...any) {
	r.fatals = append(r.fatals, fmt.Sprintf(format, a...))
	runtime.Goexit()
}

// check runs Check in a goroutine of its own, as Fatal may end it.
func check[T ~string | ~[]byte](t *testing.T, path string, got T) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Check(r, path, got)
	}()
	<-done
	return r
}

func setUpdate(t *testing.T, v bool) {
	old := *update
	*update = v
	t.Cleanup(func() { *update = old })
}

func TestCheck(t *testing.T) {
	setUpdate(t, false)
	path := filepath.Join(t.TempDir(), "out.txt")
	if err := os.WriteFile(path, []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := check(t, path, "one\ntwo\n"); len(r.errors)+len(r.fatals) != 0 {
		t.Errorf("same string: %q %q", r.errors, r.fatals)
	}
	if r := check(t, path, []byte("one\ntwo\n")); len(r.errors)+len(r.fatals) != 0 {
		t.Errorf("same bytes: %q %q", r.errors, r.fatals)
	}
	r := check(t, path, "one\nthree\n")
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "-want +got") ||
		!strings.Contains(r.errors[0], "two") || !strings.Contains(r.errors[0], "three") {
		t.Errorf("different: %q", r.errors)
	}
	// A trailing newline counts: the comparison is byte for byte.
	if r := check(t, path, "one\ntwo"); len(r.errors) != 1 {
		t.Errorf("missing final newline: %q", r.errors)
	}
	if r := check(t, filepath.Join(t.TempDir(), "none"), "x"); len(r.fatals) != 1 || !strings.Contains(r.fatals[0], "-update") {
		t.Errorf("missing file: %q", r.fatals)
	}
}

func TestCheckUpdate(t *testing.T) {
	setUpdate(t, true)
	path := filepath.Join(t.TempDir(), "golden", "out.txt")
	if r := check(t, path, "new\n"); len(r.errors)+len(r.fatals) != 0 || len(r.logs) != 1 {
		t.Errorf("create: %q %q %q", r.errors, r.fatals, r.logs)
	}
	if r := check(t, path, []byte("new\n")); len(r.errors)+len(r.fatals)+len(r.logs) != 0 {
		t.Errorf("unchanged: %q %q %q", r.errors, r.fatals, r.logs)
	}
	if r := check(t, path, "newer\n"); len(r.logs) != 1 {
		t.Errorf("rewrite: %q", r.logs)
	}
	setUpdate(t, false)
	if r := check(t, path, "newer\n"); len(r.errors)+len(r.fatals) != 0 {
		t.Errorf("after rewrite: %q %q", r.errors, r.fatals)
	}
}
