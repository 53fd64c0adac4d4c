package agent

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestBudgetBucket: a budget of 120 test-seconds a minute holds 120 and
// fills at 2 a second; what it cannot give now it says when it can.
func TestBudgetBucket(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	b := newBudget(120, t0)
	for _, step := range []struct {
		at    time.Duration
		secs  float64
		wait  time.Duration
		never bool
	}{
		{0, 100, 0, false},              // 20 left
		{0, 30, 5 * time.Second, false}, // 10 short: 5 s at 2 a second
		{5 * time.Second, 30, 0, false}, // 30 then: 0 left
		{5 * time.Second, 121, 0, true}, // more than it ever holds
		{time.Hour, 120, 0, false},      // full again, no more than full
		{time.Hour, 0.5, 250 * time.Millisecond, false},
	} {
		wait, never := b.take(step.secs, t0.Add(step.at))
		if wait != step.wait || never != step.never {
			t.Errorf("at %v, %g s: wait %v, never %v; want %v, %v", step.at, step.secs, wait, never, step.wait, step.never)
		}
	}
	b.give(10)
	if wait, _ := b.take(10, t0.Add(time.Hour)); wait != 0 {
		t.Errorf("10 s given back, then taken: wait %v", wait)
	}
	if wait, never := (*budget)(nil).take(3600, t0); wait != 0 || never {
		t.Errorf("no budget: wait %v, never %v", wait, never)
	}
}

// TestBudget: an agent with --max-test-seconds 2 runs two 1 s tests, then
// answers 429 with when the next can start (30 s: one test-second at 2 a
// minute), runs it then, and refuses a test longer than its budget.
func TestBudget(t *testing.T) {
	clk := fakeNow()
	a, c := start(t, func(cfg *Config) {
		cfg.Clock = clk
		cfg.MaxTestSeconds = 2
	})
	ctx := context.Background()
	req := TestRequest{Host: "127.0.0.1", Port: dataPort(a), Seconds: 1, Streams: 1}
	for i := range 2 {
		if r, err := c.Test(ctx, req); err != nil || r.Err != "" {
			t.Fatalf("test %d within the budget: %+v, %v", i+1, r, err)
		}
	}
	_, err := c.Test(ctx, req)
	if want := "the agent's budget of 2 test-seconds a minute is spent: a test of 1 s can start in 30 s"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("third test: %v, want %q", err, want)
	}
	clk.Advance(30 * time.Second)
	if r, err := c.Test(ctx, req); err != nil || r.Err != "" {
		t.Fatalf("third test 30 s later: %+v, %v", r, err)
	}
	long := req
	long.Seconds = 3
	clk.Advance(time.Minute)
	if _, err := c.Test(ctx, long); err == nil || !strings.Contains(err.Error(), "a test of 3 s is more than the agent's budget of 2 test-seconds a minute (its --max-test-seconds)") {
		t.Errorf("a 3 s test: %v, want the refusal naming --max-test-seconds", err)
	}
}
