package sockets_test

import (
	"crypto/sha256"
	"testing"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/engine/enginetest"
	"github.com/blastnet/blast/engine/sockets"
)

func TestZeroCopyConformance(t *testing.T) {
	enginetest.Run(t, sockets.ZeroCopy{}, enginetest.Caps{TCPSend: true, UDPSend: true, Source: true, FramingSend: true})
}

// TestZeroCopyCompletions checks that every send is accounted for by a
// completion once a clean send ends (zero-copy or copied, none pending),
// and that the peer got the pattern, buffer after buffer.
func TestZeroCopyCompletions(t *testing.T) {
	b := sockets.ZeroCopy{}
	if err := b.Probe(); err != nil {
		t.Skip(err)
	}
	const total = 64 << 20
	for _, bufLen := range []int{1000, 65536, 1 << 20} {
		spec := &engine.Spec{BufLen: bufLen, Bytes: total}
		got, f := sendAndHash(t, b, spec)
		pattern := engine.Buffer(spec)
		h := sha256.New()
		for n := 0; n < total; n += bufLen {
			h.Write(pattern[:min(bufLen, total-n)])
		}
		if got != [32]byte(h.Sum(nil)) {
			t.Errorf("buflen %d: the peer received other bytes than the pattern", bufLen)
		}
		s := f.Stats.Snapshot()
		facts := f.Facts.Snapshot()
		c := facts.Counts
		// At least one send per buffer, each completed once.
		if done := c[engine.FactZeroCopySends] + c[engine.FactCopiedSends]; done < s.DataCalls() {
			t.Errorf("buflen %d: %d buffers sent, %d completions (%v)", bufLen, s.DataCalls(), done, facts.Lines())
		}
		if c[engine.FactPending] != 0 || c["zerocopy_unknown_completions"] != 0 {
			t.Errorf("buflen %d: facts %v", bufLen, facts.Lines())
		}
		if c[engine.FactSyscalls] < s.Calls {
			t.Errorf("buflen %d: syscalls %d < I/O operations %d", bufLen, c[engine.FactSyscalls], s.Calls)
		}
		t.Logf("buflen %d: %v", bufLen, facts.Lines())
	}
}
