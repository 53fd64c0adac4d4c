package render

import (
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
)

// The -V "Threads:" line sums one side's streams: how they ran, their CPU
// over their wall time, and their switches per 10 ms of it.
func TestWriteThreads(t *testing.T) {
	sec := int64(time.Second)
	th := func(free bool, cpu, vol, invol int64) *wire.ThreadTimes {
		return &wire.ThreadTimes{WallNs: sec, CPUNs: cpu, Free: free, VolSwitches: vol, InvolSwitches: invol}
	}
	for _, c := range []struct {
		name    string
		threads []*wire.ThreadTimes
		want    string
	}{
		{"free", []*wire.ThreadTimes{th(true, sec*4/10, 100, 10), th(true, sec*6/10, 100, 10)},
			"Threads: local 2 free flow(s) (unlocked goroutines in raw calls), CPU 50% of a core each on average, 1.0 voluntary and 0.1 involuntary context switches per 10 ms\n"},
		{"locked", []*wire.ThreadTimes{th(false, sec, 300, 0)},
			"Threads: local 1 locked thread(s), CPU 100% of a core each on average, 3.0 voluntary and 0.0 involuntary context switches per 10 ms\n"},
		{"mixed", []*wire.ThreadTimes{th(true, 0, 0, 0), th(false, 0, 0, 0), nil},
			"Threads: local 1 free flow(s) and 1 locked thread(s), CPU 0% of a core each on average, 0.0 voluntary and 0.0 involuntary context switches per 10 ms\n"},
		{"unmeasured", []*wire.ThreadTimes{nil, {}}, ""},
	} {
		r := &result.Result{}
		for _, tt := range c.threads {
			r.Streams = append(r.Streams, &result.StreamResult{Thread: tt})
		}
		var b strings.Builder
		writeThreads(&b, "local", r, func(sr *result.StreamResult) *wire.ThreadTimes { return sr.Thread })
		if b.String() != c.want {
			t.Errorf("%s: got %q, want %q", c.name, b.String(), c.want)
		}
	}
}
