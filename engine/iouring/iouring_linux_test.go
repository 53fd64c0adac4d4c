package iouring_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/engine/enginetest"
	"github.com/blastnet/blast/engine/iouring"
)

// hang bounds every flow of these tests: a hang detector, not a timing
// assertion.
const hang = 20 * time.Second

func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name string
		caps enginetest.Caps
	}{
		{"default", enginetest.All},
		{"batch=1", enginetest.All},
		{"zc", enginetest.Caps{TCPSend: true, UDPSend: true, Source: true, FramingSend: true}},
		{"multishot", enginetest.Caps{TCPRecv: true, UDPRecv: true, Sink: true, Timeout: true, FramingRecv: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			caps := tc.caps
			if tc.name != "default" {
				caps.Options = tc.name
			}
			enginetest.Run(t, iouring.Backend{}, caps)
		})
	}
}

func TestConfigure(t *testing.T) {
	for _, tc := range []struct {
		opts, err string
	}{
		{"batch=256,zc,multishot", ""},
		{"batch=257", "at most 256"},
		{"batch=0", "count from 1"},
		{"zc=1", "takes no value"},
	} {
		_, _, err := engine.Configure(iouring.Backend{}, tc.opts)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("options %q: got %v, want an error saying %q", tc.opts, err, tc.err)
		}
	}
}

// backend is the iouring backend configured with opts, skipped where
// the kernel lacks it.
func backend(t testing.TB, opts string) engine.Backend {
	t.Helper()
	b, _, err := engine.Configure(iouring.Backend{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Probe(); errors.Is(err, engine.ErrNotSupported) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
	return b
}

// tcpPair returns both ends of a loopback connection as engine sockets:
// the dialled one, and the accepted one.
func tcpPair(t testing.TB) (dialled, accepted *engine.Socket) {
	t.Helper()
	ctx := context.Background()
	ln, err := engine.Listen(ctx, "tcp4", "127.0.0.1:0", engine.SockOpts{TOS: engine.NoTOS})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	d, err := engine.Dial(ctx, "tcp4", ln.Addr().String(), engine.SockOpts{TOS: engine.NoTOS})
	if err != nil {
		t.Fatal(err)
	}
	a, err := ln.Accept(ctx)
	if err != nil {
		d.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); a.Close() })
	return d, a
}

// udpSocket returns an engine UDP socket connected to a plain peer that
// never sends.
func udpSocket(t testing.TB) *engine.Socket {
	t.Helper()
	peer, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := engine.Dial(context.Background(), "udp4", peer.LocalAddr().String(), engine.SockOpts{TOS: engine.NoTOS})
	if err != nil {
		peer.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); peer.Close() })
	return s
}

func newFlow(s *engine.Socket, spec *engine.Spec) *engine.Flow {
	return &engine.Flow{Sock: s, Spec: spec, Stats: &engine.Counters{}}
}

func run(t testing.TB, b engine.Backend, f *engine.Flow, send bool) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	err := engine.Run(ctx, b, f, send)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("flow did not finish within %v", hang)
	}
	return err
}

// TestShutdownInFlight cancels receives in flight (plain, multishot and a
// deep UDP batch; TCP, connected UDP and a UDP socket that only listens):
// the shutdown must bring every operation back before the ring is closed,
// so no buffer is left to the kernel.
func TestShutdownInFlight(t *testing.T) {
	for _, opts := range []string{"", "multishot", "batch=32"} {
		for _, sock := range []string{"tcp", "udp", "udp-listening"} {
			name := opts
			if name == "" {
				name = "plain"
			}
			t.Run(name+"/"+sock, func(t *testing.T) {
				b := backend(t, opts)
				var f *engine.Flow
				switch sock {
				case "tcp":
					mine, _ := tcpPair(t)
					f = newFlow(mine, &engine.Spec{BufLen: 2048})
				case "udp":
					f = newFlow(udpSocket(t), &engine.Spec{Protocol: engine.UDP, BufLen: 2048})
				case "udp-listening":
					s, err := engine.ListenUDP(context.Background(), "udp4", "127.0.0.1:0", engine.SockOpts{TOS: engine.NoTOS})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { s.Close() })
					f = newFlow(s, &engine.Spec{Protocol: engine.UDP, BufLen: 2048})
				}
				// The deadline is what cancels the flow, not a pass mark.
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				defer cancel()
				err := engine.Run(ctx, b, f, false)
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("got %v, want the context's error", err)
				}
				facts := f.Facts.Snapshot()
				if facts.Counts[engine.FactPending] != 0 || strings.Contains(strings.Join(facts.Notes, "\n"), "did not finish") {
					t.Errorf("operations left in flight: %v", facts.Lines())
				}
				if s := f.Stats.Snapshot(); s.Errors != 0 {
					t.Errorf("the cancel counted as errors: %+v", s)
				}
			})
		}
	}
}

// TestStream moves 64 MiB between two iouring ends through small rings
// (the indexes wrap around thousands of times) and compares the bytes
// with the pattern stream.
func TestStream(t *testing.T) {
	const n = 64 << 20
	want := sha256.New()
	io.CopyN(want, patternStream(10000), n)
	for _, tc := range []struct{ tx, rx string }{
		{"batch=1", ""},
		{"batch=16", "multishot"},
		{"zc", "multishot,batch=4"},
	} {
		tx, rx := backend(t, tc.tx), backend(t, tc.rx)
		mine, peer := tcpPair(t)
		h := sha256.New()
		rf := newFlow(peer, &engine.Spec{BufLen: 16384, Sink: h})
		done := make(chan error, 1)
		go func() { done <- engine.Run(context.Background(), rx, rf, false) }()
		tf := newFlow(mine, &engine.Spec{BufLen: 10000, Bytes: n})
		if err := run(t, tx, tf, true); err != nil {
			t.Fatalf("%q send: %v", tc.tx, err)
		}
		mine.CloseWrite()
		if err := <-done; err != nil {
			t.Fatalf("%q receive: %v", tc.rx, err)
		}
		if !bytes.Equal(h.Sum(nil), want.Sum(nil)) {
			t.Errorf("%q -> %q: received bytes differ from the pattern stream", tc.tx, tc.rx)
		}
		if s := rf.Stats.Snapshot(); s.Bytes != n {
			t.Errorf("receiver counted %d bytes, want %d", s.Bytes, n)
		}
		if strings.Contains(tc.tx, "zc") {
			c := tf.Facts.Snapshot().Counts
			if sends := tf.Stats.Snapshot().DataCalls(); c[engine.FactZeroCopySends]+c[engine.FactCopiedSends] != sends {
				t.Errorf("zero-copy notifications %v do not match %d sends", c, sends)
			}
		}
		t.Logf("%q -> %q: tx %v, rx calls %d", tc.tx, tc.rx, tf.Facts.Snapshot().Lines(), rf.Stats.Snapshot().Calls)
	}
}

// TestPatternStream checks that iouring sends the same bytes as every
// backend in sink/source mode: buffers of the pattern, one after another,
// the last one short.
func TestPatternStream(t *testing.T) {
	const bufLen, n = 7000, 3<<20 + 5
	want := sha256.New()
	io.CopyN(want, patternStream(bufLen), n)
	for _, opts := range []string{"", "batch=3", "zc"} {
		b := backend(t, opts)
		mine, peer := tcpPair(t)
		sum := make(chan []byte, 1)
		go func() {
			h := sha256.New()
			io.Copy(h, socketReader{peer})
			sum <- h.Sum(nil)
		}()
		f := newFlow(mine, &engine.Spec{BufLen: bufLen, Bytes: n})
		if err := run(t, b, f, true); err != nil {
			t.Fatalf("%q: %v", opts, err)
		}
		mine.CloseWrite()
		if !bytes.Equal(<-sum, want.Sum(nil)) {
			t.Errorf("iouring %q sends other bytes than the pattern stream", opts)
		}
	}
}

// TestDurationBlocked gives a time-limited sender a peer that reads
// nothing until the send is over: the send, blocked on a full socket,
// must end after its time (not hang), and count exactly the bytes that
// went, partial sends of the cancelled operations included.
func TestDurationBlocked(t *testing.T) {
	for _, opts := range []string{"", "batch=1", "zc"} {
		b := backend(t, opts)
		mine, peer := tcpPair(t)
		f := newFlow(mine, &engine.Spec{BufLen: 65536, Duration: 200 * time.Millisecond})
		start := time.Now()
		if err := run(t, b, f, true); err != nil {
			t.Fatalf("%q: %v", opts, err)
		}
		t.Logf("%q: a send blocked from the start ended %v after its time limit", opts, time.Since(start)-f.Spec.Duration)
		mine.CloseWrite()
		got, err := io.Copy(io.Discard, socketReader{peer})
		if err != nil {
			t.Fatal(err)
		}
		if s := f.Stats.Snapshot(); got != s.Bytes || got == 0 || s.Errors != 0 {
			t.Errorf("%q: peer received %d bytes, counters say %+v (want equal, non-zero, no errors)", opts, got, s)
		}
	}
}

// socketReader reads an engine socket as an io.Reader (0 bytes: EOF).
type socketReader struct{ s *engine.Socket }

func (r socketReader) Read(p []byte) (int, error) {
	n, err := r.s.Read(p)
	if n == 0 && err == nil {
		return 0, io.EOF
	}
	return n, err
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
