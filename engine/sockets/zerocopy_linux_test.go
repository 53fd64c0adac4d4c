package sockets_test

import (
	"testing"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/engine/enginetest"
)

func TestZeroCopyConformance(t *testing.T) {
	enginetest.Run(t, backend(t, "zerocopy", engine.Options{}), enginetest.Caps{TCPSend: true, UDPSend: true, Source: true})
}

// TestZeroCopyCompletions checks that every send is accounted for by a
// completion once a clean send ends: zero-copy or copied, none pending.
func TestZeroCopyCompletions(t *testing.T) {
	b := backend(t, "zerocopy", engine.Options{})
	if err := b.Probe(); err != nil {
		t.Skip(err)
	}
	for _, bufLen := range []int{1000, 65536, 1 << 20} {
		_, f := sendAndHash(t, b, &engine.Spec{BufLen: bufLen, Bytes: 64 << 20})
		s := f.Stats.Snapshot()
		facts, _ := engine.FlowFacts(f)
		c := facts.Counts
		if got := c[engine.FactZeroCopySends] + c[engine.FactCopiedSends]; got != s.DataCalls() {
			t.Errorf("buflen %d: %d sends, %d completions (%v)", bufLen, s.DataCalls(), got, facts.Lines())
		}
		if c[engine.FactPending] != 0 || c["zerocopy_unknown_completions"] != 0 {
			t.Errorf("buflen %d: facts %v", bufLen, facts.Lines())
		}
		t.Logf("buflen %d: %v", bufLen, facts.Lines())
	}
}
