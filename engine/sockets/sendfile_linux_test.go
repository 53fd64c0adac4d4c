package sockets_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/engine/enginetest"
)

func TestSendfileConformance(t *testing.T) {
	enginetest.Run(t, backend(t, "sendfile", engine.Options{}), enginetest.Caps{TCPSend: true})
}

// TestSendfileFile sends a named file and a Source that is a regular file,
// and refuses a pipe.
func TestSendfileFile(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdefghij"), 100003)
	path := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(data)

	t.Run("option", func(t *testing.T) {
		b := backend(t, "sendfile", engine.Options{File: path})
		got, f := sendAndHash(t, b, &engine.Spec{BufLen: 65536})
		if got != want {
			t.Errorf("peer received other bytes than the file holds")
		}
		facts, _ := engine.FlowFacts(f)
		if n := facts.Counts[engine.FactBytesNotCopied]; n != int64(len(data)) {
			t.Errorf("bytes_not_copied = %d, want %d", n, len(data))
		}
	})
	t.Run("source", func(t *testing.T) {
		file, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		got, _ := sendAndHash(t, backend(t, "sendfile", engine.Options{}), &engine.Spec{BufLen: 10000, Source: file})
		if got != want {
			t.Errorf("peer received other bytes than the source file holds")
		}
	})
	t.Run("pipe refused", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		mine, _ := loopbackTCP(t)
		f := &engine.Flow{Conn: mine, Spec: &engine.Spec{BufLen: 100, Source: r}, Stats: &engine.Counters{}}
		err = backend(t, "sendfile", engine.Options{}).Send(context.Background(), f)
		if err == nil || !strings.Contains(err.Error(), "splice backend") {
			t.Errorf("send from a pipe: got %v, want a refusal pointing at splice", err)
		}
	})
}

// backend looks name up and applies o.
func backend(t testing.TB, name string, o engine.Options) engine.Backend {
	t.Helper()
	b, err := engine.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	b, err = engine.Configure(b, o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// loopbackTCP returns a connected pair over 127.0.0.1.
func loopbackTCP(t testing.TB) (mine, peer *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	p, err := ln.Accept()
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); p.Close() })
	return c.(*net.TCPConn), p.(*net.TCPConn)
}

// sendAndHash sends with b over loopback and returns the hash of what the
// peer received.
func sendAndHash(t *testing.T, b engine.Backend, spec *engine.Spec) ([32]byte, *engine.Flow) {
	t.Helper()
	mine, peer := loopbackTCP(t)
	sum := make(chan [32]byte, 1)
	go func() {
		h := sha256.New()
		io.Copy(h, peer)
		var s [32]byte
		copy(s[:], h.Sum(nil))
		sum <- s
	}()
	f := &engine.Flow{Conn: mine, Spec: spec, Stats: &engine.Counters{}}
	if err := b.Send(context.Background(), f); err != nil {
		t.Fatalf("send: %v", err)
	}
	mine.CloseWrite()
	return <-sum, f
}
