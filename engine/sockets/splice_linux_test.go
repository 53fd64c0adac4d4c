package sockets_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/engine/enginetest"
)

func TestSpliceConformance(t *testing.T) {
	enginetest.Run(t, backend(t, "splice", engine.Options{}), enginetest.Caps{TCPSend: true, TCPRecv: true, Source: true, Sink: true})
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
		got, f := sendAndHash(t, backend(t, "splice", engine.Options{File: path}), &engine.Spec{BufLen: 128 << 10})
		if got != want {
			t.Errorf("peer received other bytes than the file holds")
		}
		facts, _ := engine.FlowFacts(f)
		if facts.Counts[engine.FactSyscalls] < f.Stats.Snapshot().Calls {
			t.Errorf("syscalls %d < socket calls %d", facts.Counts[engine.FactSyscalls], f.Stats.Snapshot().Calls)
		}
	})
	t.Run("send from pipe", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		go func() { w.Write(data); w.Close() }()
		got, _ := sendAndHash(t, backend(t, "splice", engine.Options{}), &engine.Spec{BufLen: 8192, Source: r})
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
		mine, peer := loopbackTCP(t)
		go func() { peer.Write(data); peer.CloseWrite() }()
		f := &engine.Flow{Conn: mine, Spec: &engine.Spec{BufLen: 65536, Sink: out}, Stats: &engine.Counters{}}
		if err := backend(t, "splice", engine.Options{}).Recv(context.Background(), f); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(out.Name())
		if err != nil {
			t.Fatal(err)
		}
		if sha256.Sum256(got) != want {
			t.Errorf("output file holds %d bytes that differ from the %d sent", len(got), len(data))
		}
		facts, _ := engine.FlowFacts(f)
		if n := facts.Counts[engine.FactBytesNotCopied]; n != int64(len(data)) {
			t.Errorf("bytes_not_copied = %d, want %d", n, len(data))
		}
	})
}
