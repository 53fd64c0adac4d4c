package plot

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	gplot "gonum.org/v1/plot"

	"github.com/blastnet/blast/latency"
)

// labels are the labelled ticks' labels.
func labels(ts []gplot.Tick) []string {
	var out []string
	for _, t := range ts {
		if t.Label != "" {
			out = append(out, t.Label)
		}
	}
	return out
}

// Every axis labels its ticks in one notation: the histogram's count axis
// once read 1, 10, ..., 100000, 1e+06.
func TestTickNotation(t *testing.T) {
	for _, c := range []struct {
		name string
		got  []gplot.Tick
		want []string
	}{
		{"log counts past a million", logTicks{}.Ticks(0.6, 2e6), []string{"1", "10", "100", "1k", "10k", "100k", "1M"}},
		{"log counts below a million", logTicks{}.Ticks(0.6, 5e5), []string{"1", "10", "100", "1000", "10000", "100000"}},
		{"pow counts past a million", powTicks{}.Ticks(0, math.Log10(3e6)), []string{"1", "10", "100", "1k", "10k", "100k", "1M"}},
		{"linear past a million", niceTicks{}.Ticks(0, 1.25e6), []string{"0", "250k", "500k", "750k", "1M", "1.25M"}},
		{"linear in tenths", niceTicks{}.Ticks(0, 0.5), []string{"0", "0.1", "0.2", "0.3", "0.4", "0.5"}},
		{"linear plain", niceTicks{}.Ticks(0, 25000), []string{"0", "5000", "10000", "15000", "20000", "25000"}},
		{"small", niceTicks{}.Ticks(0, 0.0025), []string{"0", "500µ", "1m", "1.5m", "2m", "2.5m"}},
		{"whole counts", intTicks{}.Ticks(0, 4e6), []string{"0", "1M", "2M", "3M", "4M"}},
		{"log time in µs", logTicks{}.Ticks(20, 3000), []string{"20", "50", "100", "200", "500", "1000", "2000"}},
	} {
		if got := labels(c.got); !slices.Equal(got, c.want) {
			t.Errorf("%s: labels %q, want %q", c.name, got, c.want)
		}
	}
}

// siValue reads a label back: a plain number, or one with an SI prefix.
func siValue(s string) (v float64, prefixed bool, err error) {
	for i, p := range siPrefixes {
		if p != "" && strings.HasSuffix(s, p) {
			v, err = strconv.ParseFloat(strings.TrimSuffix(s, p), 64)
			return v * math.Pow10(3*(i-3)), true, err
		}
	}
	v, err = strconv.ParseFloat(s, 64)
	return v, false, err
}

// Over many ranges, on every ticker: each label reads back as its value,
// none is in exponent form, and an axis with a prefixed label writes
// every value of a thousand or more (or below one) prefixed too.
func TestTickNotationProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	tickers := map[string]gplot.Ticker{"nice": niceTicks{}, "log": logTicks{}, "int": intTicks{}}
	for range 2000 {
		lo := math.Pow(10, rng.Float64()*14-5)
		hi := lo * math.Pow(10, rng.Float64()*7+0.05)
		if rng.IntN(3) == 0 {
			lo = 0
		}
		for name, tk := range tickers {
			if name == "log" && lo == 0 {
				continue
			}
			ls := labels(tk.Ticks(lo, hi))
			anyPrefix := false
			var vals []float64
			for _, l := range ls {
				v, p, err := siValue(l)
				if err != nil || strings.ContainsAny(l, "eE+") {
					t.Fatalf("%s [%g, %g]: label %q does not read as a number: %v (labels %q)", name, lo, hi, l, err, ls)
				}
				anyPrefix = anyPrefix || p
				vals = append(vals, v)
			}
			for i, v := range vals {
				a := math.Abs(v)
				if _, p, _ := siValue(ls[i]); anyPrefix && !p && v != 0 && (a >= 1000 || a < 1) {
					t.Fatalf("%s [%g, %g]: labels %q mix notations (%q)", name, lo, hi, ls, ls[i])
				}
			}
		}
	}
	for _, v := range []float64{1, 999.9999999999, 1e3, 1.5e6, 2.5e-3, 5e-4, 1e15, 0.1 + 0.2} {
		got, _, _ := siValue(siNum(v))
		if math.Abs(got-v) > 1e-9*math.Abs(v) {
			t.Errorf("siNum(%g) = %q, reads back as %g", v, siNum(v), got)
		}
	}
}

// A latency run of two million round trips: its count axis reaches past a
// million, and reads 1 ... 100k, 1M, never 100000 beside 1e+06.
func TestLatencyCountAxisOneNotation(t *testing.T) {
	h := latency.NewHistogram()
	for i := range 2_000_000 {
		h.Record(time.Duration(40e3 + float64(i%7)*1e3))
	}
	h.Record(2 * time.Millisecond)
	r := &latency.Result{Protocol: "tcp", Remote: "198.18.0.2:5201", Size: 1, Requests: 2_000_001, RoundTrips: 2_000_001,
		Elapsed: 20 * time.Second, RTT: h.Stats(), Buckets: h.Buckets()}
	path := filepath.Join(t.TempDir(), "lat.svg")
	if err := Latency(path, r, ""); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	texts, _ := svgTexts(t, b)
	if i := slices.IndexFunc(texts, func(s string) bool { return regexp.MustCompile(`^[0-9.]+e[+-]?[0-9]+$`).MatchString(s) }); i >= 0 {
		t.Errorf("a tick in exponent form: %q", texts[i])
	}
	for _, w := range []string{"100k", "1M"} {
		if !slices.Contains(texts, w) {
			t.Errorf("the count axis has no %q; texts %q", w, texts)
		}
	}
	if slices.Contains(texts, "100000") {
		t.Errorf("the count axis has 100000 beside 1M")
	}
}
