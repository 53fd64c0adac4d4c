package sockets_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/engine/enginetest"
	"github.com/blastnet/blast/engine/sockets"
	"github.com/blastnet/blast/internal/testkit"
)

func TestSpliceConformance(t *testing.T) {
	enginetest.Run(t, sockets.Splice{}, enginetest.Caps{TCPSend: true, TCPRecv: true, Source: true, Sink: true, Timeout: true})
}

func TestSpliceFiles(t *testing.T) {
	data := bytes.Repeat([]byte("splice me, "), 300007)
	want := sha256.Sum256(data)
	dir := t.TempDir()
	path := filepath.Join(dir, "data")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("send file option", func(t *testing.T) {
		const bufLen = 128 << 10
		got, f := sendAndHash(t, configure(t, sockets.Splice{}, "file="+path), &engine.Spec{BufLen: bufLen})
		if got != want {
			t.Errorf("peer received other bytes than the file holds")
		}
		s := f.Stats.Snapshot()
		if buffers := int64((len(data) + bufLen - 1) / bufLen); s.DataCalls() != buffers {
			t.Errorf("%d I/O operations for %d buffers", s.DataCalls(), buffers)
		}
		// Two splices per buffer at least: into the pipe and out of it.
		if sc := f.Facts.Count(engine.FactSyscalls); sc < 2*s.DataCalls() {
			t.Errorf("syscalls %d < twice the I/O operations %d", sc, s.DataCalls())
		}
	})
	t.Run("send from pipe", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		go func() { w.Write(data); w.Close() }()
		got, _ := sendAndHash(t, sockets.Splice{}, &engine.Spec{BufLen: 8192, Source: r})
		if got != want {
			t.Errorf("peer received other bytes than the pipe carried")
		}
	})
	t.Run("recv to file", func(t *testing.T) {
		out, err := os.Create(filepath.Join(dir, "out"))
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		mine, peer := tcpPair(t)
		go func() { peer.Write(data); peer.CloseWrite() }()
		f := &engine.Flow{Sock: mine, Spec: &engine.Spec{BufLen: 65536, Sink: out}, Stats: &engine.Counters{}}
		if err := run(t, sockets.Splice{}, f, false); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(out.Name())
		if err != nil {
			t.Fatal(err)
		}
		if sha256.Sum256(got) != want {
			t.Errorf("output file holds %d bytes that differ from the %d sent", len(got), len(data))
		}
		if n := f.Facts.Count(engine.FactBytesNotCopied); n != int64(len(data)) {
			t.Errorf("bytes_not_copied = %d, want %d", n, len(data))
		}
	})
	t.Run("recv to pipe", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		sum := make(chan [32]byte, 1)
		go func() {
			h := sha256.New()
			io.Copy(h, r)
			var s [32]byte
			copy(s[:], h.Sum(nil))
			sum <- s
		}()
		mine, peer := tcpPair(t)
		go func() { peer.Write(data); peer.CloseWrite() }()
		f := &engine.Flow{Sock: mine, Spec: &engine.Spec{BufLen: 65536, Sink: w}, Stats: &engine.Counters{}}
		err = run(t, sockets.Splice{}, f, false)
		w.Close()
		if err != nil {
			t.Fatal(err)
		}
		if <-sum != want {
			t.Errorf("the output pipe carried other bytes than the %d sent", len(data))
		}
	})
}

// TestSpliceCancelWaitingForSource cancels a send that waits for a pipe
// that carries nothing: the wait is in ppoll with the flow's eventfd, so
// the cancel must reach it.
func TestSpliceCancelWaitingForSource(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	mine, _ := tcpPair(t)
	f := &engine.Flow{Sock: mine, Spec: &engine.Spec{BufLen: 8192, Source: r}, Stats: &engine.Counters{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- engine.Run(ctx, sockets.Splice{}, f, true) }()
	// The splice that found the pipe empty comes just before the wait.
	testkit.WaitFor(t, hang, "the send's first splice", func() bool { return f.Facts.Count(engine.FactSyscalls) > 0 })
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("after cancel: got %v, want context.Canceled", err)
		}
	case <-time.After(hang):
		w.Close() // unblock it
		<-done
		t.Fatal("the send waiting for its source did not see the cancel")
	}
}
