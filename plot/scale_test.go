package plot

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/blastnet/blast/compare"
	"github.com/blastnet/blast/doctor"
)

// barSizes are the widths and heights, in points, of the SVG's filled
// rectangles in color fill ("#1F77B4").
func barSizes(t *testing.T, b []byte, fill string) (w, h []float64) {
	t.Helper()
	path := regexp.MustCompile(`<path d="([^"]*)" style="fill:` + fill + `" />`)
	num := regexp.MustCompile(`-?[0-9.]+`)
	for _, m := range path.FindAllStringSubmatch(string(b), -1) {
		var xs, ys []float64
		for i, s := range num.FindAllString(m[1], -1) {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatal(err)
			}
			if i%2 == 0 {
				xs = append(xs, v)
			} else {
				ys = append(ys, v)
			}
		}
		w = append(w, slices.Max(xs)-slices.Min(xs))
		h = append(h, slices.Max(ys)-slices.Min(ys))
	}
	return w, h
}

// A doctor run whose rates span more than 30x (95 Mbit/s beside 12.9
// Gbit/s) gets a log axis, on which both bars stand tall enough to see;
// on the linear axis the 95 Mbit/s bar was two points high.
func TestDoctorLogAxis(t *testing.T) {
	rep := &doctor.Report{Host: "198.18.0.2", Port: 5201, Verdict: "WARN D7: download is 136x slower than upload",
		Tests: []doctor.Test{{Name: "tcp upload", Bps: 12.9e9}, {Name: "tcp download", Bps: 95e6, Retransmits: 2100}}}
	path := filepath.Join(t.TempDir(), "doctor.svg")
	if err := Doctor(path, rep); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if *keep != "" {
		Doctor(filepath.Join(*keep, "doctor-log.png"), rep)
	}
	texts, _ := svgTexts(t, b)
	for _, w := range []string{"throughput (bit/s, log scale)", "100M", "1G", "10G", "12.9 Gbit/s", "95 Mbit/s"} {
		if !slices.Contains(texts, w) {
			t.Errorf("no text %q: %q", w, texts)
		}
	}
	_, h := barSizes(t, b, "#1F77B4")
	if len(h) != 2 {
		t.Fatalf("%d bars, want 2", len(h))
	}
	// The data area is about 300 points high: a bar under 30 is hard to
	// see, and the 95 Mbit/s bar stands a whole decade above the floor.
	for i, v := range h {
		if v < 30 {
			t.Errorf("bar %d (%s) is %.1f points high, want 30 or more", i+1, rep.Tests[i].Name, v)
		}
	}
	if h[0] <= h[1] {
		t.Errorf("the 12.9 Gbit/s bar (%.1f pt) is not above the 95 Mbit/s one (%.1f pt)", h[0], h[1])
	}

	// Within 30x the axis stays linear: 9.41 Gbit/s beside 481 Mbit/s.
	if err := Doctor(path, doctorReport()); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	texts, _ = svgTexts(t, b)
	if !slices.Contains(texts, "throughput (Gbit/s)") || strings.Contains(string(b), "log scale") {
		t.Errorf("a 19x span got a log axis: %q", texts)
	}
}

func TestNewScale(t *testing.T) {
	for _, c := range []struct {
		vals  []float64
		log   bool
		floor float64
	}{
		{[]float64{95e6, 12.9e9}, true, 7},
		{[]float64{1e8, 3e9}, false, 0},
		{[]float64{1e8, 3.1e9, 0}, true, 7}, // a zero is no value on a log axis
		{[]float64{1e8, 1e10}, true, 7},
	} {
		s := newScale(c.vals, 1e9, 1)
		if s.log != c.log || (s.log && s.floor != c.floor) {
			t.Errorf("%g: log %v floor %g, want %v %g", c.vals, s.log, s.floor, c.log, c.floor)
		}
		if s.log && s.at(c.vals[0])-s.base() < 0.5 {
			t.Errorf("%g: the least bar is %.2f decades high, want half a decade at least", c.vals, s.at(c.vals[0])-s.base())
		}
	}
}

// A comparison whose rows span more than 30x (27.4 Gbit/s beside 480
// Mbit/s) gets a log throughput axis with both bars long enough to see,
// and its interval's whisker drawn on the same scale.
func TestCompareLogAxis(t *testing.T) {
	rows, ivs := compareRows()
	rows = append(rows[:4:4], compare.Row{Case: "afxdp -> afxdp", BitsPerSec: 480e6, CPUPerGB: 9.5})
	path := filepath.Join(t.TempDir(), "compare.svg")
	if err := Compare(path, rows, ivs, ""); err != nil {
		t.Fatal(err)
	}
	if *keep != "" {
		Compare(filepath.Join(*keep, "compare-log.png"), rows, ivs, "")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	texts, _ := svgTexts(t, b)
	for _, w := range []string{"throughput (bit/s, log scale)", "CPU-s/GB (both ends, log scale)", "1G", "10G", "480 Mbit/s", "18.2 Gbit/s (17.1 to 19.3)"} {
		if !slices.Contains(texts, w) {
			t.Errorf("no text %q: %q", w, texts)
		}
	}
	w, _ := barSizes(t, b, "#1F77B4")
	if len(w) != 5 {
		t.Fatalf("%d bars, want 5", len(w))
	}
	for i, v := range w {
		if v < 30 {
			t.Errorf("bar %d is %.1f points long, want 30 or more", i+1, v)
		}
	}
	if err := Compare(path, rows[:4], ivs, ""); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	if texts, _ := svgTexts(t, b); !slices.Contains(texts, "throughput (Gbit/s)") || strings.Contains(string(b), "log scale") {
		t.Errorf("a 1.5x span got a log axis: %q", texts)
	}
}
