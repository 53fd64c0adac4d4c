package sockets_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/engine/enginetest"
)

func TestIOURingConformance(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    engine.Options
		caps enginetest.Caps
	}{
		{"default", engine.Options{}, enginetest.All},
		{"batch 1", engine.Options{Batch: 1}, enginetest.All},
		{"zc", engine.Options{ZeroCopy: true}, enginetest.Caps{TCPSend: true, UDPSend: true, Source: true}},
		{"multishot", engine.Options{Multishot: true}, enginetest.Caps{TCPRecv: true, UDPRecv: true, Sink: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enginetest.Run(t, backend(t, "iouring", tc.o), tc.caps)
		})
	}
}

// TestIOURingShutdownInFlight cancels receives in flight (multishot and
// plain, TCP and UDP): every operation must come back before the ring is
// closed, so no buffer is left to the kernel.
func TestIOURingShutdownInFlight(t *testing.T) {
	for _, o := range []engine.Options{{}, {Multishot: true}, {Batch: 32}} {
		for _, udp := range []bool{false, true} {
			var f *engine.Flow
			if udp {
				a, _ := udpLoopback(t)
				f = &engine.Flow{Conn: a, Spec: &engine.Spec{Protocol: engine.UDP, BufLen: 2048}, Stats: &engine.Counters{}}
			} else {
				mine, _ := loopbackTCP(t)
				f = &engine.Flow{Conn: mine, Spec: &engine.Spec{BufLen: 2048}, Stats: &engine.Counters{}}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			err := backend(t, "iouring", o).Recv(ctx, f)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%v udp=%v: got %v, want the context's error", o, udp, err)
			}
			facts, _ := engine.FlowFacts(f)
			if facts.Counts[engine.FactPending] != 0 || len(facts.Notes) > 1 {
				t.Errorf("%v udp=%v: operations left in flight: %v", o, udp, facts.Lines())
			}
		}
	}
}

// TestIOURingStream moves 64 MiB between two iouring ends through small
// rings (the indexes wrap around thousands of times) and compares bytes.
func TestIOURingStream(t *testing.T) {
	for _, tc := range []struct{ tx, rx engine.Options }{
		{engine.Options{Batch: 1}, engine.Options{}},
		{engine.Options{Batch: 16}, engine.Options{Multishot: true}},
		{engine.Options{ZeroCopy: true}, engine.Options{Multishot: true, Batch: 4}},
	} {
		mine, peer := loopbackTCP(t)
		const n = 64 << 20
		h := sha256.New()
		rf := &engine.Flow{Conn: peer, Spec: &engine.Spec{BufLen: 16384, Sink: h}, Stats: &engine.Counters{}}
		done := make(chan error, 1)
		go func() { done <- backend(t, "iouring", tc.rx).Recv(context.Background(), rf) }()
		tf := &engine.Flow{Conn: mine, Spec: &engine.Spec{BufLen: 10000, Bytes: n}, Stats: &engine.Counters{}}
		if err := backend(t, "iouring", tc.tx).Send(context.Background(), tf); err != nil {
			t.Fatal(err)
		}
		mine.CloseWrite()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		want := sha256.New()
		io.CopyN(want, patternStream(10000), n)
		if !bytes.Equal(h.Sum(nil), want.Sum(nil)) {
			t.Errorf("%v -> %v: received bytes differ from the pattern stream", tc.tx, tc.rx)
		}
		if s := rf.Stats.Snapshot(); s.Bytes != n {
			t.Errorf("receiver counted %d bytes, want %d", s.Bytes, n)
		}
		tfacts, _ := engine.FlowFacts(tf)
		if tc.tx.ZeroCopy {
			c := tfacts.Counts
			if c[engine.FactZeroCopySends]+c[engine.FactCopiedSends] != tf.Stats.Snapshot().DataCalls() {
				t.Errorf("zero-copy notifications %v do not match %d sends", tfacts.Lines(), tf.Stats.Snapshot().DataCalls())
			}
		}
		t.Logf("%v -> %v: tx %v, rx calls %d", tc.tx, tc.rx, tfacts.Lines(), rf.Stats.Snapshot().Calls)
	}
}

// patternStream is what a sender in sink/source mode sends: buffers of
// bufLen bytes of the pattern, one after another.
func patternStream(bufLen int) io.Reader {
	b := make([]byte, bufLen)
	engine.Pattern(b)
	return &repeatReader{b: b}
}

type repeatReader struct {
	b   []byte
	off int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := copy(p, r.b[r.off:])
	r.off = (r.off + n) % len(r.b)
	return n, nil
}

// TestPatternStream checks that every sending backend sends the same
// bytes as readwrite in sink/source mode, including a last short buffer.
func TestPatternStream(t *testing.T) {
	const bufLen, n = 7000, 3<<20 + 5
	want := sha256.New()
	io.CopyN(want, patternStream(bufLen), n)
	for _, name := range []string{"readwrite", "sendfile", "splice", "zerocopy", "iouring"} {
		got, _ := sendAndHash(t, backend(t, name, engine.Options{}), &engine.Spec{BufLen: bufLen, Bytes: n})
		if !bytes.Equal(got[:], want.Sum(nil)) {
			t.Errorf("%s sends other bytes than the pattern stream", name)
		}
	}
}
