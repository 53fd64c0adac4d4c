package sockets_test

import (
	"context"
	"io"
	"testing"

	"github.com/blastnet/blast/engine"
)

// BenchmarkTCPSend sends b.N buffers of 128 KiB over loopback with each
// sending backend to a plain reader.
func BenchmarkTCPSend(b *testing.B) {
	const bufLen = 128 << 10
	for _, name := range []string{"readwrite", "sendfile", "splice", "zerocopy", "iouring"} {
		b.Run(name, func(b *testing.B) {
			be := backend(b, name, engine.Options{})
			mine, peer := loopbackTCP(b)
			go io.Copy(io.Discard, peer)
			f := &engine.Flow{Conn: mine, Spec: &engine.Spec{BufLen: bufLen, Bytes: int64(b.N) * bufLen}, Stats: &engine.Counters{}}
			b.SetBytes(bufLen)
			b.ResetTimer()
			if err := be.Send(context.Background(), f); err != nil {
				b.Fatal(err)
			}
			s := f.Stats.Snapshot()
			b.ReportMetric(s.AvgIO(), "B/call")
		})
	}
}

// BenchmarkUDPSend sends b.N 64-byte datagrams over loopback.
func BenchmarkUDPSend(b *testing.B) {
	for _, tc := range []struct {
		name string
		o    engine.Options
	}{{"readwrite", engine.Options{}}, {"mmsg", engine.Options{}}, {"mmsg", engine.Options{GSO: true}}, {"iouring", engine.Options{}}} {
		b.Run(tc.name+tc.o.String(), func(b *testing.B) {
			a, _ := udpLoopback(b)
			f := &engine.Flow{Conn: a, Spec: &engine.Spec{Protocol: engine.UDP, BufLen: 64, Bytes: int64(b.N) * 64}, Stats: &engine.Counters{}}
			b.SetBytes(64)
			b.ResetTimer()
			if err := backend(b, tc.name, tc.o).Send(context.Background(), f); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pps")
		})
	}
}
