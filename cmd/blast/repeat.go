package main

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/blastnet/blast/plot"
	"github.com/blastnet/blast/stats"
)

// repeatFlags are the flags that run a measurement several times and
// report the spread (--repeat, --confidence, --max-runs), and --plot.
type repeatFlags struct {
	fs         *pflag.FlagSet
	repeat     int
	confidence string
	maxRuns    int
	plot       string
	csv        bool // --csv, where the command registers it
}

// addRepeatFlags registers them on fs; what names the measured figure.
func addRepeatFlags(fs *pflag.FlagSet, r *repeatFlags, what string) {
	r.fs = fs
	fs.IntVar(&r.repeat, "repeat", 0, "run `N` times and report the mean, spread and 95% confidence interval of the "+what)
	fs.StringVar(&r.confidence, "confidence", "", "`LEVEL,WIDTH`: run until the LEVEL% confidence interval of the mean "+what+" is within ±WIDTH/2 percent (netperf's -I), at least 3 and at most --max-runs times")
	fs.IntVar(&r.maxRuns, "max-runs", 0, "with --confidence, stop after `N` runs (default 10)")
	fs.StringVar(&r.plot, "plot", "", "draw the result into `FILE` (.svg or .png)")
}

// plan is the repetition the flags ask for, validated.
func (r *repeatFlags) plan() (stats.Plan, error) {
	p := stats.Plan{Repeat: r.repeat, MaxRuns: r.maxRuns}
	if r.fs != nil && r.fs.Changed("repeat") && r.repeat == 0 {
		return p, fmt.Errorf("--repeat 0: the count is from 1 to %d", stats.MaxRepeat)
	}
	if r.confidence != "" {
		level, width, err := stats.ParseConfidence(r.confidence)
		if err != nil {
			return p, err
		}
		p.Level, p.Width = level, width
	}
	if err := p.Validate(); err != nil {
		return p, err
	}
	if r.plot != "" {
		if err := plot.CheckPath(r.plot); err != nil {
			if errors.Is(err, plot.ErrFormat) {
				return p, fmt.Errorf("--plot %s: the file name must end in .svg or .png", r.plot)
			}
			return p, fmt.Errorf("--plot %s: %w", r.plot, err)
		}
	}
	return p, nil
}
