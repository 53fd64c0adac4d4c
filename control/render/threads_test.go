package render

import (
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/engine"
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

// The -V "Pauses:" line, and nothing for a side that sent none.
func TestWritePauses(t *testing.T) {
	var b strings.Builder
	writePauses(&b, "local", &engine.Pauses{Count: 12, Total: 1230 * time.Microsecond, P99: 256 * time.Microsecond, Max: 512 * time.Microsecond})
	writePauses(&b, "remote", nil)
	want := "Pauses: local 12 stop-the-world pauses, 1.23 ms in all, p99 at most 0.26 ms, the longest at most 0.51 ms\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

// -J carries each stream's thread (here and at the peer) and each side's
// pauses under end.blast.
func TestJSONThreadsAndPauses(t *testing.T) {
	th := &wire.ThreadTimes{WallNs: 1e9, CPUNs: 4e8, Free: true, VolSwitches: 7, InvolSwitches: 2}
	r := clientP1()
	r.Streams[0].Thread, r.Streams[0].PeerThread = th, th
	r.CPU.Pauses = &engine.Pauses{Count: 3, Total: time.Millisecond, P99: time.Millisecond, Max: time.Millisecond}
	r.RemoteCPU.Pauses = &engine.Pauses{Count: 1}
	b, err := JSONBytes(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"thread": {`, `"peer_thread": {`, `"free": true`, `"voluntary_switches": 7`, `"involuntary_switches": 2`,
		`"stw_pauses": {`, `"count": 3`, `"max_ns": 1000000`, `"remote_stw_pauses": {`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("-J has no %s:\n%s", want, b)
		}
	}
}
