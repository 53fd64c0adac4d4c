package timingcheck

import (
	"strings"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{9, 9, 1, 9, 1}, 9},
	} {
		if got := Median(tc.in); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestHostLoad(t *testing.T) {
	// 1000 jiffies passed: 400 idle, 50 stolen, 550 busy of which 300
	// were the test's own (its process and interrupts).
	before := hostState{total: 10000, idle: 4000, steal: 100, own: 700, load1: "0.50"}
	after := hostState{total: 11000, idle: 4400, steal: 150, own: 1000, load1: "1.50"}
	h := after.since(before)
	if !h.ok || h.others != 0.25 || h.steal != 0.05 {
		t.Fatalf("since = %+v, want others 0.25, steal 0.05", h)
	}
	if h.busy() {
		t.Error("at the limits, the host counts as busy")
	}
	after.steal, after.idle = 160, 4390
	if h := after.since(before); !h.busy() {
		t.Errorf("steal %.3f: not busy", h.steal)
	}
	if s := h.String(); !strings.Contains(s, "other processes 25% of the CPU time, steal 5.0%") || !strings.Contains(s, "load average 1.50") {
		t.Errorf("String() = %q", s)
	}
	if h := before.since(before); h.ok || h.busy() {
		t.Errorf("no time passed: %+v, want unknown (and so not busy: a miss fails)", h)
	}
	if h := readHost(); h.total == 0 || h.own == 0 {
		t.Errorf("readHost() = %+v: /proc/stat or /proc/self/stat not read", h)
	}
}
