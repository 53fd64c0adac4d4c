package main

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/internal/blasttest"
	"github.com/blastnet/blast/internal/testkit"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
	"github.com/blastnet/blast/plot"
	"github.com/blastnet/blast/stats"
)

func TestMain(m *testing.M) { blasttest.Main(m, true) }

// repeatDoc is the -J document of a repeated client run.
type repeatDoc struct {
	Runs   []json.RawMessage `json:"runs"`
	Repeat struct {
		Values  []float64     `json:"values"`
		Runs    int           `json:"runs"`
		Met     bool          `json:"met"`
		Summary stats.Summary `json:"summary"`
		Plan    stats.Plan    `json:"plan"`
	} `json:"repeat"`
}

// checkStops checks that a --confidence run stopped where its rule says,
// on the figures it measured: not before the plan's minimum, at the
// first run whose interval is narrow enough, else at its maximum; and
// that the summary is that of the figures.
func checkStops(t *testing.T, doc repeatDoc) {
	t.Helper()
	r := doc.Repeat
	p := r.Plan
	if r.Runs != len(r.Values) || len(doc.Runs) != r.Runs || r.Summary.N != r.Runs {
		t.Fatalf("runs %d, %d figures, %d documents, n %d: want one count", r.Runs, len(r.Values), len(doc.Runs), r.Summary.N)
	}
	narrow := func(k int) bool { return stats.Summarize(r.Values[:k], p.Level).HalfWidthPct <= p.Width/2 }
	for k := p.MinRuns; k < r.Runs; k++ {
		if narrow(k) {
			t.Errorf("the interval was narrow enough after %d runs, yet it ran %d: %v", k, r.Runs, r.Values)
		}
	}
	switch {
	case r.Runs < p.MinRuns || r.Runs > p.MaxRuns:
		t.Errorf("%d runs, outside the plan's %d to %d", r.Runs, p.MinRuns, p.MaxRuns)
	case r.Met != narrow(r.Runs):
		t.Errorf("met %v, but the interval after the last run is ±%.2f%% for a width of %g%%", r.Met, r.Summary.HalfWidthPct, p.Width)
	case !r.Met && r.Runs != p.MaxRuns:
		t.Errorf("not met after %d runs, short of --max-runs %d", r.Runs, p.MaxRuns)
	}
	if want := stats.Summarize(r.Values, p.Level); math.Abs(r.Summary.Mean-want.Mean) > 1e-6*want.Mean || math.Abs(r.Summary.HalfWidthPct-want.HalfWidthPct) > 1e-6 {
		t.Errorf("summary %+v, want that of the figures %v: %+v", r.Summary, r.Values, want)
	}
}

func labClient(t *testing.T, lab *netlab.Lab, port string, args ...string) (string, int) {
	t.Helper()
	p := blasttest.Start(t, lab.A, nil, blasttest.Bin, append([]string{"client", lab.B.Addr4.String(), "-p", port}, args...)...)
	err := p.WaitErr(3 * time.Minute)
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return p.Stdout.String(), ee.ExitCode()
	case err != nil:
		t.Fatalf("%v: %v\nstderr: %s", args, err, p.Stderr.String())
	}
	return p.Stdout.String(), 0
}

// --confidence runs until the interval is narrow, and stops where its
// rule says on the figures it measured (checkStops), on a steady path (a
// sender paced at 18 Mbit/s below a 20 Mbit/s tbf shaper holds each run's rate; 95,20 asks ±10%) and on
// one made noisy (a delay line that loses 3% of the frames: TCP's rate
// swings so that ±0.5% at 99% is out of reach, and it runs to
// --max-runs). That a paced sender meets 95,5 in the fewest runs is the
// host's to decide: TestTimingConfidenceSteady.
func TestLabConfidence(t *testing.T) {
	for _, tc := range []struct {
		name string
		topo netlab.Topology
		opt  netlab.Options
		args []string
	}{
		{"steady", netlab.Direct, netlab.Options{RateMbit: 20}, []string{"-b", "18M", "--confidence", "95,20", "--max-runs", "4"}},
		{"noisy", netlab.Delayed, netlab.Options{Delay: 4 * time.Millisecond, LossPct: 3, Seed: 1}, []string{"--confidence", "99,1", "--max-runs", "3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lab := labtest.New(t, tc.topo, tc.opt)
			port := strconv.Itoa(testkit.FreePort(t))
			blasttest.Listening(t, lab.B, "tcp", mustAtoi(t, port), blasttest.Bin, "server", "-p", port)
			out, code := labClient(t, lab, port, append([]string{"-t", "1", "-J"}, tc.args...)...)
			var doc repeatDoc
			if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 {
				t.Fatalf("exit %d, %v\n%s", code, err, out)
			}
			checkStops(t, doc)
			t.Logf("%d runs, met %v: %v bit/s, ±%.2f%%", doc.Repeat.Runs, doc.Repeat.Met, doc.Repeat.Values, doc.Repeat.Summary.HalfWidthPct)
			switch tc.name {
			case "steady":
				// The sender paced at 18 Mbit/s, below what the
				// shaper passes (20 Mbit/s of frames, 19.1 of
				// payload): each run's receiver counts its 18 Mbit/s
				// in the test's second. (Unpaced, TCP overflows the
				// shaper's shallow queue and a 1 s run that meets a
				// retransmission timeout gets 25% less: not steady.)
				if m := doc.Repeat.Summary.Mean; m < 0.9*18e6 || m > 1.1*18e6 {
					t.Errorf("mean %.0f bit/s, want the sender's 18 Mbit/s within 10%%", m)
				}
			case "noisy":
				if doc.Repeat.Met || doc.Repeat.Runs != 3 {
					t.Errorf("met %v after %d runs: want the noisy path to run to --max-runs 3 unmet", doc.Repeat.Met, doc.Repeat.Runs)
				}
			}
		})
	}
}

// --repeat N in text: each run's report, then one summary line; --plot
// draws every run (TestClientRepeatPlotEveryRun checks what).
func TestLabRepeatText(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	port := strconv.Itoa(testkit.FreePort(t))
	blasttest.Listening(t, lab.B, "tcp", mustAtoi(t, port), blasttest.Bin, "server", "-p", port)
	file := filepath.Join(t.TempDir(), "run.png")
	out, code := labClient(t, lab, port, "-t", "1", "--repeat", "2", "--plot", file)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if strings.Count(out, "== run ") != 2 || strings.Count(out, "receiver\n") != 2 {
		t.Errorf("want two runs' reports:\n%s", out)
	}
	if !strings.Contains(out, "\nblast: receivers' throughput: mean ") || !strings.HasSuffix(out, ", 2 runs\n\niperf Done.\n") {
		t.Errorf("no summary line:\n%s", out)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil || img.Bounds().Dx() != plot.PixelWidth || img.Bounds().Dy() != plot.PixelHeight {
		t.Errorf("plot: %v, %v", err, img.Bounds())
	}
}

// compare --lab --repeat with --plot: the rows carry their runs and the
// SVG names them.
func TestLabCompareRepeatPlot(t *testing.T) {
	labtest.RequireRoot(t)
	file := filepath.Join(t.TempDir(), "cmp.svg")
	code, out, errOut := runArgs(t, "blast", "compare", "--lab", "-t", "0.3", "--repeat", "2", "--plot", file, "-J")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rows []struct {
		Case    string `json:"case"`
		Skipped string `json:"skipped"`
		Error   string `json:"error"`
		Repeat  *struct {
			Runs int `json:"runs"`
		} `json:"repeat"`
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(strings.NewReader(string(b)))
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("the SVG does not parse: %v", err)
		}
	}
	for _, r := range rows {
		if r.Skipped != "" || r.Error != "" {
			continue
		}
		if r.Repeat == nil || r.Repeat.Runs != 2 {
			t.Errorf("%s: repeat %+v, want 2 runs", r.Case, r.Repeat)
		}
		if !strings.Contains(string(b), strings.ReplaceAll(r.Case, ">", "&gt;")) {
			t.Errorf("the plot does not name %s", r.Case)
		}
	}
}

func mustAtoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
