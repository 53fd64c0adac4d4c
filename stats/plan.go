package stats

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// Defaults with --confidence, as netperf's -i 10,3.
const (
	DefaultMinRuns = 3
	DefaultMaxRuns = 10
	// DefaultWidth is the width of the interval, in percent of the mean,
	// when --confidence gives only a level (netperf's -I default): ±2.5%.
	DefaultWidth = 5.0
)

// Bounds on the counts a plan may ask for.
const (
	MaxRepeat  = 1000
	MaxMaxRuns = 1000
	minLevel   = 0.5
	maxLevel   = 0.999
)

// Plan is what the flags ask. The zero Plan is one run, as without any of
// them.
type Plan struct {
	// Repeat is --repeat: run exactly this many times. 0 is unset.
	Repeat int `json:"repeat,omitempty"`
	// Level and Width are --confidence LEVEL,WIDTH: run until the
	// interval of the mean at Level (a fraction: 0.95) is at most Width
	// percent of the mean wide, that is within ±Width/2 percent. Level 0
	// is unset.
	Level float64 `json:"level,omitempty"`
	Width float64 `json:"width_pct,omitempty"`
	// MinRuns and MaxRuns bound a --confidence run (netperf's -i
	// max,min); MaxRuns is --max-runs. 0 is the default: DefaultMinRuns,
	// DefaultMaxRuns. They are an error without a confidence.
	MinRuns int `json:"min_runs,omitempty"`
	MaxRuns int `json:"max_runs,omitempty"`
	// Follow is for an end that does not decide when a confidence run
	// stops, because its peer does (ttcp's listening end): Run goes on
	// when the interval is narrow enough, until measure returns ErrDone
	// or MaxRuns have run; Met still says whether the interval came
	// within Width. Follow changes nothing without a confidence.
	Follow bool `json:"follow,omitempty"`
}

// ErrDone is what a measure function returns (or wraps) when there is
// nothing more to measure: the peer has stopped. Run then ends without
// an error, with the runs before it; Met says whether they meet the plan
// (for a count, only if every run ran).
var ErrDone = errors.New("stats: no more runs")

// IsZero reports whether p asks for nothing: one run, reported as it
// always was, without a summary.
func (p Plan) IsZero() bool { return p == Plan{} }

// withDefaults fills MinRuns and MaxRuns of a confidence plan.
func (p Plan) withDefaults() Plan {
	if p.Level != 0 || p.Width != 0 {
		if p.MinRuns == 0 {
			p.MinRuns = DefaultMinRuns
		}
		if p.MaxRuns == 0 {
			p.MaxRuns = DefaultMaxRuns
		}
	}
	return p
}

// ParseConfidence reads the value of --confidence: LEVEL,WIDTH in percent,
// such as "95,5" (95% confidence that the mean is within ±2.5%), or LEVEL
// alone with DefaultWidth. It returns the level as a fraction (0.95) and
// the width in percent (5). LEVEL is from 50 to 99.9, WIDTH above 0 and
// at most 100.
func ParseConfidence(s string) (level, width float64, err error) {
	bad := func(why string) error { return fmt.Errorf("--confidence %s: %s", quote(s), why) }
	const format = "want LEVEL,WIDTH in percent, e.g. 95,5 for 95% confidence that the mean is within ±2.5%"
	ls, ws, hasWidth := strings.Cut(s, ",")
	l, err := strconv.ParseFloat(strings.TrimSpace(ls), 64)
	if err != nil {
		return 0, 0, bad(format)
	}
	w := DefaultWidth
	if hasWidth {
		if w, err = strconv.ParseFloat(strings.TrimSpace(ws), 64); err != nil {
			return 0, 0, bad(format)
		}
	}
	// To a millionth, so that 99.9 is 0.999 and not 99.9/100, which is
	// 0.9990000000000001.
	level = math.Round(l*1e4) / 1e6
	if err := checkLevel(level, l); err != nil {
		return 0, 0, bad(err.Error())
	}
	if err := checkWidth(w); err != nil {
		return 0, 0, bad(err.Error())
	}
	return level, w, nil
}

// checkLevel checks a level, a fraction; pct is the level as the user gave
// it, in percent.
func checkLevel(level, pct float64) error {
	if level >= minLevel && level <= maxLevel {
		return nil
	}
	if pct > 0 && pct < 1 {
		return fmt.Errorf("the level is a percent from 50 to 99.9 (write %s, not %s)",
			strconv.FormatFloat(pct*100, 'g', 4, 64), strconv.FormatFloat(pct, 'g', -1, 64))
	}
	return errors.New("the level is a percent from 50 to 99.9")
}

// checkWidth checks a width given in percent.
func checkWidth(pct float64) error {
	if pct > 0 && pct <= 100 {
		return nil
	}
	return errors.New("the width is a percent above 0 and at most 100, e.g. 5 for ±2.5%")
}

// quote echoes a flag's value as typed, or quoted when it is empty or
// holds spaces or characters that would not print on one line.
func quote(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsGraphic(r) || unicode.IsSpace(r) }) {
		return strconv.Quote(s)
	}
	return s
}

// Validate checks a plan built from flags, with errors that name the
// flags: --repeat and --confidence together; a count out of bounds
// (--repeat 1 to 1000, --max-runs 2 to 1000); MinRuns or MaxRuns without a
// confidence; MaxRuns below MinRuns.
func (p Plan) Validate() error {
	confidence := p.Level != 0 || p.Width != 0
	if p.Repeat < 0 || p.Repeat > MaxRepeat {
		return fmt.Errorf("--repeat %d: the count is from 1 to %d", p.Repeat, MaxRepeat)
	}
	if p.Repeat > 0 && confidence {
		return errors.New("--repeat and --confidence together: use one (--repeat N runs N times, --confidence runs until the interval is narrow enough)")
	}
	if !confidence {
		switch {
		case p.MaxRuns != 0:
			return fmt.Errorf("--max-runs %d without --confidence: it bounds a --confidence run; add --confidence 95,5 or drop --max-runs", p.MaxRuns)
		case p.MinRuns != 0:
			return fmt.Errorf("a minimum of %d runs without --confidence: it bounds a --confidence run; add --confidence 95,5", p.MinRuns)
		}
		return nil
	}
	value := strconv.FormatFloat(p.Level*100, 'g', 6, 64) + "," + strconv.FormatFloat(p.Width, 'g', 6, 64)
	if err := checkLevel(p.Level, p.Level*100); err != nil {
		return fmt.Errorf("--confidence %s: %w", value, err)
	}
	if err := checkWidth(p.Width); err != nil {
		return fmt.Errorf("--confidence %s: %w", value, err)
	}
	if p.MaxRuns != 0 && (p.MaxRuns < 2 || p.MaxRuns > MaxMaxRuns) {
		return fmt.Errorf("--max-runs %d: the count is from 2 to %d", p.MaxRuns, MaxMaxRuns)
	}
	if p.MinRuns != 0 && (p.MinRuns < 2 || p.MinRuns > MaxMaxRuns) {
		return fmt.Errorf("a minimum of %d runs: the count is from 2 to %d", p.MinRuns, MaxMaxRuns)
	}
	if d := p.withDefaults(); d.MaxRuns < d.MinRuns {
		return fmt.Errorf("--max-runs %d: below the %d runs --confidence makes at least; use --max-runs %d or more", d.MaxRuns, d.MinRuns, d.MinRuns)
	}
	return nil
}

// Result is what Run measured.
type Result struct {
	Values  []float64 `json:"values"`
	Summary Summary   `json:"summary"`
	// Met says the plan was met: the count ran, or the interval came
	// within the width. It is false when MaxRuns ended a confidence run
	// with the interval still too wide, and when an error ended the run.
	Met  bool `json:"met"`
	Runs int  `json:"runs"`
	// Plan is the plan that ran, with the defaults filled in.
	Plan Plan `json:"plan"`
}

// Run calls measure(i) for i = 0, 1, ... until the plan is met: Repeat
// times; or, with a confidence, at least MinRuns times and until the
// interval's HalfWidthPct is at most Width/2, at most MaxRuns times; or,
// for the zero Plan, once. The summary's interval is at the plan's Level,
// or DefaultLevel.
//
// An invalid plan is refused before any run. Cancelling ctx stops Run
// between runs: it returns what ran and ctx.Err(). An error from measure
// stops it too and is returned as it came, with the runs before it,
// except ErrDone, which ends the runs normally (see ErrDone). A
// value that is not finite or is negative stops it with an error (a
// measurement is a rate, a time or a count).
func Run(ctx context.Context, p Plan, measure func(i int) (float64, error)) (Result, error) {
	if err := p.Validate(); err != nil {
		return Result{}, err
	}
	p = p.withDefaults()
	r := Result{Plan: p}
	runs := 1
	switch {
	case p.Repeat > 0:
		runs = p.Repeat
	case p.Level != 0:
		runs = p.MaxRuns
	}
	r.Values = make([]float64, 0, runs)
	done := func(met bool, err error) (Result, error) {
		r.Runs = len(r.Values)
		r.Summary = Summarize(r.Values, p.Level)
		r.Met = met
		return r, err
	}
	for i := range runs {
		if err := ctx.Err(); err != nil {
			return done(false, err)
		}
		v, err := measure(i)
		if errors.Is(err, ErrDone) {
			met := false
			if p.Level != 0 {
				met = len(r.Values) >= p.MinRuns && Summarize(r.Values, p.Level).HalfWidthPct <= p.Width/2
			}
			return done(met, nil)
		}
		if err != nil {
			return done(false, err)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return done(false, fmt.Errorf("stats: run %d measured %v: a measurement is a finite rate, time or count, not negative", i+1, v))
		}
		r.Values = append(r.Values, v)
		if p.Level != 0 && !p.Follow && len(r.Values) >= p.MinRuns {
			if Summarize(r.Values, p.Level).HalfWidthPct <= p.Width/2 {
				return done(true, nil)
			}
		}
	}
	met := p.Level == 0
	if p.Follow && p.Level != 0 {
		met = Summarize(r.Values, p.Level).HalfWidthPct <= p.Width/2
	}
	return done(met, nil)
}

// Note says why a confidence run is not settled, for a line under its
// result; it is empty when the plan was met, when there was no confidence
// to meet, and when an error ended the run (the error says why):
//
//	stopped after 10 runs (--max-runs): the 95% interval is ±3.1%, wider than ±2.5%
func (r Result) Note() string {
	if r.Met || r.Plan.Level == 0 || r.Runs < r.Plan.MaxRuns {
		return ""
	}
	return fmt.Sprintf("stopped after %d runs (--max-runs): the %s interval is ±%s, wider than ±%s",
		r.Runs, LevelPercent(r.Summary.Level), Percent(r.Summary.HalfWidthPct), Percent(r.Plan.Width/2))
}
