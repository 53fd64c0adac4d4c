package control

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/testkit"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

// pacedCases are the backends a client or server sends UDP with, at rates
// from 1 Mbit/s to 1 Gbit/s.
var pacedCases = []struct {
	backend string
	rate    float64
	blk     int
}{
	{"readwrite", 1e6, 32},
	{"readwrite", 10e6, 256},
	{"readwrite", 100e6, 1400},
	{"readwrite", 1e9, 1400},
	{"mmsg", 1e6, 32},
	{"mmsg", 100e6, 1400},
	{"mmsg:gso", 1e9, 1400},
}

// pacedCount is how many datagrams TestPacedFlowOnLab sends: fewer than a
// CPU's input backlog holds (net.core.netdev_max_backlog, 1000 by
// default) and than the receiving socket's buffer, so that the lab
// delivers every one of them however late its receiver runs.
const pacedCount = 400

// A paced, framed UDP flow of a byte count, from A to B over a veth pair,
// with each backend a client or server sends UDP with: exactly the
// datagrams of the count leave, each arrives once, numbered 1 to N, and
// their send stamps (iperf3's header) never run ahead of the rate: the
// pacer sends datagram k (from 0) no sooner than k datagrams' time at the
// rate after it started, whatever the host. How evenly it holds the rate,
// 10 ms by 10 ms, is a timing property (TestTimingPacingEvery10ms).
func TestPacedFlowOnLab(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	for _, tc := range pacedCases {
		t.Run(fmt.Sprintf("%s/%gM", tc.backend, tc.rate/1e6), func(t *testing.T) {
			name, opts, _ := cutOpts(tc.backend)
			b, _, err := engine.Open(name, opts)
			if err != nil {
				t.Fatal(err)
			}
			rx, tx := labSockets(t, lab)
			defer rx.Close()
			defer tx.Close()
			// Resolve B's address first: datagrams sent before the
			// neighbour entry is there wait in a short queue, which a
			// burst overflows.
			if _, err := tx.Write([]byte{0}); err != nil {
				t.Fatal(err)
			}
			rx.SetTimeout(30 * time.Second)
			buf := make([]byte, 65536)
			if _, err := rx.Read(buf); err != nil {
				t.Fatalf("the probe datagram did not arrive: %v", err)
			}

			type stamp struct {
				seq uint32
				at  time.Duration
			}
			got := make(chan []stamp, 1)
			readErr := make(chan error, 1)
			go func() {
				stamps := make([]stamp, 0, pacedCount)
				for len(stamps) < pacedCount {
					n, err := rx.Read(buf)
					if err != nil {
						readErr <- fmt.Errorf("after %d datagrams: %w", len(stamps), err)
						break
					}
					if n != tc.blk {
						readErr <- fmt.Errorf("a datagram of %d bytes, want %d", n, tc.blk)
						break
					}
					at := time.Duration(binary.BigEndian.Uint32(buf[0:]))*time.Second + time.Duration(binary.BigEndian.Uint32(buf[4:]))*time.Microsecond
					stamps = append(stamps, stamp{binary.BigEndian.Uint32(buf[8:]), at})
				}
				got <- stamps
			}()
			spec := &engine.Spec{Protocol: engine.UDP, BufLen: tc.blk, Rate: tc.rate, Bytes: pacedCount * int64(tc.blk), Framing: newUDPFraming(false)}
			f := &engine.Flow{Sock: tx, Spec: spec, Stats: &engine.Counters{}}
			began := engine.Mono().Truncate(time.Microsecond) // the stamps' resolution
			if err := engine.Run(context.Background(), b, f, true); err != nil {
				t.Fatalf("send: %v", err)
			}
			snap := f.Stats.Snapshot()
			if snap.Datagrams != pacedCount || snap.Bytes != pacedCount*int64(tc.blk) {
				t.Fatalf("sent %d datagrams, %d bytes; want %d, %d", snap.Datagrams, snap.Bytes, pacedCount, pacedCount*tc.blk)
			}
			received := <-got
			select {
			case err := <-readErr:
				t.Fatalf("receive: %v", err)
			default:
			}
			// Datagram k (from 1) was stamped stamps[k-1].
			stamps := make([]time.Duration, pacedCount)
			have := make([]bool, pacedCount)
			for _, r := range received {
				if r.seq < 1 || r.seq > pacedCount || have[r.seq-1] {
					t.Fatalf("received datagram number %d: never sent, or twice", r.seq)
				}
				stamps[r.seq-1], have[r.seq-1] = r.at, true
			}
			period := float64(tc.blk) / (tc.rate / 8) * float64(time.Second)
			for k, at := range stamps {
				if k > 0 && at < stamps[k-1] {
					t.Fatalf("datagram %d is stamped %v, before datagram %d (%v)", k+1, at, k, stamps[k-1])
				}
				// The pacer's schedule starts when it does, after began;
				// a stamp is cut to the microsecond.
				due := began + time.Duration(math.Round(float64(k)*period))
				if at < due-time.Microsecond {
					t.Fatalf("datagram %d left %v after the start, %v ahead of its time at the rate (%v)", k+1, at-began, due-at, due-began)
				}
			}
		})
	}
}

func cutOpts(s string) (string, string, bool) {
	for i := range s {
		if s[i] == ':' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// labSockets opens a UDP socket on B and one on A connected to it.
func labSockets(t *testing.T, lab *netlab.Lab) (rx, tx *engine.Socket) {
	t.Helper()
	ctx := context.Background()
	port := testkit.FreePort(t)
	addr := net.JoinHostPort(lab.B.Addr4.String(), strconv.Itoa(port))
	if err := lab.B.Do(func() (err error) {
		rx, err = engine.ListenUDP(ctx, "udp4", addr, engine.SockOpts{RcvBuf: 32 << 20, ForceBuf: true, TOS: engine.NoTOS})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := lab.A.Do(func() (err error) {
		tx, err = engine.Dial(ctx, "udp4", addr, engine.SockOpts{SndBuf: 4 << 20, TOS: engine.NoTOS})
		return err
	}); err != nil {
		rx.Close()
		t.Fatal(err)
	}
	return rx, tx
}
