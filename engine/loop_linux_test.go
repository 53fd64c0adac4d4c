package engine_test

import (
	"context"
	"io"
	"net"
	"os"
	"runtime"
	"testing"

	"github.com/blastnet/blast/engine"
)

// Loop runs a request/response path as Run runs a Free backend: free
// when asked (Spec.Free), GOMAXPROCS raised for it and put back, every
// round trip's bytes exact.
func TestLoopRoundTrips(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	echoed := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			echoed <- -1
			return
		}
		defer c.Close()
		n, _ := io.Copy(c, c)
		echoed <- n
	}()
	s, err := engine.Dial(context.Background(), "tcp4", ln.Addr().String(), engine.SockOpts{TOS: engine.NoTOS})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	procs := runtime.GOMAXPROCS(0)
	const rounds, size = 2000, 100
	var during int
	f := &engine.Flow{Sock: s, Spec: &engine.Spec{Protocol: engine.TCP, Free: true}, Stats: &engine.Counters{}}
	err = engine.Loop(context.Background(), f, func(ctx context.Context, f *engine.Flow) error {
		during = runtime.GOMAXPROCS(0)
		req, resp := make([]byte, size), make([]byte, size)
		for i := range rounds {
			req[0] = byte(i)
			if _, err := f.Send(s.FD(), req, 0); err != nil {
				return err
			}
			for got := 0; got < size; {
				n, err := f.Recv(s.FD(), resp[got:], 0)
				if err != nil {
					return err
				}
				if n == 0 {
					return io.ErrUnexpectedEOF
				}
				got += n
			}
			if resp[0] != byte(i) {
				t.Errorf("round %d: response %d", i, resp[0])
			}
			f.Stats.AddIO(size, 0)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.CloseWrite()
	if n := <-echoed; n != rounds*size {
		t.Errorf("the peer echoed %d bytes, want %d", n, rounds*size)
	}
	locked := os.Getenv("BLAST_THREADS") == "locked"
	if f.Free == locked {
		t.Errorf("the loop ran free: %v (BLAST_THREADS=locked: %v)", f.Free, locked)
	}
	if !locked && during < 2 {
		t.Errorf("GOMAXPROCS %d while the loop ran free: want the flow's P and a spare", during)
	}
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("GOMAXPROCS %d after the loop, %d before", got, procs)
	}
	if f.Wall <= 0 {
		t.Errorf("the loop's wall time was not measured: %v", f.Wall)
	}
}
