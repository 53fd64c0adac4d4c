package agent

import (
	"math"
	"sync"
	"time"
)

// budget is an agent's allowance of test-seconds a minute
// (--max-test-seconds): a token bucket that holds at most a minute's
// worth and fills at a sixtieth of it a second. A test takes the seconds
// it asks for when it is admitted. It bounds the load a mesh can make an
// agent put on the network over time, where MaxTests bounds it at once.
type budget struct {
	mu        sync.Mutex
	perMinute float64
	have      float64
	at        time.Time
}

// newBudget is a full budget of perMinute test-seconds a minute; nil (no
// budget) when perMinute is 0.
func newBudget(perMinute int, now time.Time) *budget {
	if perMinute <= 0 {
		return nil
	}
	return &budget{perMinute: float64(perMinute), have: float64(perMinute), at: now}
}

// take takes secs from the budget at now. When it holds too little, it
// takes nothing and says how long until it will hold enough; never is
// true when secs is more than it ever holds.
func (b *budget) take(secs float64, now time.Time) (wait time.Duration, never bool) {
	if b == nil {
		return 0, false
	}
	if secs > b.perMinute {
		return 0, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if d := now.Sub(b.at); d > 0 {
		b.have = min(b.perMinute, b.have+d.Seconds()*b.perMinute/60)
		b.at = now
	}
	if b.have >= secs {
		b.have -= secs
		return 0, false
	}
	short := (secs - b.have) * 60 / b.perMinute
	return time.Duration(math.Ceil(short * float64(time.Second))), false
}

// give returns secs a test took but did not run (the agent could not
// start it).
func (b *budget) give(secs float64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.have = min(b.perMinute, b.have+secs)
	b.mu.Unlock()
}
