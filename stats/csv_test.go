package stats

import (
	"context"
	"encoding/csv"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/internal/golden"
)

// runCSV runs plan over xs as a command would.
func runCSV(t *testing.T, p Plan, xs ...float64) Result {
	t.Helper()
	r, err := Run(context.Background(), p, (&sequence{xs: xs}).measure)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type csvNamed struct {
	name string
	r    Result
}

// csvCases are the golden CSV files: each a unit and the Results a
// command writes into one file.
func csvCases(t *testing.T) []struct {
	name, unit string
	results    []csvNamed
} {
	return []struct {
		name, unit string
		results    []csvNamed
	}{
		// blast client --repeat 5.
		{"client-repeat", "bits_per_second", []csvNamed{
			{"sum_received", runCSV(t, Plan{Repeat: 5}, 9.30e9, 9.41e9, 9.52e9, 9.38e9, 9.44e9)}}},
		// blast client --confidence 95,5 --max-runs 5 on a noisy path:
		// the plan is not met.
		{"client-confidence-unmet", "bits_per_second", []csvNamed{
			{"sum_received", runCSV(t, Plan{Level: 0.95, Width: 5, MaxRuns: 5}, 9.1e9, 9.9e9, 9.3e9, 9.8e9)}}},
		// blast lat --confidence 99,2: met after the minimum of runs.
		{"lat-confidence", "us", []csvNamed{
			{"p50", runCSV(t, Plan{Level: 0.99, Width: 2}, 30.271, 30.207, 30.335, 30.239)}}},
		// blast compare --repeat 3: one Result per case in one file,
		// names with commas; one case measured once (it failed after).
		{"compare-repeat", "bits_per_second", []csvNamed{
			{"readwrite -> readwrite", runCSV(t, Plan{Repeat: 3}, 9344821514, 9120448230, 9401337612)},
			{"mmsg[batch=64,gso] -> mmsg[batch=64,gro]", runCSV(t, Plan{Repeat: 3}, 1305871884, 1362594535, 1331020117)},
			{"zerocopy -> readwrite", runCSV(t, Plan{}, 8052242351)},
			{"iouring -> iouring", Result{Summary: Summarize(nil, DefaultLevel)}},
		}},
		// No unit, and nothing written: the header alone.
		{"no-results", "", nil},
	}
}

func TestCSVGolden(t *testing.T) {
	for _, tc := range csvCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			c := NewCSVWriter(&b, tc.unit)
			for _, n := range tc.results {
				if err := c.Write(n.name, n.r); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Flush(); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "testdata/golden/csv-"+tc.name+".csv", b.String())
		})
	}
}

// csvNear reports whether a number read back is v to the 12 digits written.
func csvNear(got, v float64) bool { return math.Abs(got-v) <= 1e-11*math.Abs(v) }

// TestCSVParses reads each file back: one header with the unit in the
// value columns, every row as long, per Result its runs numbered from 1
// with their values to 12 digits, then its summary with n, the figures
// (to 12 digits) set or empty where there is no interval, and met.
func TestCSVParses(t *testing.T) {
	for _, tc := range csvCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			c := NewCSVWriter(&b, tc.unit)
			for _, n := range tc.results {
				if err := c.Write(n.name, n.r); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Flush(); err != nil {
				t.Fatal(err)
			}
			cr := csv.NewReader(strings.NewReader(b.String()))
			cr.FieldsPerRecord = -1 // checked below, to say which row
			recs, err := cr.ReadAll()
			if err != nil {
				t.Fatalf("the output does not parse as CSV: %v", err)
			}
			if len(recs) == 0 {
				t.Fatal("no header")
			}
			header := recs[0]
			if diff := cmp.Diff(CSVHeader(tc.unit), header); diff != "" {
				t.Fatalf("header (-want +got):\n%s", diff)
			}
			if tc.unit != "" && header[csvValue] != "value_"+tc.unit {
				t.Errorf("value column %q: the unit is not in it", header[csvValue])
			}
			rows := recs[1:]
			for i, row := range rows {
				if len(row) != len(header) {
					t.Fatalf("row %d has %d fields, the header %d: %q", i+1, len(row), len(header), row)
				}
			}
			f := func(s string) float64 {
				t.Helper()
				v, err := strconv.ParseFloat(s, 64)
				if err != nil {
					t.Fatalf("%q is not a number: %v", s, err)
				}
				return v
			}
			for _, n := range tc.results {
				for i, v := range n.r.Values {
					row := rows[0]
					rows = rows[1:]
					if row[csvKind] != "run" || row[csvName] != n.name || row[csvRun] != strconv.Itoa(i+1) || !csvNear(f(row[csvValue]), v) {
						t.Errorf("%s run %d: %q, want value %v", n.name, i+1, row, v)
					}
					for j := csvN; j <= csvMet; j++ {
						if row[j] != "" {
							t.Errorf("%s run %d: %s = %q", n.name, i+1, header[j], row[j])
						}
					}
				}
				row := rows[0]
				rows = rows[1:]
				s := n.r.Summary
				if row[csvKind] != "summary" || row[csvName] != n.name || row[csvRun] != "" || row[csvValue] != "" ||
					row[csvN] != strconv.Itoa(s.N) || row[csvMet] != strconv.FormatBool(n.r.Met) {
					t.Errorf("%s summary: %q", n.name, row)
				}
				cells := []struct {
					col  int
					v    float64
					want bool
				}{
					{csvMean, s.Mean, s.N > 0}, {csvMin, s.Min, s.N > 0}, {csvMedian, s.Median, s.N > 0}, {csvMax, s.Max, s.N > 0},
					{csvSD, s.StdDev, s.HasInterval()}, {csvLevel, s.Level, s.HasInterval()}, {csvLow, s.Low, s.HasInterval()},
					{csvHigh, s.High, s.HasInterval()}, {csvHalfWidth, s.HalfWidthPct, s.HasInterval()},
				}
				for _, c := range cells {
					if got := row[c.col]; (got != "") != c.want || (c.want && !csvNear(f(got), c.v)) {
						t.Errorf("%s summary: %s = %q, want %v (set: %v)", n.name, header[c.col], got, c.v, c.want)
					}
				}
			}
			if len(rows) != 0 {
				t.Errorf("%d rows more than the results: %q", len(rows), rows)
			}
		})
	}
}

// TestWriteCSV: WriteCSV is CSVWriter with one Result.
func TestWriteCSV(t *testing.T) {
	r := runCSV(t, Plan{Repeat: 2}, 1.5, 2.5)
	var one, many strings.Builder
	if err := WriteCSV(&one, "x", "s", r); err != nil {
		t.Fatal(err)
	}
	c := NewCSVWriter(&many, "s")
	if err := c.Write("x", r); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if one.String() != many.String() {
		t.Errorf("WriteCSV:\n%s\nCSVWriter:\n%s", one.String(), many.String())
	}
	if !strings.HasPrefix(one.String(), "kind,name,run,value_s,") {
		t.Errorf("header: %q", one.String())
	}
}

func TestCSVNumbers(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{0, "0"},
		{9.41e9, "9410000000"},
		{9288869118.666666, "9288869118.67"},
		{30.262999999999998, "30.263"},
		{30.255000000000003, "30.255"},
		{0.95, "0.95"},
		{0.054650404085117905, "0.0546504040851"},
		{9.9999999999999, "10"},
		{1234567890123456, "1234567890123456"},
		{-12.71, "-12.71"},
		{math.Inf(1), "+Inf"},
	} {
		if got := num(tc.v); got != tc.want {
			t.Errorf("num(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
