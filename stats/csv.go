package stats

import (
	"encoding/csv"
	"io"
	"math"
	"strconv"
	"strings"
)

// CSVHeader is the header line of CSVWriter for values in unit, a
// suffix for the column names such as "bits_per_second" or "us" (empty:
// none): the columns that hold a value in unit are named with it
// ("value_bits_per_second", "mean_bits_per_second").
func CSVHeader(unit string) []string {
	u := func(name string) string {
		if unit == "" {
			return name
		}
		return name + "_" + unit
	}
	return []string{"kind", "name", "run", u("value"), "n", u("mean"), u("sd"), u("min"), u("median"), u("max"),
		"ci_level", u("ci_low"), u("ci_high"), "ci_half_width_pct", "met"}
}

// Column indexes of CSVHeader.
const (
	csvKind = iota
	csvName
	csvRun
	csvValue
	csvN
	csvMean
	csvSD
	csvMin
	csvMedian
	csvMax
	csvLevel
	csvLow
	csvHigh
	csvHalfWidth
	csvMet
)

// CSVWriter writes Results as CSV under one header line, so that one
// file holds every repeated measurement of a command (each compare row's,
// say): per Result, one row per run (kind "run": run is 1 up, value what
// it measured) and then its summary (kind "summary": n, mean, sd, min,
// median, max, the confidence level as a fraction, the interval's bounds
// and half-width in percent of the mean, and met, whether the plan was
// met: false when --max-runs stopped a --confidence run short of its
// width). name says which measurement a row belongs to; a row leaves
// the columns of the other kind empty.
//
// Numbers are plain decimals of 12 significant digits, trailing zeros
// dropped (an infinite half-width, from a zero mean with a spread, is
// "+Inf"). A summary of fewer than two runs has no sd and no
// interval (ci_level included): those cells are empty, as are all but n
// and met with no run.
type CSVWriter struct {
	w      *csv.Writer
	header []string
	wrote  bool
}

// NewCSVWriter returns a CSVWriter of values in unit (see CSVHeader).
func NewCSVWriter(w io.Writer, unit string) *CSVWriter {
	return &CSVWriter{w: csv.NewWriter(w), header: CSVHeader(unit)}
}

// Write writes the header if it has not been written, then r's rows,
// and flushes them.
func (c *CSVWriter) Write(name string, r Result) error {
	if err := c.writeHeader(); err != nil {
		return err
	}
	for i, v := range r.Values {
		row := make([]string, len(c.header))
		row[csvKind], row[csvName], row[csvRun], row[csvValue] = "run", name, strconv.Itoa(i+1), num(v)
		if err := c.w.Write(row); err != nil {
			return err
		}
	}
	if err := c.w.Write(summaryRow(name, r, len(c.header))); err != nil {
		return err
	}
	c.w.Flush()
	return c.w.Error()
}

// Flush writes the header if no Result was written, so that the output
// is never empty, and flushes.
func (c *CSVWriter) Flush() error {
	if err := c.writeHeader(); err != nil {
		return err
	}
	c.w.Flush()
	return c.w.Error()
}

func (c *CSVWriter) writeHeader() error {
	if c.wrote {
		return nil
	}
	c.wrote = true
	return c.w.Write(c.header)
}

// WriteCSV writes one Result as CSV with its header: see CSVWriter.
func WriteCSV(w io.Writer, name, unit string, r Result) error {
	c := NewCSVWriter(w, unit)
	if err := c.Write(name, r); err != nil {
		return err
	}
	return c.Flush()
}

// summaryRow is r's summary row.
func summaryRow(name string, r Result, columns int) []string {
	s := r.Summary
	row := make([]string, columns)
	row[csvKind], row[csvName], row[csvN], row[csvMet] = "summary", name, strconv.Itoa(s.N), strconv.FormatBool(r.Met)
	if s.N == 0 {
		return row
	}
	row[csvMean], row[csvMin], row[csvMedian], row[csvMax] = num(s.Mean), num(s.Min), num(s.Median), num(s.Max)
	if s.HasInterval() {
		row[csvSD], row[csvLevel] = num(s.StdDev), num(s.Level)
		row[csvLow], row[csvHigh], row[csvHalfWidth] = num(s.Low), num(s.High), num(s.HalfWidthPct)
	}
	return row
}

// csvDigits is the significant digits of a number in the CSV: more than a
// measurement holds, few enough that float noise (30.262999999999998)
// rounds away.
const csvDigits = 12

// num is v as a plain decimal of csvDigits significant digits (all the
// digits of an integer part longer than that), trailing zeros dropped.
func num(v float64) string {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	prec := max(csvDigits-1-int(math.Floor(math.Log10(math.Abs(v)))), 0)
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
	}
	return s
}
