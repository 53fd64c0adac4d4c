package stats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/blastnet/blast/internal/golden"
	"github.com/blastnet/blast/units"
)

// approx compares the figures of a summary to the 4 to 6 digits the
// tables they come from give.
var approx = cmpopts.EquateApprox(1e-6, 1e-9)

// TestTQuantile checks the quantiles against a printed table of Student's
// t (two-sided levels 50% to 99.9%).
func TestTQuantile(t *testing.T) {
	for _, tc := range []struct {
		p, df, want float64
	}{
		{0.975, 1, 12.706205},
		{0.975, 2, 4.302653},
		{0.975, 3, 3.182446},
		{0.975, 4, 2.776445},
		{0.975, 9, 2.262157},
		{0.975, 29, 2.045230},
		{0.995, 4, 4.604095},
		{0.95, 9, 1.833113},
		{0.9995, 2, 31.599055},
		{0.75, 4, 0.740697},
	} {
		if got := tQuantile(tc.p, tc.df); math.Abs(got-tc.want) > 1e-6*tc.want {
			t.Errorf("t(%v, %v) = %.7f, want %.6f", tc.p, tc.df, got, tc.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	five := []float64{10, 12, 11, 13, 9}
	for _, tc := range []struct {
		name  string
		xs    []float64
		level float64
		want  Summary
	}{
		{"five at 95%", five, 0.95, Summary{N: 5, Mean: 11, StdDev: 1.58113883, Min: 9, Median: 11, Max: 13,
			Level: 0.95, Low: 9.03675691, High: 12.96324309, HalfWidthPct: 17.8476644}},
		{"five at 99%", five, 0.99, Summary{N: 5, Mean: 11, StdDev: 1.58113883, Min: 9, Median: 11, Max: 13,
			Level: 0.99, Low: 7.74441320, High: 14.25558680, HalfWidthPct: 29.5962436}},
		{"level 0 is 95%", five, 0, Summary{N: 5, Mean: 11, StdDev: 1.58113883, Min: 9, Median: 11, Max: 13,
			Level: 0.95, Low: 9.03675691, High: 12.96324309, HalfWidthPct: 17.8476644}},
		{"even count: median between the middle two", []float64{4, 1, 3, 2}, 0.95, Summary{N: 4, Mean: 2.5, StdDev: 1.29099445, Min: 1, Median: 2.5, Max: 4,
			Level: 0.95, Low: 0.44573994, High: 4.55426006, HalfWidthPct: 82.1704024}},
		{"constant: no spread", []float64{5, 5, 5}, 0.95, Summary{N: 3, Mean: 5, Min: 5, Median: 5, Max: 5,
			Level: 0.95, Low: 5, High: 5}},
		{"all zero", []float64{0, 0}, 0.95, Summary{N: 2, Level: 0.95}},
		{"one value: no interval", []float64{7}, 0.95, Summary{N: 1, Mean: 7, Min: 7, Median: 7, Max: 7,
			Level: 0.95, Low: 7, High: 7}},
		{"none", nil, 0.9, Summary{Level: 0.9}},
		{"zero mean with spread", []float64{-1, 1}, 0.95, Summary{N: 2, StdDev: math.Sqrt2, Min: -1, Max: 1,
			Level: 0.95, Low: -12.706205, High: 12.706205, HalfWidthPct: math.Inf(1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]float64(nil), tc.xs...)
			got := Summarize(tc.xs, tc.level)
			if diff := cmp.Diff(tc.want, got, approx); diff != "" {
				t.Errorf("Summarize(%v, %v) (-want +got):\n%s", tc.xs, tc.level, diff)
			}
			if diff := cmp.Diff(in, tc.xs, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Summarize changed its input (-before +after):\n%s", diff)
			}
			if got.HasInterval() != (tc.want.N >= 2) {
				t.Errorf("HasInterval() = %v with %d values", got.HasInterval(), got.N)
			}
		})
	}
}

func TestOverlap(t *testing.T) {
	ci := func(low, high float64) Summary { return Summary{N: 5, Mean: (low + high) / 2, Low: low, High: high} }
	for _, tc := range []struct {
		name string
		a, b Summary
		want bool
	}{
		{"overlapping", ci(9, 13), ci(12, 15), true},
		{"disjoint", ci(9, 10), ci(11, 12), false},
		{"touching", ci(9, 11), ci(11, 12), true},
		{"one inside the other", ci(9, 15), ci(11, 12), true},
		{"identical", ci(9, 10), ci(9, 10), true},
		{"one run has no interval", Summary{N: 1, Mean: 11, Low: 11, High: 11}, ci(9, 13), false},
		{"no runs", Summary{}, Summary{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Overlap(tc.a, tc.b); got != tc.want {
				t.Errorf("Overlap(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
			if got := Overlap(tc.b, tc.a); got != tc.want {
				t.Errorf("Overlap(%v, %v) = %v, want %v (swapped)", tc.b, tc.a, got, tc.want)
			}
		})
	}
}

func TestParseConfidence(t *testing.T) {
	for _, tc := range []struct {
		in           string
		level, width float64
		err          string
	}{
		{in: "95,5", level: 0.95, width: 5},
		{in: "99,5", level: 0.99, width: 5},
		{in: "99", level: 0.99, width: 5},
		{in: "99.9,1", level: 0.999, width: 1},
		{in: "50,100", level: 0.5, width: 100},
		{in: "90,0.5", level: 0.9, width: 0.5},
		{in: " 95 , 2 ", level: 0.95, width: 2},
		{in: "120,5", err: "--confidence 120,5: the level is a percent from 50 to 99.9"},
		{in: "99.95,5", err: "--confidence 99.95,5: the level is a percent from 50 to 99.9"},
		{in: "40", err: "--confidence 40: the level is a percent from 50 to 99.9"},
		{in: "0.95,5", err: "--confidence 0.95,5: the level is a percent from 50 to 99.9 (write 95, not 0.95)"},
		{in: "NaN,5", err: "--confidence NaN,5: the level is a percent from 50 to 99.9"},
		{in: "95,0", err: "--confidence 95,0: the width is a percent above 0 and at most 100, e.g. 5 for ±2.5%"},
		{in: "95,-5", err: "--confidence 95,-5: the width is a percent above 0 and at most 100, e.g. 5 for ±2.5%"},
		{in: "95,150", err: "--confidence 95,150: the width is a percent above 0 and at most 100, e.g. 5 for ±2.5%"},
		{in: "95,inf", err: "--confidence 95,inf: the width is a percent above 0 and at most 100, e.g. 5 for ±2.5%"},
		{in: "", err: `--confidence "": want LEVEL,WIDTH in percent, e.g. 95,5 for 95% confidence that the mean is within ±2.5%`},
		{in: "95,", err: "--confidence 95,: want LEVEL,WIDTH in percent, e.g. 95,5 for 95% confidence that the mean is within ±2.5%"},
		{in: "95%,5%", err: "--confidence 95%,5%: want LEVEL,WIDTH in percent, e.g. 95,5 for 95% confidence that the mean is within ±2.5%"},
		{in: "95,5,3", err: "--confidence 95,5,3: want LEVEL,WIDTH in percent, e.g. 95,5 for 95% confidence that the mean is within ±2.5%"},
		{in: "high", err: "--confidence high: want LEVEL,WIDTH in percent, e.g. 95,5 for 95% confidence that the mean is within ±2.5%"},
		{in: "9 5,5", err: `--confidence "9 5,5": want LEVEL,WIDTH in percent, e.g. 95,5 for 95% confidence that the mean is within ±2.5%`},
		{in: "95\x00,5", err: `--confidence "95\x00,5": want LEVEL,WIDTH in percent, e.g. 95,5 for 95% confidence that the mean is within ±2.5%`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			level, width, err := ParseConfidence(tc.in)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("ParseConfidence(%q) = %v, %v, %v\nwant error %q", tc.in, level, width, err, tc.err)
				}
				return
			}
			if err != nil || level != tc.level || width != tc.width {
				t.Fatalf("ParseConfidence(%q) = %v, %v, %v; want %v, %v", tc.in, level, width, err, tc.level, tc.width)
			}
			p := Plan{Level: level, Width: width}
			if err := p.Validate(); err != nil {
				t.Errorf("the plan of %q does not validate: %v", tc.in, err)
			}
		})
	}
}

// FuzzParseConfidence: any value of --confidence is read or refused
// without a panic; what is read is in bounds and makes a valid plan; a
// refusal is one line that names the flag.
func FuzzParseConfidence(f *testing.F) {
	for _, s := range []string{"95,5", "99", "99.9,0.1", "50,100", "120,5", "0.95,5", "95,", ",", "", "95%,5%", "1e2,5", "0x1p6,5", "NaN", "-inf,5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		level, width, err := ParseConfidence(s)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "--confidence ") || strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("ParseConfidence(%q): error %q is not one line naming the flag", s, msg)
			}
			return
		}
		if !(level >= 0.5 && level <= 0.999) || !(width > 0 && width <= 100) {
			t.Fatalf("ParseConfidence(%q) = %v, %v: out of bounds", s, level, width)
		}
		if err := (Plan{Level: level, Width: width}).Validate(); err != nil {
			t.Fatalf("ParseConfidence(%q) = %v, %v: the plan does not validate: %v", s, level, width, err)
		}
	})
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Plan
		err  string
	}{
		{"nothing", Plan{}, ""},
		{"repeat", Plan{Repeat: 5}, ""},
		{"repeat 1", Plan{Repeat: 1}, ""},
		{"repeat 1000", Plan{Repeat: 1000}, ""},
		{"confidence", Plan{Level: 0.95, Width: 5}, ""},
		{"confidence with runs", Plan{Level: 0.99, Width: 2, MinRuns: 2, MaxRuns: 1000}, ""},
		{"max-runs 3 meets the default minimum", Plan{Level: 0.95, Width: 5, MaxRuns: 3}, ""},
		{"repeat negative", Plan{Repeat: -1}, "--repeat -1: the count is from 1 to 1000"},
		{"repeat too many", Plan{Repeat: 1001}, "--repeat 1001: the count is from 1 to 1000"},
		{"repeat and confidence", Plan{Repeat: 5, Level: 0.95, Width: 5},
			"--repeat and --confidence together: use one (--repeat N runs N times, --confidence runs until the interval is narrow enough)"},
		{"max-runs alone", Plan{MaxRuns: 20},
			"--max-runs 20 without --confidence: it bounds a --confidence run; add --confidence 95,5 or drop --max-runs"},
		{"max-runs with repeat", Plan{Repeat: 3, MaxRuns: 20},
			"--max-runs 20 without --confidence: it bounds a --confidence run; add --confidence 95,5 or drop --max-runs"},
		{"min-runs alone", Plan{MinRuns: 4},
			"a minimum of 4 runs without --confidence: it bounds a --confidence run; add --confidence 95,5"},
		{"level out of range", Plan{Level: 1.2, Width: 5}, "--confidence 120,5: the level is a percent from 50 to 99.9"},
		{"width without level", Plan{Width: 5}, "--confidence 0,5: the level is a percent from 50 to 99.9"},
		{"level without width", Plan{Level: 0.95}, "--confidence 95,0: the width is a percent above 0 and at most 100, e.g. 5 for ±2.5%"},
		{"max-runs 1", Plan{Level: 0.95, Width: 5, MaxRuns: 1}, "--max-runs 1: the count is from 2 to 1000"},
		{"max-runs too many", Plan{Level: 0.95, Width: 5, MaxRuns: 1001}, "--max-runs 1001: the count is from 2 to 1000"},
		{"min-runs 1", Plan{Level: 0.95, Width: 5, MinRuns: 1}, "a minimum of 1 runs: the count is from 2 to 1000"},
		{"max-runs below the default minimum", Plan{Level: 0.95, Width: 5, MaxRuns: 2},
			"--max-runs 2: below the 3 runs --confidence makes at least; use --max-runs 3 or more"},
		{"max-runs below the minimum", Plan{Level: 0.95, Width: 5, MinRuns: 5, MaxRuns: 4},
			"--max-runs 4: below the 5 runs --confidence makes at least; use --max-runs 5 or more"},
		{"minimum above the default max-runs", Plan{Level: 0.95, Width: 5, MinRuns: 12},
			"--max-runs 10: below the 12 runs --confidence makes at least; use --max-runs 12 or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.err {
				t.Errorf("%+v.Validate():\n got %q\nwant %q", tc.p, got, tc.err)
			}
		})
	}
}

// sequence measures xs in turn, and records the indexes Run passed.
type sequence struct {
	xs    []float64
	calls []int
}

func (s *sequence) measure(i int) (float64, error) {
	s.calls = append(s.calls, i)
	return s.xs[i%len(s.xs)], nil
}

func indexes(n int) []int {
	is := make([]int, n)
	for i := range is {
		is[i] = i
	}
	return is
}

func TestRun(t *testing.T) {
	noisy := []float64{50, 150}
	for _, tc := range []struct {
		name   string
		p      Plan
		xs     []float64
		values []float64
		met    bool
		note   string
	}{
		{"no plan: one run", Plan{}, []float64{42}, []float64{42}, true, ""},
		{"repeat runs exactly N", Plan{Repeat: 4}, noisy, []float64{50, 150, 50, 150}, true, ""},
		{"repeat 1", Plan{Repeat: 1}, noisy, []float64{50}, true, ""},
		{"stable: stops at the minimum", Plan{Level: 0.95, Width: 5},
			[]float64{100, 100.5, 99.8, 100.2, 100.1, 99.9}, []float64{100, 100.5, 99.8}, true, ""},
		{"stable: a larger minimum", Plan{Level: 0.95, Width: 5, MinRuns: 5},
			[]float64{100, 100.5, 99.8, 100.2, 100.1, 99.9}, []float64{100, 100.5, 99.8, 100.2, 100.1}, true, ""},
		// ±24.8%, ±13.0% then ±8.8% against ±10%.
		{"settles between the bounds", Plan{Level: 0.95, Width: 20},
			[]float64{100, 110, 90, 100, 100, 100}, []float64{100, 110, 90, 100, 100}, true, ""},
		{"noisy: runs to max-runs", Plan{Level: 0.95, Width: 5}, noisy,
			[]float64{50, 150, 50, 150, 50, 150, 50, 150, 50, 150}, false,
			"stopped after 10 runs (--max-runs): the 95% interval is ±37.7%, wider than ±2.5%"},
		{"noisy: --max-runs 4 at 99%", Plan{Level: 0.99, Width: 1, MaxRuns: 4}, noisy,
			[]float64{50, 150, 50, 150}, false,
			"stopped after 4 runs (--max-runs): the 99% interval is ±169%, wider than ±0.50%"},
		{"constant: met at the minimum", Plan{Level: 0.999, Width: 0.1}, []float64{7}, []float64{7, 7, 7}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seq := &sequence{xs: tc.xs}
			r, err := Run(context.Background(), tc.p, seq.measure)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if diff := cmp.Diff(tc.values, r.Values); diff != "" {
				t.Errorf("values (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(indexes(len(tc.values)), seq.calls); diff != "" {
				t.Errorf("measure called with (-want +got):\n%s", diff)
			}
			if r.Runs != len(tc.values) || r.Met != tc.met {
				t.Errorf("Runs %d, Met %v; want %d, %v", r.Runs, r.Met, len(tc.values), tc.met)
			}
			level := tc.p.Level
			if level == 0 {
				level = DefaultLevel
			}
			if diff := cmp.Diff(Summarize(tc.values, level), r.Summary); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
			if got := r.Note(); got != tc.note {
				t.Errorf("Note():\n got %q\nwant %q", got, tc.note)
			}
		})
	}
}

func TestRunDefaultsInResult(t *testing.T) {
	r, err := Run(context.Background(), Plan{Level: 0.95, Width: 5}, (&sequence{xs: []float64{1}}).measure)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Plan{Level: 0.95, Width: 5, MinRuns: 3, MaxRuns: 10}, r.Plan); diff != "" {
		t.Errorf("Result.Plan (-want +got):\n%s", diff)
	}
}

func TestRunCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seq := &sequence{xs: []float64{50, 150}}
	r, err := Run(ctx, Plan{Repeat: 5}, func(i int) (float64, error) {
		if i == 1 {
			cancel() // during the second run: it completes, no third starts
		}
		return seq.measure(i)
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel: %v, want context.Canceled", err)
	}
	if diff := cmp.Diff([]float64{50, 150}, r.Values); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	if r.Runs != 2 || r.Met || r.Summary.N != 2 || r.Note() != "" {
		t.Errorf("Runs %d, Met %v, Summary.N %d, Note %q; want 2, false, 2, empty", r.Runs, r.Met, r.Summary.N, r.Note())
	}

	// Cancelled before the first run: nothing runs.
	calls := 0
	r, err = Run(ctx, Plan{Level: 0.95, Width: 5}, func(int) (float64, error) { calls++; return 1, nil })
	if !errors.Is(err, context.Canceled) || calls != 0 || r.Runs != 0 || len(r.Values) != 0 {
		t.Errorf("Run on a cancelled context: %v, %d calls, %d runs; want context.Canceled and none", err, calls, r.Runs)
	}
}

func TestRunMeasureError(t *testing.T) {
	refused := errors.New("dial tcp 198.18.0.2:5001: connection refused")
	seq := &sequence{xs: []float64{100, 101, 99}}
	r, err := Run(context.Background(), Plan{Level: 0.95, Width: 5}, func(i int) (float64, error) {
		if i == 2 {
			return 0, refused
		}
		return seq.measure(i)
	})
	if err != refused {
		t.Fatalf("Run: %v, want measure's error as it came", err)
	}
	if diff := cmp.Diff([]float64{100, 101}, r.Values); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	if r.Runs != 2 || r.Met || r.Note() != "" {
		t.Errorf("Runs %d, Met %v, Note %q; want 2, false, empty", r.Runs, r.Met, r.Note())
	}
}

func TestRunRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Plan
		v    float64
		err  string
		runs int
	}{
		{"invalid plan: nothing runs", Plan{Repeat: 3, Level: 0.95, Width: 5}, 1,
			"--repeat and --confidence together: use one (--repeat N runs N times, --confidence runs until the interval is narrow enough)", 0},
		{"NaN", Plan{Repeat: 3}, math.NaN(), "stats: run 1 measured NaN: a measurement is a finite rate, time or count, not negative", 0},
		{"infinity", Plan{Repeat: 3}, math.Inf(1), "stats: run 1 measured +Inf: a measurement is a finite rate, time or count, not negative", 0},
		{"negative", Plan{Repeat: 3}, -1, "stats: run 1 measured -1: a measurement is a finite rate, time or count, not negative", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			r, err := Run(context.Background(), tc.p, func(int) (float64, error) { calls++; return tc.v, nil })
			if err == nil || err.Error() != tc.err {
				t.Fatalf("Run: %v\nwant %q", err, tc.err)
			}
			if r.Runs != tc.runs || len(r.Values) != tc.runs || r.Met {
				t.Errorf("Runs %d, Values %v, Met %v; want %d runs, not met", r.Runs, r.Values, r.Met, tc.runs)
			}
			if _, err := json.Marshal(r); err != nil {
				t.Errorf("the result does not encode: %v", err)
			}
		})
	}
}

// TestRender: Line for each kind of unit, Note and the JSON of a result,
// against golden files.
func TestRender(t *testing.T) {
	rates := []float64{9.30e9, 9.41e9, 9.52e9, 9.38e9, 9.44e9}
	gbit := func(bps float64) string { return fmt.Sprintf("%.2f Gbit/s", bps/1e9) }
	duration := func(ns float64) string { return time.Duration(ns).Round(100 * time.Nanosecond).String() }
	rtts := []float64{48100, 51700, 49900, 52300, 50400, 49200, 120300}
	var b strings.Builder
	for _, tc := range []struct {
		name  string
		xs    []float64
		level float64
		unit  func(float64) string
	}{
		{"fixed unit (-f g)", rates, 0.95, gbit},
		{"adaptive unit (report.SIRate): the sd keeps its own", rates, 0.95, units.SIRate},
		{"99.9%", rates, 0.999, gbit},
		{"durations: no space, every value keeps its unit", rtts, 0.95, duration},
		{"no unit", []float64{10, 12, 11, 13, 9}, 0.95, nil},
		{"wide", []float64{50, 150, 50, 150}, 0.99, nil},
		{"no spread", []float64{9.41e9, 9.41e9, 9.41e9}, 0.95, gbit},
		{"one run", rates[:1], 0.95, gbit},
		{"no runs", nil, 0.95, gbit},
		{"zero mean with spread", []float64{-1, 1}, 0.95, nil},
	} {
		fmt.Fprintf(&b, "# %s\n%s\n", tc.name, Summarize(tc.xs, tc.level).Line(tc.unit))
	}
	golden.Check(t, "testdata/golden/line.txt", b.String())

	seq := &sequence{xs: []float64{9.1e9, 9.9e9, 9.3e9, 9.8e9}}
	r, err := Run(context.Background(), Plan{Level: 0.95, Width: 5, MaxRuns: 5}, seq.measure)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/golden/unmet.txt", r.Summary.Line(gbit)+"\n"+r.Note()+"\n")
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/golden/unmet.json", string(js)+"\n")
}

// TestRunFollowAndDone: a Follow plan goes on past a narrow interval
// until measure says ErrDone (or MaxRuns); ErrDone ends any plan without
// an error, and Met judges what ran.
func TestRunFollowAndDone(t *testing.T) {
	steady := []float64{100, 100.1, 99.9, 100, 100.05, 99.95}
	doneAfter := func(n int, xs []float64) func(int) (float64, error) {
		return func(i int) (float64, error) {
			if i >= n {
				return 0, fmt.Errorf("peer: %w", ErrDone)
			}
			return xs[i%len(xs)], nil
		}
	}
	for _, tc := range []struct {
		name string
		p    Plan
		done int // measure says ErrDone from this run on
		xs   []float64
		runs int
		met  bool
	}{
		{"confidence stops at the minimum", Plan{Level: 0.95, Width: 5}, 100, steady, 3, true},
		{"follow goes on to ErrDone", Plan{Level: 0.95, Width: 5, Follow: true}, 5, steady, 5, true},
		{"follow stops at max-runs", Plan{Level: 0.95, Width: 5, MaxRuns: 4, Follow: true}, 100, steady, 4, true},
		{"follow, too wide when the peer stopped", Plan{Level: 0.95, Width: 5, Follow: true}, 4, []float64{50, 150}, 4, false},
		{"follow, too few runs when the peer stopped", Plan{Level: 0.95, Width: 5, Follow: true}, 2, steady, 2, false},
		{"repeat cut short by ErrDone", Plan{Repeat: 5}, 3, steady, 3, false},
		{"follow without confidence is a count", Plan{Repeat: 2, Follow: true}, 100, steady, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Run(context.Background(), tc.p, doneAfter(tc.done, tc.xs))
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if r.Runs != tc.runs || r.Met != tc.met || r.Summary.N != tc.runs {
				t.Errorf("runs %d (summary n %d), met %v; want %d, %v", r.Runs, r.Summary.N, r.Met, tc.runs, tc.met)
			}
		})
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []float64
		want float64
	}{
		{"one", []float64{7}, 7},
		{"odd unsorted", []float64{3, 1, 2}, 2},
		{"even: mean of the middle two", []float64{4, 1, 3, 2}, 2.5},
		{"duplicates", []float64{5, 5, 1, 5}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]float64(nil), tc.in...)
			if got := Median(in); got != tc.want {
				t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
			}
			if !cmp.Equal(in, tc.in) {
				t.Errorf("Median reordered its input: %v", in)
			}
		})
	}
	if got := Median(nil); !math.IsNaN(got) {
		t.Errorf("Median(nil) = %v, want NaN", got)
	}
}
