package result

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/control/wire"
)

// TestSummarize holds the one summary every renderer prints to its sums:
// per direction in iperf3's order, known only where every stream's count
// came, iperf3's datagram total (the sender's count where known), the
// jitter averaged over -P, and on UDP a side's unknown time taken from
// this side's.
func TestSummarize(t *testing.T) {
	stream := func(id int, sender bool, bytes, peer int64, udp, peerUDP *wire.UDPStats) *StreamResult {
		st := &StreamResult{ID: id, Sender: sender, Bytes: bytes, Seconds: 2, PeerBytes: peer, PeerSeconds: 2.5, Retransmits: -1, UDP: udp, PeerUDP: peerUDP}
		if peer < 0 {
			st.PeerSeconds = -1
		}
		if sender {
			st.Retransmits = int64(id)
		}
		return st
	}
	for _, tc := range []struct {
		name string
		r    *Result
		want []DirSummary
	}{{
		name: "tcp client -P 2, one peer count missing",
		r: &Result{Role: "client", Params: wire.Params{TCP: true, Parallel: 2}, HasRetransmits: true,
			Streams: []*StreamResult{stream(1, true, 1000, 900, nil, nil), stream(3, true, 500, -1, nil, nil)}},
		want: []DirSummary{{Sender: true, Retransmits: true,
			Sent:     Total{Known: true, Bytes: 1500, Seconds: 2, Retransmits: 4, RetrKnown: true},
			Received: Total{Known: false, Bytes: 900, Seconds: 2.5, RetrKnown: true}}},
	}, {
		name: "udp bidir server",
		r: &Result{Role: "server", Params: wire.Params{UDP: true, Parallel: 1, Bidirectional: true},
			Streams: []*StreamResult{
				stream(1, false, 700, 800, &wire.UDPStats{Packets: 10, Lost: 2, Jitter: 0.002}, &wire.UDPStats{Packets: 11}),
				stream(3, true, 600, -1, &wire.UDPStats{Packets: 6}, nil),
			}},
		want: []DirSummary{{Sender: false, Packets: 11,
			Sent:     Total{Known: true, Bytes: 800, Seconds: 2.5, RetrKnown: false, UDP: wire.UDPStats{Packets: 11}, UDPKnown: true},
			Received: Total{Known: true, Bytes: 700, Seconds: 2, RetrKnown: true, UDP: wire.UDPStats{Packets: 10, Lost: 2, Jitter: 0.002}, UDPKnown: true},
		}, {Sender: true, Reverse: true, Packets: 6,
			Sent:     Total{Known: true, Bytes: 600, Seconds: 2, Retransmits: 3, RetrKnown: true, UDP: wire.UDPStats{Packets: 6}, UDPKnown: true},
			Received: Total{Known: false, Bytes: 0, Seconds: 2, RetrKnown: true, UDPKnown: false},
		}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := Summarize(tc.r).Dirs
			for i := range got {
				got[i].Streams = nil // the streams' own views are the Result's
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
		})
	}
}
