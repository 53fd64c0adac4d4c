//go:build timing

package main

import (
	"testing"
	"time"

	"github.com/blastnet/blast/internal/timingcheck"
)

// TestTimingFaultKilled: how soon the other end sees a process killed
// mid-test (TestFaultKilled checks what it does then). A server sees its
// client gone, and gives its slot back, within 1 s of the kill; a client
// ends within 2 s of its server's. The figure is the time from the kill
// to the server's result, or to the client's end.
func TestTimingFaultKilled(t *testing.T) {
	bin := serverBinary(t)
	for _, tc := range []struct {
		name    string
		reverse bool
		server  bool
		bound   time.Duration
	}{
		{"client killed, client sends", false, false, time.Second},
		{"client killed, client -R", true, false, time.Second},
		{"server killed, client sends", false, true, 2 * time.Second},
		{"server killed, client -R", true, true, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			what := "the server's result for its killed client"
			if tc.server {
				what = "the client's end after its server was killed"
			}
			timingcheck.Check(t, timingcheck.Property{
				Name:  what + " (" + tc.name + ")",
				Runs:  3,
				Unit:  "ms after the kill",
				Bound: "at most " + tc.bound.String(),
				Holds: func(m float64) bool { return m <= float64(tc.bound.Milliseconds()) },
				Measure: func(t *testing.T, run int) (float64, error) {
					var took time.Duration
					if tc.server {
						took = faultServerKilled(t, bin, tc.reverse)
					} else {
						took = faultClientKilled(t, bin, tc.reverse)
					}
					return float64(took) / float64(time.Millisecond), nil
				},
			})
		})
	}
}
