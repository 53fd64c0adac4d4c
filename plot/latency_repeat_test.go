package plot

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/latency"
	"github.com/blastnet/blast/stats"
)

// latencyRuns are three latency runs around 38, 42 and 46 µs, with the
// summary of their medians as blast lat prints it.
func latencyRuns() LatencyRepeated {
	var rep LatencyRepeated
	for k := range 3 {
		rng := rand.New(rand.NewPCG(uint64(k), 6))
		h := latency.NewHistogram()
		for range 2000 {
			h.Record(time.Duration((38e3 + 4e3*float64(k)) * math.Exp(0.15*rng.NormFloat64())))
		}
		r := &latency.Result{Protocol: "tcp", Remote: "198.18.0.2:5201", Size: 1, Requests: 2000, RoundTrips: 2000,
			Elapsed: time.Second, RTT: h.Stats(), Buckets: h.Buckets()}
		rep.Runs = append(rep.Runs, r)
		rep.Values = append(rep.Values, r.RTT.P50.Seconds()*1e6)
	}
	rep.Summary = stats.Summarize(rep.Values, stats.DefaultLevel)
	rep.Line = "median round trip (µs): " + rep.Summary.Line(nil)
	return rep
}

// blast lat --repeat --plot draws every run: a CDF line and a bar per run
// in its own color, each named in the legend, the medians' mean and its
// interval, and the printed summary as the caption, word for word.
func TestLatencyRunsEveryRun(t *testing.T) {
	rep := latencyRuns()
	for _, n := range []int{1, 3} {
		r := rep
		r.Runs, r.Values = rep.Runs[:n], rep.Values[:n]
		r.Summary = stats.Summarize(r.Values, stats.DefaultLevel)
		r.Line = "median round trip (µs): " + r.Summary.Line(nil)
		for _, ext := range []string{"svg", "png"} {
			path := filepath.Join(t.TempDir(), "runs."+ext)
			if err := LatencyRuns(path, r); err != nil {
				t.Fatal(err)
			}
			if ext == "png" {
				checkPNG(t, path)
				continue
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			checkSVG(t, b)
			checkRepeatedSVG(t, b, n, r.Line)
			texts, _ := svgTexts(t, b)
			all := strings.Join(texts, " ")
			want := []string{fmt.Sprintf("blast lat -> 198.18.0.2:5201: TCP, 1-byte requests, %d run", n),
				"round-trip time (µs)", "median round trip (µs)", "medians' mean " + strings.Fields(r.Line)[5] + " µs",
				"bars: each run's median round trip, the figure the summary is of"}
			if n == 1 {
				want[3] = "medians' mean " + strings.TrimSuffix(strings.Fields(r.Line)[4], ",") + " µs"
			} else {
				want = append(want, "medians' 95% CI of the mean")
			}
			for _, w := range want {
				if !strings.Contains(all, w) {
					t.Errorf("%d runs: no text %q:\n%s", n, w, strings.Join(texts, "\n"))
				}
			}
		}
	}
	for _, bad := range []LatencyRepeated{{}, {Runs: rep.Runs, Values: rep.Values[:1]}, {Runs: []*latency.Result{nil}, Values: []float64{1}}} {
		if err := LatencyRuns(filepath.Join(t.TempDir(), "x.svg"), bad); err == nil {
			t.Errorf("%d runs, %d values: no error", len(bad.Runs), len(bad.Values))
		}
	}
}
