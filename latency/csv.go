package latency

import (
	"encoding/csv"
	"io"
	"strconv"
	"time"
)

// csvHeader is the one header line of WriteCSV: the unit of each figure
// is in its name.
var csvHeader = []string{
	"kind", "start_s", "end_s", "requests", "round_trips", "lost", "late", "round_trips_per_sec",
	"min_us", "mean_us", "stddev_us", "p50_us", "p90_us", "p99_us", "p99_9_us", "p99_99_us", "max_us",
}

// Indexes of the csvHeader columns that are not always set.
const (
	csvLost = 5
	csvLate = 6
	csvRate = 7
)

// WriteCSV writes r as CSV: one header line, one row per interval (kind
// "interval") and a last row for the whole run (kind "total", from 0 to
// the time measured). Every time is a full round trip in microseconds
// with 3 decimals (to the nanosecond), start_s and end_s are seconds from
// the start of measuring with 6, round_trips_per_sec has 3. lost (and,
// on the total, late) are UDP's and empty on TCP; late is not counted
// per interval. The round-trip figures of a row without a round trip are
// empty.
func WriteCSV(w io.Writer, r *Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	udp := r.Protocol == "udp"
	for _, iv := range r.Intervals {
		row := csvRow("interval", iv.Start, iv.End, iv.Requests, iv.RoundTrips, iv.RTT)
		if udp {
			row[csvLost] = strconv.FormatInt(iv.Lost, 10)
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	row := csvRow("total", 0, r.Elapsed, r.Requests, r.RoundTrips, r.RTT)
	if udp {
		row[csvLost], row[csvLate] = strconv.FormatInt(r.Lost, 10), strconv.FormatInt(r.Late, 10)
	}
	if err := cw.Write(row); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

// csvRow is a row with the span, the counts, the rate and the round-trip
// figures (lost and late left empty).
func csvRow(kind string, start, end time.Duration, requests, roundTrips int64, s Stats) []string {
	row := []string{kind, seconds(start), seconds(end), strconv.FormatInt(requests, 10), strconv.FormatInt(roundTrips, 10), "", "", ""}
	if d := end - start; d > 0 {
		row[csvRate] = strconv.FormatFloat(float64(roundTrips)/d.Seconds(), 'f', 3, 64)
	}
	if roundTrips == 0 || s.Count == 0 {
		return append(row, make([]string, len(csvHeader)-len(row))...)
	}
	for _, d := range []time.Duration{s.Min, s.Mean, s.StdDev, s.P50, s.P90, s.P99, s.P999, s.P9999, s.Max} {
		row = append(row, strconv.FormatFloat(float64(d)/1e3, 'f', 3, 64))
	}
	return row
}

func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 6, 64) }
