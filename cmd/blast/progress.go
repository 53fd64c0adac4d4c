package main

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/blastnet/blast/control"
	"github.com/blastnet/blast/control/result"
)

// progress shows a byte-count or file test on a terminal: a bar with the
// bytes moved, the rate and the time left, on standard error, updated at
// each interval (-i). It shows when the report goes elsewhere (standard
// output redirected): on the terminal the interval lines are the progress.
type progress struct {
	bar *progressbar.ProgressBar
}

// newProgress returns the bar for cfg's test on w, or nil when the test
// has no known size (a -t test), w is no terminal, or out is one.
func newProgress(w, out io.Writer, cfg control.Config) *progress {
	total := cfg.Bytes
	if total == 0 && cfg.File != "" && !cfg.Reverse {
		if st, err := os.Stat(cfg.File); err == nil && st.Mode().IsRegular() {
			total = st.Size()
		}
	}
	if total <= 0 || cfg.Interval <= 0 || !isTerminal(w) || isTerminal(out) {
		return nil
	}
	if cfg.Bidir {
		total *= 2 // -n counts each direction
	}
	bar := progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionShowBytes(true),
		progressbar.OptionSetDescription("blast"),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	bar.RenderBlank() // the clock starts now, not at the first interval
	return &progress{bar: bar}
}

// interval adds the bytes one direction moved in iv (a --bidir test
// counts both directions, against twice the size).
func (p *progress) interval(iv *result.Interval) {
	if p == nil || iv.Omitted {
		return
	}
	var n int64
	for _, s := range iv.Streams {
		n += s.Bytes
	}
	p.bar.Add64(n)
}

// finish takes the bar off the terminal.
func (p *progress) finish() {
	if p != nil {
		p.bar.Finish()
	}
}
