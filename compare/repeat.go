package compare

import (
	"context"
	"errors"

	"github.com/blastnet/blast/stats"
)

// errRowEnded stops a row's repetition when a run of it was skipped or
// failed: the row shows that run.
var errRowEnded = errors.New("compare: the row did not run")

// repeated runs one row as cfg.Plan asks: once, or until the plan is met.
// The row it returns is the last run's, with the throughput replaced by
// the mean of the runs and the runs in Repeat.
func repeated(ctx context.Context, cfg Config, n, of int, name string, one func() (Row, error)) (Row, error) {
	if cfg.Progress != nil {
		cfg.Progress(n, of, name)
	}
	if cfg.Plan.IsZero() {
		return one()
	}
	var last Row
	var hard error
	res, err := stats.Run(ctx, cfg.Plan, func(int) (float64, error) {
		row, err := one()
		last = row
		switch {
		case err != nil:
			hard = err
			return 0, err
		case row.Skipped != "" || row.Error != "":
			return 0, errRowEnded
		}
		return row.BitsPerSec, nil
	})
	if hard != nil {
		return last, hard
	}
	if errors.Is(err, errRowEnded) || res.Runs == 0 {
		return last, nil
	}
	if err != nil {
		return last, err // interrupted
	}
	last.BitsPerSec = res.Summary.Mean
	last.Repeat = &res
	return last, nil
}

// NotDifferent lists, for each row, the other rows whose confidence
// intervals overlap its own: their difference is within the noise. Rows
// without repeats have none.
func NotDifferent(rows []Row) [][]int {
	out := make([][]int, len(rows))
	for i, a := range rows {
		if a.Repeat == nil || !a.Repeat.Summary.HasInterval() {
			continue
		}
		for j, b := range rows {
			if i != j && b.Repeat != nil && stats.Overlap(a.Repeat.Summary, b.Repeat.Summary) {
				out[i] = append(out[i], j)
			}
		}
	}
	return out
}
