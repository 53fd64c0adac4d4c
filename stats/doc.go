// Package stats settles a noisy number: it repeats a measurement as
// --repeat and --confidence ask (netperf's -I and -i) and summarizes the
// values with their mean, spread and the confidence interval of the mean.
//
// It does no I/O and knows no units. Run calls the caller's measure
// function, one run after another, and stops on the plan: a fixed count,
// or once the Student's t interval of the mean at the chosen level is
// within ±Width/2 percent of the mean (never before MinRuns, never after
// MaxRuns). Summary and Result are what every renderer reads; they carry
// JSON tags and, for finite values of at least 0 (all Run accepts), only
// finite numbers, so encoding/json never fails on them.
//
// Errors about the plan are written for the user of the flags: one line
// that names the flag, the cause and the fix.
package stats
