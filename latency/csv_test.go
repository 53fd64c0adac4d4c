package latency

import (
	"strconv"
	"strings"
	"testing"

	"github.com/blastnet/blast/internal/golden"
	"github.com/blastnet/blast/internal/testkit"
)

func TestCSVGolden(t *testing.T) {
	for _, tc := range goldenRuns {
		t.Run(tc.name, func(t *testing.T) {
			_, r := tc.run()
			var b strings.Builder
			if err := WriteCSV(&b, r); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "testdata/golden/csv-"+tc.name+".csv", b.String())
		})
	}
}

// TestCSVParses reads every golden run's CSV back: the header, every row
// as long as it, one interval row per interval then one total row, a
// number in every cell that is set, lost and late on UDP only, late on
// the total only, and the round-trip figures set exactly when the row
// has round trips, with the total's p50 what the Result says.
func TestCSVParses(t *testing.T) {
	for _, tc := range goldenRuns {
		t.Run(tc.name, func(t *testing.T) {
			_, r := tc.run()
			var b strings.Builder
			if err := WriteCSV(&b, r); err != nil {
				t.Fatal(err)
			}
			rows := testkit.ReadCSV(t, b.String(), csvHeader)
			if len(rows) != len(r.Intervals)+1 {
				t.Fatalf("%d rows, want %d intervals and the total", len(rows), len(r.Intervals))
			}
			col := func(name string) int {
				for i, h := range csvHeader {
					if h == name {
						return i
					}
				}
				t.Fatalf("no column %s", name)
				return -1
			}
			udp := r.Protocol == "udp"
			for i, row := range rows {
				if len(row) != len(csvHeader) {
					t.Fatalf("row %d has %d fields, the header %d: %q", i+1, len(row), len(csvHeader), row)
				}
				total := i == len(rows)-1
				if want := map[bool]string{true: "total", false: "interval"}[total]; row[0] != want {
					t.Errorf("row %d: kind %q, want %q", i+1, row[0], want)
				}
				for j, v := range row[1:] {
					if v == "" {
						continue
					}
					if _, err := strconv.ParseFloat(v, 64); err != nil {
						t.Errorf("row %d: %s %q is not a number", i+1, csvHeader[j+1], v)
					}
				}
				if got := row[col("lost")] != ""; got != udp {
					t.Errorf("row %d: lost %q on protocol %s", i+1, row[col("lost")], r.Protocol)
				}
				if got := row[col("late")] != ""; got != (udp && total) {
					t.Errorf("row %d: late %q", i+1, row[col("late")])
				}
				roundTrips, _ := strconv.ParseInt(row[col("round_trips")], 10, 64)
				for _, name := range csvHeader[col("min_us"):] {
					if got := row[col(name)] != ""; got != (roundTrips > 0) {
						t.Errorf("row %d: %s %q with %d round trips", i+1, name, row[col(name)], roundTrips)
					}
				}
			}
			last := rows[len(rows)-1]
			if r.RoundTrips > 0 {
				if got, want := last[col("p50_us")], strconv.FormatFloat(float64(r.RTT.P50)/1e3, 'f', 3, 64); got != want {
					t.Errorf("total p50_us %s, want %s", got, want)
				}
			}
			if got, want := last[col("round_trips")], strconv.FormatInt(r.RoundTrips, 10); got != want {
				t.Errorf("total round_trips %s, want %s", got, want)
			}
		})
	}
}
