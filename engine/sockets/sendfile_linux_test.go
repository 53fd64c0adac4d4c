package sockets_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/engine/enginetest"
	"github.com/blastnet/blast/engine/sockets"
)

func TestSendfileConformance(t *testing.T) {
	enginetest.Run(t, sockets.Sendfile{}, enginetest.Caps{TCPSend: true})
}

// TestSendfileFile sends a named file and a Source that is a regular file,
// whole and up to a byte limit, and refuses a pipe and a missing file.
func TestSendfileFile(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdefghij"), 100003)
	path := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(data)

	t.Run("option", func(t *testing.T) {
		const bufLen = 65536
		got, f := sendAndHash(t, configure(t, sockets.Sendfile{}, "file="+path), &engine.Spec{BufLen: bufLen})
		if got != want {
			t.Errorf("peer received other bytes than the file holds")
		}
		if n := f.Facts.Count(engine.FactBytesNotCopied); n != int64(len(data)) {
			t.Errorf("bytes_not_copied = %d, want %d", n, len(data))
		}
		// One I/O operation per buffer, as ttcp counts; the calls it
		// took are system calls.
		s := f.Stats.Snapshot()
		if buffers := int64((len(data) + bufLen - 1) / bufLen); s.DataCalls() != buffers {
			t.Errorf("%d I/O operations for %d buffers", s.DataCalls(), buffers)
		}
		if sc := f.Facts.Count(engine.FactSyscalls); sc < s.Calls {
			t.Errorf("syscalls %d < I/O operations %d", sc, s.Calls)
		}
	})
	t.Run("option with a byte limit", func(t *testing.T) {
		const limit = 1<<20 + 7
		got, f := sendAndHash(t, configure(t, sockets.Sendfile{}, "file="+path), &engine.Spec{BufLen: 65536, Bytes: limit})
		if got != sha256.Sum256(data[:limit]) {
			t.Errorf("peer received other bytes than the first %d of the file", limit)
		}
		if n := f.Stats.Snapshot().Bytes; n != limit {
			t.Errorf("counters say %d bytes, want %d", n, limit)
		}
	})
	t.Run("source", func(t *testing.T) {
		file, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		spec := &engine.Spec{BufLen: 10000, Source: file}
		got, _ := sendAndHash(t, sockets.Sendfile{}, spec)
		if got != want {
			t.Errorf("peer received other bytes than the source file holds")
		}
		if spec.Source != file {
			t.Errorf("the Spec's Source was changed to %v", spec.Source)
		}
	})
	t.Run("pipe refused", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		mine, _ := tcpPair(t)
		f := &engine.Flow{Sock: mine, Spec: &engine.Spec{BufLen: 100, Source: r}, Stats: &engine.Counters{}}
		err = run(t, sockets.Sendfile{}, f, true)
		if err == nil || !strings.Contains(err.Error(), "splice backend") {
			t.Errorf("send from a pipe: got %v, want a refusal pointing at splice", err)
		}
	})
	t.Run("missing file refused", func(t *testing.T) {
		_, _, err := engine.Configure(sockets.Sendfile{}, "file="+path+".missing")
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("file option naming a missing file: got %v, want an error wrapping fs.ErrNotExist", err)
		}
	})
}

// configure applies the options s to b.
func configure(t testing.TB, b engine.Backend, s string) engine.Backend {
	t.Helper()
	c, _, err := engine.Configure(b, s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tcpPair returns a connected pair over 127.0.0.1: the backend's end, an
// engine socket, and a plain peer.
func tcpPair(t testing.TB) (mine *engine.Socket, peer *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := engine.Dial(context.Background(), "tcp4", ln.Addr().String(), engine.SockOpts{TOS: engine.NoTOS})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ln.Accept()
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); p.Close() })
	return c, p.(*net.TCPConn)
}

// hang bounds a flow in these tests: one that runs longer has hung (a
// hang detector, not a timing assertion).
const hang = 20 * time.Second

// run runs b on f through engine.Run, as a mode does.
func run(t testing.TB, b engine.Backend, f *engine.Flow, send bool) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	err := engine.Run(ctx, b, f, send)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%s did not finish within %v", b.Name(), hang)
	}
	return err
}

// sendAndHash sends with b over loopback and returns the hash of what the
// peer received.
func sendAndHash(t *testing.T, b engine.Backend, spec *engine.Spec) ([32]byte, *engine.Flow) {
	t.Helper()
	mine, peer := tcpPair(t)
	sum := make(chan [32]byte, 1)
	go func() {
		h := sha256.New()
		io.Copy(h, peer)
		var s [32]byte
		copy(s[:], h.Sum(nil))
		sum <- s
	}()
	f := &engine.Flow{Sock: mine, Spec: spec, Stats: &engine.Counters{}}
	if err := run(t, b, f, true); err != nil {
		t.Fatalf("send: %v", err)
	}
	mine.CloseWrite()
	return <-sum, f
}
