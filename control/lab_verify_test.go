package control

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/internal/verify"
	"github.com/blastnet/blast/internal/verify/verifytest"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

// blast client and server over a veth pair with --verify, first clean,
// then with a tc program on the sending end's veth that flips a byte in
// some data packets and fixes their checksum: the kernel takes them, and
// only --verify sees the damage. The plant touches only the data
// streams' packets (the client's --cport), never the control
// connection's.
func TestVerifyLab(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	port, rl := labServer(t, lab, ServerConfig{})
	const cport = 40100
	n := 0
	for _, tc := range []struct {
		name    string
		cfg     Config
		corrupt bool
		blocks  int64 // per stream, clean
	}{
		{"tcp clean", Config{Bytes: 32 << 20, BlockLen: 128 << 10}, false, 256},
		{"tcp corrupt", Config{Bytes: 32 << 20, BlockLen: 128 << 10}, true, 256},
		{"tcp reverse clean", Config{Bytes: 32 << 20, BlockLen: 64 << 10, Reverse: true}, false, 512},
		{"tcp reverse corrupt", Config{Bytes: 32 << 20, BlockLen: 64 << 10, Reverse: true}, true, 512},
		// 800 datagrams: fewer than a CPU's input backlog holds (1000)
		// and than the receiver's buffer (4 MiB), so that the lab
		// delivers every one however late the receiver runs.
		{"udp clean", Config{UDP: true, Bytes: 1400 * 800, BlockLen: 1400, Rate: 200e6, RateSet: true}, false, 800},
		{"udp corrupt", Config{UDP: true, Bytes: 1400 * 800, BlockLen: 1400, Rate: 200e6, RateSet: true}, true, 800},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var planted func() uint64
			if tc.corrupt {
				p := verifytest.Plant{Proto: verifytest.TCP, Every: 8, Port: cport}
				if tc.cfg.UDP {
					p.Proto, p.Every = verifytest.UDP, 4
				}
				sender := lab.A
				if tc.cfg.Reverse {
					sender = lab.B
				}
				planted = verifytest.Corrupt(t, sender, p)
			}
			cfg := tc.cfg
			cfg.Host, cfg.Port, cfg.CPort, cfg.Verify, cfg.NoNIC = lab.B.Addr4.String(), port, cport, true, true
			var r *result.Result
			var err error
			lab.A.Do(func() error {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				r, err = Run(ctx, cfg)
				return nil
			})
			n++
			s := rl.wait(t, n)[n-1]
			if r == nil || len(r.Streams) != 1 || len(s.Streams) != 1 {
				t.Fatalf("client: %v, result %+v", err, r)
			}
			c := r.Streams[0]
			got, there := c.PeerVerify, s.Streams[0].Verify // checked by the server
			if !c.Sender {
				got, there = c.Verify, s.Streams[0].PeerVerify
			}
			if got == nil || !cmp.Equal(got, there) {
				t.Fatalf("counts: client has %+v, server %+v", got, there)
			}
			if !tc.corrupt {
				want := verify.Counts{Blocks: tc.blocks, BlockLen: tc.cfg.BlockLen, Stream: !tc.cfg.UDP}
				if tc.cfg.UDP {
					want.BlockLen -= udpHeaderRoom
				}
				if err != nil || !cmp.Equal(*got, want) {
					t.Fatalf("clean run: %v, counts %+v, want %+v (bytes / block length)", err, *got, want)
				}
				return
			}
			pn := planted()
			if pn == 0 {
				t.Fatal("the plant corrupted no packet")
			}
			if err == nil || !strings.Contains(err.Error(), " corrupt (block ") || strings.Contains(err.Error(), "\n") {
				t.Errorf("client error %v, want one line naming the corrupt blocks", err)
			}
			if got.Corrupt == 0 || got.Corrupt > int64(pn) || got.Blocks+got.Corrupt != tc.blocks || got.Missing != 0 {
				t.Errorf("%d packets corrupted: %+v, want 0 < corrupt <= %d, %d blocks in all", pn, *got, pn, tc.blocks)
			}
			if tc.cfg.UDP {
				// One datagram, one packet: the fault is at the plant's
				// offset from the datagram's start.
				if got.Corrupt != int64(pn) || len(got.Faults) == 0 || got.Faults[0].Offset != verifytest.PayloadOffset {
					t.Errorf("%d datagrams corrupted: %+v", pn, *got)
				}
			}
		})
	}
}
