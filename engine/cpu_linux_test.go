package engine

import (
	"runtime"
	"testing"
	"time"
)

func TestParseSchedstat(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
	}{
		{"977996 235035 15\n", 235035},
		{"977996 0 15", 0},
		{"977996", 0},
		{"", 0},
		{"1 x 2", 0},
		{"1 -5 2", 0},
	} {
		if got := parseSchedstat([]byte(c.in)); got != c.want {
			t.Errorf("parseSchedstat(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

// A thread's run delay is there to read and never goes backwards.
func TestThreadRunWait(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	a := ThreadRunWait()
	for range 1000 {
		runtime.Gosched()
	}
	if b := ThreadRunWait(); b < a {
		t.Errorf("run delay went from %v to %v", a, b)
	}
}

func FuzzSchedstat(f *testing.F) {
	f.Add("977996 235035 15\n")
	f.Add("1 2")
	f.Fuzz(func(t *testing.T, s string) {
		if d := parseSchedstat([]byte(s)); d < 0 {
			t.Fatalf("parseSchedstat(%q) = %v: a negative wait", s, d)
		}
	})
}
