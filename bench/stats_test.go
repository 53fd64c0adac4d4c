package bench

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestSummarize(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		in   []float64
		want Summary
	}{
		{"empty", nil, Summary{}},
		{"only NaN", []float64{nan, nan}, Summary{}},
		{"five pairs", []float64{1.2, 0.9, 1.1, 1.5, 1.0}, Summary{Median: 1.1, Min: 0.9, Max: 1.5, N: 5}},
		{"a failed pair is left out", []float64{2, nan, 4, 3}, Summary{Median: 3, Min: 2, Max: 4, N: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Summarize(tc.in)); diff != "" {
				t.Errorf("Summarize(%v) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestPairRatios(t *testing.T) {
	got := PairRatios([]float64{10, 6, 3, 9}, []float64{5, 4, 0, math.NaN()})
	want := []float64{2, 1.5, math.NaN(), math.NaN()} // a peer that moved nothing has no ratio
	if diff := cmp.Diff(want, got, cmpopts.EquateNaNs()); diff != "" {
		t.Errorf("PairRatios (-want +got):\n%s", diff)
	}
	if got := len(PairRatios([]float64{1, 2, 3}, []float64{1})); got != 1 {
		t.Errorf("PairRatios of unequal lengths gave %d ratios, want 1", got)
	}
}

func TestCPUPerGB(t *testing.T) {
	if got := CPUPerGB(0.5, 2_000_000_000); got != 0.25 {
		t.Errorf("CPUPerGB(0.5 s, 2 GB) = %v, want 0.25", got)
	}
	if got := CPUPerGB(1, 0); !math.IsNaN(got) {
		t.Errorf("CPUPerGB(1 s, 0 bytes) = %v, want NaN", got)
	}
}

func TestNumJSON(t *testing.T) {
	for _, tc := range []struct {
		in   Num
		want string
	}{{1.5, "1.5"}, {Num(math.NaN()), "null"}, {Num(math.Inf(1)), "null"}} {
		b, err := tc.in.MarshalJSON()
		if err != nil || string(b) != tc.want {
			t.Errorf("Num(%v).MarshalJSON() = %s, %v; want %s", float64(tc.in), b, err, tc.want)
		}
	}
}
