package latency

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// within says whether got is within the histogram's resolution (0.1%) of
// want.
func within(got, want time.Duration) bool {
	return math.Abs(float64(got-want)) <= float64(want)/1000+1
}

func TestHistogramUniform(t *testing.T) {
	h := NewHistogram()
	const n = 10000
	for i := 1; i <= n; i++ { // 1 us .. 10 ms, once each
		h.Record(time.Duration(i) * time.Microsecond)
	}
	s := h.Stats()
	if s.Count != n || s.Min != time.Microsecond || s.Max != n*time.Microsecond {
		t.Errorf("count, min, max = %d, %v, %v; want %d, 1µs, 10ms (exact)", s.Count, s.Min, s.Max, n)
	}
	if want := 5000500 * time.Nanosecond; s.Mean != want {
		t.Errorf("mean = %v, want %v (exact)", s.Mean, want)
	}
	// Sample standard deviation of 1..n is sqrt(n(n+1)/12).
	if want := time.Duration(math.Round(math.Sqrt(n*(n+1)/12.0) * 1000)); s.StdDev != want {
		t.Errorf("stddev = %v, want %v", s.StdDev, want)
	}
	for _, tc := range []struct {
		name      string
		got, want time.Duration
	}{
		{"p50", s.P50, 5000 * time.Microsecond},
		{"p90", s.P90, 9000 * time.Microsecond},
		{"p99", s.P99, 9900 * time.Microsecond},
		{"p99.9", s.P999, 9990 * time.Microsecond},
		{"p99.99", s.P9999, 9999 * time.Microsecond},
	} {
		if !within(tc.got, tc.want) {
			t.Errorf("%s = %v, want %v within 0.1%%", tc.name, tc.got, tc.want)
		}
	}
	var sum int64
	for _, b := range h.Buckets() {
		if b.From > b.To || b.Count <= 0 {
			t.Fatalf("bad bucket %+v", b)
		}
		sum += b.Count
	}
	if sum != n {
		t.Errorf("buckets hold %d values, want %d", sum, n)
	}
}

// A tail: 990 fast round trips and 10 slow ones. p99 is the fast value,
// p99.9 the slow one; a histogram off by one rank gets this wrong.
func TestHistogramTail(t *testing.T) {
	h := NewHistogram()
	for range 990 {
		h.Record(10 * time.Microsecond)
	}
	for range 10 {
		h.Record(time.Millisecond)
	}
	s := h.Stats()
	got := map[string]bool{
		"p50 fast":   within(s.P50, 10*time.Microsecond),
		"p90 fast":   within(s.P90, 10*time.Microsecond),
		"p99 fast":   within(s.P99, 10*time.Microsecond),
		"p99.9 slow": within(s.P999, time.Millisecond),
		"max slow":   s.Max == time.Millisecond,
		"mean exact": s.Mean == 19900*time.Nanosecond, // (990*10 + 10*1000) / 1000 us
	}
	want := map[string]bool{"p50 fast": true, "p90 fast": true, "p99 fast": true, "p99.9 slow": true, "max slow": true, "mean exact": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stats %+v (-want +got):\n%s", s, diff)
	}
	if b := h.Buckets(); len(b) != 2 || b[0].Count != 990 || b[1].Count != 10 {
		t.Errorf("buckets = %+v, want two: 990 and 10", b)
	}
}

func TestHistogramEdges(t *testing.T) {
	h := NewHistogram()
	if s := h.Stats(); s != (Stats{}) {
		t.Errorf("empty: %+v, want zeros", s)
	}
	h.Record(0)             // below the range: counted as 1 ns
	h.Record(2 * time.Hour) // above: counted as one minute
	s := h.Stats()
	if s.Count != 2 || s.Min != 1 || s.Max != time.Minute || h.overflowed != 1 {
		t.Errorf("edges: %+v overflowed %d", s, h.overflowed)
	}
	h.Reset()
	if h.Count() != 0 || len(h.Buckets()) != 0 {
		t.Errorf("after Reset: count %d, %d buckets", h.Count(), len(h.Buckets()))
	}
}
