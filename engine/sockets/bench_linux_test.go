package sockets_test

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/engine/sockets"
)

// BenchmarkTCPSend sends b.N buffers of 128 KiB over loopback with each
// sending backend of the package to a plain reader.
func BenchmarkTCPSend(b *testing.B) {
	const bufLen = 128 << 10
	for _, be := range []engine.Backend{sockets.ReadWrite{}, sockets.Sendfile{}, sockets.Splice{}, sockets.ZeroCopy{}} {
		b.Run(be.Name(), func(b *testing.B) {
			if err := be.Probe(); err != nil {
				b.Skip(err)
			}
			mine, peer := tcpPair(b)
			go io.Copy(io.Discard, peer)
			f := &engine.Flow{Sock: mine, Spec: &engine.Spec{BufLen: bufLen, Bytes: int64(b.N) * bufLen}, Stats: &engine.Counters{}}
			b.SetBytes(bufLen)
			b.ResetTimer()
			if err := run(b, be, f, true); err != nil {
				b.Fatal(err)
			}
			s := f.Stats.Snapshot()
			b.ReportMetric(s.AvgIO(), "B/call")
			b.ReportMetric(float64(f.Facts.Count(engine.FactSyscalls))/float64(b.N), "syscalls/op")
		})
	}
}

// BenchmarkUDPSend sends b.N 64-byte datagrams over loopback.
func BenchmarkUDPSend(b *testing.B) {
	for _, be := range []engine.Backend{sockets.ReadWrite{}, sockets.ZeroCopy{}} {
		b.Run(be.Name(), func(b *testing.B) {
			if err := be.Probe(); err != nil {
				b.Skip(err)
			}
			peer, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				b.Fatal(err)
			}
			defer peer.Close()
			mine, err := engine.Dial(context.Background(), "udp4", peer.LocalAddr().String(), engine.SockOpts{TOS: engine.NoTOS})
			if err != nil {
				b.Fatal(err)
			}
			defer mine.Close()
			f := &engine.Flow{Sock: mine, Spec: &engine.Spec{Protocol: engine.UDP, BufLen: 64, Bytes: int64(b.N) * 64}, Stats: &engine.Counters{}}
			b.SetBytes(64)
			b.ResetTimer()
			if err := run(b, be, f, true); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pps")
		})
	}
}
