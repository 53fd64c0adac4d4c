package main

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/internal/blasttest"
	"github.com/blastnet/blast/internal/netlab"
	"github.com/blastnet/blast/internal/netlab/labtest"
	"github.com/blastnet/blast/internal/testkit"
	"github.com/blastnet/blast/plot"
)

func TestMain(m *testing.M) { blasttest.Main(m, true) }

// repeatDoc is the -J document of a repeated client run.
type repeatDoc struct {
	Runs   []json.RawMessage `json:"runs"`
	Repeat struct {
		Runs    int  `json:"runs"`
		Met     bool `json:"met"`
		Summary struct {
			N    int     `json:"n"`
			Mean float64 `json:"mean"`
		} `json:"summary"`
	} `json:"repeat"`
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

// --confidence stops as soon as the interval is narrow on a steady path
// (a sender held to 20 Mbit/s), and runs to --max-runs on one made noisy
// (a delay line that loses 3% of the frames: TCP's rate swings).
func TestLabConfidence(t *testing.T) {
	for _, tc := range []struct {
		name string
		topo netlab.Topology
		opt  netlab.Options
		args []string
		runs int
		met  bool
	}{
		{"steady", netlab.Direct, netlab.Options{}, []string{"-b", "20M", "--confidence", "95,5"}, 3, true},
		{"noisy", netlab.Delayed, netlab.Options{Delay: 4 * time.Millisecond, LossPct: 3, Seed: 1}, []string{"--confidence", "99,1", "--max-runs", "4"}, 4, false},
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
			if doc.Repeat.Runs != tc.runs || len(doc.Runs) != tc.runs || doc.Repeat.Met != tc.met || doc.Repeat.Summary.N != tc.runs {
				t.Errorf("runs %d (%d documents), met %v, n %d: want %d, %v", doc.Repeat.Runs, len(doc.Runs), doc.Repeat.Met, doc.Repeat.Summary.N, tc.runs, tc.met)
			}
			// The receiver's rate over 1 s runs of a sender paced to
			// 20 Mbit/s (its first buffer leaves at once).
			if tc.met && (doc.Repeat.Summary.Mean < 18e6 || doc.Repeat.Summary.Mean > 22e6) {
				t.Errorf("mean %.0f bit/s, want the paced 20 Mbit/s within 10%%", doc.Repeat.Summary.Mean)
			}
		})
	}
}

// --repeat N in text: each run's report, then one summary line; --plot
// draws the last run.
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
