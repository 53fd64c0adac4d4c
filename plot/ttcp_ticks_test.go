package plot

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestRunsLabelsEveryRun checks that the runs bar chart numbers every bar
// on its x axis, not only some of them.
func TestRunsLabelsEveryRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.svg")
	rates := []float64{9.1e8, 9.3e8, 9.2e8, 9.4e8, 9.0e8}
	if err := Runs(path, rates, 9.2e8, nil, "runs"); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"1", "2", "3", "4", "5"} {
		if !regexp.MustCompile(`>` + k + `</text>`).Match(svg) {
			t.Errorf("run %s has no label on the x axis", k)
		}
	}
	got := runTicks{n: 5}.Ticks(0.4, 5.6)
	if len(got) != 5 {
		t.Fatalf("got %d ticks, want 5", len(got))
	}
	for i, tk := range got {
		if tk.Value != float64(i+1) || tk.Label != string(rune('1'+i)) {
			t.Errorf("tick %d = %v %q", i, tk.Value, tk.Label)
		}
	}
}
