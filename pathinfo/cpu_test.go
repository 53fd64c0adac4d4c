package pathinfo

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const stat = `cpu  1000 0 500 8000 0 0 500 0 0 0
cpu0 400 0 200 4300 50 0 50 0 0 0
cpu1 600 0 300 3550 0 0 450 100 0 0
intr 12345 0 0
ctxt 987
`

func TestParseStat(t *testing.T) {
	got, err := ParseStat(strings.NewReader(stat))
	if err != nil {
		t.Fatal(err)
	}
	want := []CPUTime{{Total: 5000, Softirq: 50, Idle: 4350}, {Total: 5000, Softirq: 450, Idle: 3550, Steal: 100}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// cpu1 spends 900 of the next 1000 ticks in softirq; cpu0 none.
	after := []CPUTime{{Total: 6000, Softirq: 50}, {Total: 6000, Softirq: 1350}}
	if diff := cmp.Diff([]float64{0, 90}, softirqShares(got, after)); diff != "" {
		t.Errorf("shares (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"cpu1 1 2 3 4 5 6 7\n", "cpu0 1 2 3\n", "cpu0 1 2 3 4 5 6 x\n"} {
		if _, err := ParseStat(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if softirqShares(got, after[:1]) != nil {
		t.Error("shares of samples with different CPU counts")
	}
	// The next 2000 ticks of the host: cpu0 idle 500 of them, cpu1 had
	// 300 stolen and no idle.
	later := []CPUTime{{Total: 6000, Softirq: 50, Idle: 4850}, {Total: 6000, Softirq: 450, Idle: 3550, Steal: 400}}
	if diff := cmp.Diff(&HostCPU{CPUs: 2, IdlePct: 25, StealPct: 15}, hostShares(got, later)); diff != "" {
		t.Errorf("host shares (-want +got):\n%s", diff)
	}
	if hostShares(got, later[:1]) != nil || hostShares(got, got) != nil || hostShares(later, got) != nil {
		t.Error("host shares of samples with different CPU counts, no time between or going backwards")
	}
}

func FuzzStat(f *testing.F) {
	f.Add(stat)
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseStat(strings.NewReader(s))
		if err == nil {
			for _, c := range cpus {
				if c.Softirq > c.Total || c.Idle > c.Total || c.Steal > c.Total {
					t.Fatalf("softirq %d over total %d", c.Softirq, c.Total)
				}
			}
		}
	})
}
