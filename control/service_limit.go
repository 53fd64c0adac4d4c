package control

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/units"
)

// RateLimit is iperf3's --server-bitrate-limit RATE[/SECS]: a test that
// asks for more (-b or --fq-rate, times -P, twice with --bidir) is
// refused, and a test whose bytes, both ways, average more over the last
// Window (checked each second, once it has run that long) is ended; both
// with iperf3's IETOTALRATE. A blast server applies the limit to all its
// tests together too: it refuses a test whose asked-for rate would take
// the running tests' sum over it, and when the bytes of all tests
// together average more, it ends the newest tests until the rest fit.
type RateLimit struct {
	Bits   float64       // bits per second (0: no limit)
	Window time.Duration // the average's period (5 s)
}

// DefaultRateWindow is iperf3's bitrate_limit_interval.
const DefaultRateWindow = 5 * time.Second

// meterTick is how often the limit is checked (iperf3: each stats
// interval, 1 s).
const meterTick = time.Second

// ParseRateLimit reads RATE[/SECS]: a rate in bits per second with an
// optional k, m, g or t (powers of 1000), then optionally the seconds to
// average over (0.1 to 60).
func ParseRateLimit(s string) (RateLimit, error) {
	bad := func() (RateLimit, error) {
		return RateLimit{}, fmt.Errorf("--server-bitrate-limit %q: want a rate such as 100M or 1G, optionally /SECS to average it over (0.1 to 60 s; 5 by default)", s)
	}
	rate, window, slash := strings.Cut(s, "/")
	if rate == "" {
		return bad()
	}
	bits, _, err := units.ParseRate(rate)
	if err != nil {
		return bad()
	}
	l := RateLimit{Bits: bits, Window: DefaultRateWindow}
	if slash {
		secs, err := strconv.ParseFloat(window, 64)
		if err != nil || math.IsNaN(secs) || secs < 0.1 || secs > 60 {
			return bad()
		}
		l.Window = time.Duration(secs * float64(time.Second))
	}
	return l, nil
}

func (l RateLimit) validate() error {
	switch {
	case l.Bits < 0 || l.Bits > units.MaxRate || math.IsNaN(l.Bits):
		return fmt.Errorf("--server-bitrate-limit %g: must be 0 (none) to 10T bits/s", l.Bits)
	case l.Bits > 0 && l.Window != 0 && (l.Window < 100*time.Millisecond || l.Window > time.Minute):
		return fmt.Errorf("--server-bitrate-limit .../%g: the period must be 0.1 to 60 s", l.Window.Seconds())
	}
	return nil
}

// slots is how many checks the average spans (iperf3's
// bitrate_limit_stats_per_interval).
func (l RateLimit) slots() int {
	return max(1, int(math.Round(float64(l.Window)/float64(meterTick))))
}

func bitsPerSec(bits float64) string { return units.IperfBits(bits/8) + "s/sec" }

// testAbort is the server ending a running test: iperf3's error number to
// send with SERVER_ERROR, and why.
type testAbort struct {
	code int32
	err  error
}

// rateMeter enforces a RateLimit on the tests of one server.
type rateMeter struct {
	limit RateLimit
	slots int
	trace func(*result.Result, string)

	mu    sync.Mutex
	tests []*meteredTest // in the order they were admitted
}

// meteredTest is one test under the limit.
type meteredTest struct {
	res    *result.Result
	asked  float64      // bits/s the parameters ask for
	bytes  func() int64 // both directions so far; nil until it runs
	last   int64
	ring   []int64 // bytes of the last slots checks
	checks int
	ended  bool
	abort  chan testAbort // one message, when the meter ends the test
}

func newRateMeter(l RateLimit, trace func(*result.Result, string)) *rateMeter {
	if l.Window == 0 {
		l.Window = DefaultRateWindow
	}
	return &rateMeter{limit: l, slots: l.slots(), trace: trace}
}

// asked is the rate a test's parameters ask for in total, as iperf3
// counts it: -b (or --fq-rate, whichever is more) for each stream.
func asked(p *wire.Params) float64 {
	n := float64(p.Parallel)
	if p.Bidirectional {
		n *= 2
	}
	return n * float64(max(p.Bandwidth, p.FQRate))
}

// admit registers a test, or refuses it when its asked-for rate is over
// the limit alone or with the tests admitted before it.
func (m *rateMeter) admit(res *result.Result, p *wire.Params) (*meteredTest, error) {
	want := asked(p)
	m.mu.Lock()
	defer m.mu.Unlock()
	if want > m.limit.Bits {
		return nil, fmt.Errorf("the client asked for %s in total (-b or --fq-rate, times its streams), over --server-bitrate-limit %s",
			bitsPerSec(want), bitsPerSec(m.limit.Bits))
	}
	var others float64
	for _, t := range m.tests {
		others += t.asked
	}
	if others+want > m.limit.Bits {
		return nil, fmt.Errorf("the client asked for %s, and the tests running asked for %s: together over --server-bitrate-limit %s",
			bitsPerSec(want), bitsPerSec(others), bitsPerSec(m.limit.Bits))
	}
	t := &meteredTest{res: res, asked: want, ring: make([]int64, m.slots), abort: make(chan testAbort, 1)}
	m.tests = append(m.tests, t)
	return t, nil
}

// running starts counting a test's bytes.
func (m *rateMeter) running(t *meteredTest, bytes func() int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t.bytes, t.last = bytes, bytes()
}

// remove forgets a test that ended.
func (m *rateMeter) remove(t *meteredTest) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, x := range m.tests {
		if x == t {
			m.tests = append(m.tests[:i:i], m.tests[i+1:]...)
			return
		}
	}
}

// run checks the limit every tick until done is closed.
func (m *rateMeter) run(done <-chan struct{}, tick time.Duration) {
	tk := time.NewTicker(tick)
	defer tk.Stop()
	for {
		select {
		case <-done:
			return
		case <-tk.C:
			m.check()
		}
	}
}

// check takes one more sample of each running test: a test whose last
// slots samples average over the limit ends, and while all tests together
// do, the newest ends.
func (m *rateMeter) check() {
	m.mu.Lock()
	defer m.mu.Unlock()
	secs := float64(m.slots) * meterTick.Seconds()
	rate := func(bytes int64) float64 { return float64(bytes) * 8 / secs }
	var total int64
	for _, t := range m.tests {
		if t.bytes == nil || t.ended {
			continue
		}
		cur := t.bytes()
		t.ring[t.checks%m.slots] = cur - t.last
		t.last = cur
		t.checks++
		sum := t.sum()
		if t.checks < m.slots {
			total += sum
			continue
		}
		if m.trace != nil {
			m.trace(t.res, fmt.Sprintf("Interval %d - throughput %.0f bps (limit %.0f)", t.checks, rate(sum), m.limit.Bits))
		}
		if rate(sum) > m.limit.Bits {
			t.end(fmt.Errorf("the test averaged %s over the last %g s, over --server-bitrate-limit %s",
				bitsPerSec(rate(sum)), secs, bitsPerSec(m.limit.Bits)))
			continue
		}
		total += sum
	}
	for i := len(m.tests) - 1; i >= 0 && rate(total) > m.limit.Bits; i-- {
		t := m.tests[i]
		if t.bytes == nil || t.ended {
			continue
		}
		t.end(fmt.Errorf("the server's tests together averaged %s over the last %g s, over --server-bitrate-limit %s: the newest ends",
			bitsPerSec(rate(total)), secs, bitsPerSec(m.limit.Bits)))
		total -= t.sum()
	}
}

func (t *meteredTest) sum() int64 {
	var s int64
	for _, b := range t.ring {
		s += b
	}
	return s
}

func (t *meteredTest) end(err error) {
	t.ended = true
	t.abort <- testAbort{wire.IETotalRate, err}
}
