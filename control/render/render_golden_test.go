package render

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/internal/golden"
	"github.com/blastnet/blast/nicinfo"
)

// The fixed world of the golden tests: a client at 198.18.0.1, a server
// at 198.18.0.2:5201, a test that started at a fixed time.
var (
	goldenTime   = time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
	goldenClient = netip.MustParseAddr("198.18.0.1")
	goldenServer = netip.MustParseAddr("198.18.0.2")
)

const goldenBlock = 131072

// goldenIv is one stream's interval: calls writes of a full block on a
// sender (so the bytes are calls*block), or the bytes given on a receiver.
type goldenIv struct {
	socket, id  int
	sender      bool
	start, end  float64
	calls       int64
	bytes       int64 // receiver only
	retr, cwnd  int64 // sender only; cwnd 0: no TCP_INFO
	rtt, minRTT int64
	omitted     bool
}

func (g goldenIv) interval() result.StreamInterval {
	si := result.StreamInterval{ID: g.id, Socket: g.socket, Sender: g.sender, Start: g.start, End: g.end, Omitted: g.omitted, Retransmits: -1}
	if g.sender {
		si.Bytes = g.calls * goldenBlock
		si.IO = engine.Sample{Bytes: si.Bytes, Calls: g.calls, MinIO: goldenBlock, MaxIO: goldenBlock}
		if g.cwnd > 0 {
			si.TCP = &result.TCPInfo{SndCwnd: g.cwnd, SndWnd: 3 << 20, RTT: g.rtt, RTTVar: g.rtt / 4, MinRTT: g.minRTT, PMTU: 1500,
				Reordering: 3, PacingRate: 2 * si.Bytes, DeliveryRate: si.Bytes}
			si.Retransmits = g.retr
		}
	} else {
		si.Bytes = g.bytes
		si.IO = engine.Sample{Bytes: g.bytes, Calls: g.calls, MinIO: 1448, MaxIO: goldenBlock}
	}
	return si
}

// intervals groups the stream intervals by interval, in order.
func intervals(ivs ...[]goldenIv) []*result.Interval {
	var out []*result.Interval
	for _, group := range ivs {
		iv := &result.Interval{}
		for _, g := range group {
			iv.Streams = append(iv.Streams, g.interval())
			iv.Omitted = g.omitted
		}
		out = append(out, iv)
	}
	return out
}

// streamFromIntervals sums one stream's measured (not omitted) intervals
// into its StreamResult.
func streamFromIntervals(sr *result.StreamResult, ivs []*result.Interval) *result.StreamResult {
	var io engine.Sample
	for _, iv := range ivs {
		for _, si := range iv.Streams {
			if si.ID != sr.ID || si.Omitted {
				continue
			}
			sr.Bytes += si.Bytes
			sr.Seconds = si.End
			io.Bytes += si.IO.Bytes
			io.Datagrams += si.IO.Datagrams
			io.Calls += si.IO.Calls
			if io.MinIO == 0 || si.IO.MinIO < io.MinIO {
				io.MinIO = si.IO.MinIO
			}
			io.MaxIO = max(io.MaxIO, si.IO.MaxIO)
			if si.TCP != nil {
				sr.Retransmits = max(sr.Retransmits, 0) + si.Retransmits
			}
		}
	}
	sr.IO = io
	return sr
}

func addrPort(a netip.Addr, port uint16) netip.AddrPort { return netip.AddrPortFrom(a, port) }

// clientP1 is blast client -t 3 against a blast server: one stream, three
// intervals, TCP_INFO on the sender, backend facts on both ends, the NIC.
func clientP1() *result.Result {
	ivs := intervals(
		[]goldenIv{{socket: 5, id: 1, sender: true, start: 0, end: 1.000104, calls: 8774, retr: 5, cwnd: 1572864, rtt: 412, minRTT: 61}},
		[]goldenIv{{socket: 5, id: 1, sender: true, start: 1.000104, end: 2.000211, calls: 8851, retr: 4, cwnd: 1835008, rtt: 388, minRTT: 61}},
		[]goldenIv{{socket: 5, id: 1, sender: true, start: 2.000211, end: 3.000087, calls: 8743, retr: 3, cwnd: 1703936, rtt: 402, minRTT: 58}},
	)
	st := streamFromIntervals(&result.StreamResult{ID: 1, Socket: 5, Sender: true,
		Local: addrPort(goldenClient, 50432), Remote: addrPort(goldenServer, 5201),
		PeerBytes: 3456106496, PeerSeconds: 3.041,
		MaxSndCwnd: 1835008, MaxSndWnd: 3 << 20, MinRTT: 388, MaxRTT: 412, MeanRTT: 400,
		Facts: engine.FactSample{Counts: map[string]int64{engine.FactSyscalls: 26368}}}, ivs)
	st.PeerIO = &engine.Sample{Bytes: 3456106496, Calls: 41237, Idle: 1, MinIO: 1448, MaxIO: 131072}
	st.PeerFacts = &engine.FactSample{Counts: map[string]int64{engine.FactSyscalls: 41237}}
	mtu := 1500
	speed := 10000
	nic := &nicinfo.Result{
		Interface: &nicinfo.Interface{Name: "bl1cf.1a", Index: 7, Virtual: true, Driver: "veth", MTU: &mtu, OperState: "up",
			Link: nicinfo.Link{SpeedMbps: &speed, Duplex: "full"}, Naming: nicinfo.Naming{Kind: "user", Stable: true}},
		Delta: &nicinfo.Deltas{Name: "bl1cf.1a", Interval: 3041 * time.Millisecond,
			Counters: map[string]uint64{"tx_bytes": 3461002211, "tx_packets": 79811, "rx_bytes": 1523012, "rx_packets": 23011}},
		Findings: []finding.Finding{},
	}
	return &result.Result{
		Role: "client", Version: result.Version, SystemInfo: "Linux lab-a 6.12.0 #1 SMP x86_64", Time: goldenTime,
		Peer: addrPort(goldenServer, 5201), Host: "198.18.0.2", Cookie: "abcdefghijklmnopqrstuvwxyz234567abcd",
		Params:         wire.Params{TCP: true, Time: 3, Parallel: 1, Len: goldenBlock, Blast: &wire.BlastParams{Version: result.Version}},
		TCPMSSDefault:  1448,
		Streams:        []*result.StreamResult{st},
		Intervals:      ivs,
		CPU:            result.CPUUtil{Total: 42.1, User: 1.3, System: 40.8, UserSeconds: 0.04, SystemSeconds: 1.22},
		RemoteCPU:      result.CPUUtil{Total: 55.2, User: 2.1, System: 53.1, UserSeconds: 0.06, SystemSeconds: 1.61},
		HasRetransmits: true, Congestion: "cubic", RemoteCongestion: "cubic",
		Backend: "readwrite", RemoteBackend: "readwrite", RemoteVersion: result.Version,
		NIC: nic,
	}
}

// clientP3 is blast client -P 3 -t 2 -O 1 -w 4M: an omitted interval, then
// two measured ones, three streams with their sums.
func clientP3() *result.Result {
	type s struct {
		socket, id int
		calls      [3]int64
		retr       [3]int64
		cwnd       [3]int64
	}
	streams := []s{
		{5, 1, [3]int64{2911, 2987, 3004}, [3]int64{31, 0, 2}, [3]int64{524288, 786432, 812544}},
		{7, 2, [3]int64{2875, 2930, 2899}, [3]int64{27, 1, 0}, [3]int64{498688, 760320, 747008}},
		{9, 3, [3]int64{3022, 3010, 3047}, [3]int64{40, 0, 0}, [3]int64{550912, 838656, 851968}},
	}
	spans := [3][2]float64{{0, 1.000088}, {0, 1.000131}, {1.000131, 2.000072}}
	var groups [][]goldenIv
	for i, sp := range spans {
		var g []goldenIv
		for _, st := range streams {
			g = append(g, goldenIv{socket: st.socket, id: st.id, sender: true, start: sp[0], end: sp[1], calls: st.calls[i],
				retr: st.retr[i], cwnd: st.cwnd[i], rtt: 950, minRTT: 74, omitted: i == 0})
		}
		groups = append(groups, g)
	}
	ivs := intervals(groups...)
	r := &result.Result{
		Role: "client", Version: result.Version, SystemInfo: "Linux lab-a 6.12.0 #1 SMP x86_64", Time: goldenTime,
		Peer: addrPort(goldenServer, 5201), Host: "server.lab", Cookie: "p3p3p3p3p3p3p3p3p3p3p3p3p3p3p3p3p3p3",
		Params:        wire.Params{TCP: true, Time: 2, Omit: 1, Parallel: 3, Window: 4 << 20, Len: goldenBlock, Blast: &wire.BlastParams{Version: result.Version}},
		TCPMSSDefault: 1448, SockBufSize: 4 << 20, SndBufActual: 8 << 20, RcvBufActual: 8 << 20,
		Intervals:      ivs,
		CPU:            result.CPUUtil{Total: 97.4, User: 3.2, System: 94.2, UserSeconds: 0.1, SystemSeconds: 2.83},
		RemoteCPU:      result.CPUUtil{Total: 88.0, User: 4.0, System: 84.0, UserSeconds: 0.12, SystemSeconds: 2.52},
		HasRetransmits: true, Congestion: "cubic", RemoteCongestion: "cubic",
		Backend: "sendfile", RemoteBackend: "readwrite", RemoteVersion: result.Version,
		Notes: []string{"peer: asked for splice, receiving with readwrite"},
	}
	peerBytes := []int64{780140544, 763412480, 793378816}
	for i, st := range streams {
		sr := streamFromIntervals(&result.StreamResult{ID: st.id, Socket: st.socket, Sender: true,
			Local: addrPort(goldenClient, uint16(50434+i)), Remote: addrPort(goldenServer, 5201),
			PeerBytes: peerBytes[i], PeerSeconds: 2.04,
			MaxSndCwnd: max(st.cwnd[1], st.cwnd[2]), MaxSndWnd: 3 << 20, MinRTT: 950, MaxRTT: 950, MeanRTT: 950}, ivs)
		r.Streams = append(r.Streams, sr)
	}
	return r
}

// clientReverse is blast client -R against iperf3 (no blast additions
// from the peer), with --get-server-output.
func clientReverse() *result.Result {
	ivs := intervals(
		[]goldenIv{{socket: 5, id: 1, start: 0, end: 1.000211, calls: 20311, bytes: 1162854400}},
		[]goldenIv{{socket: 5, id: 1, start: 1.000211, end: 2.000043, calls: 20874, bytes: 1194590208}},
	)
	st := streamFromIntervals(&result.StreamResult{ID: 1, Socket: 5, Sender: false,
		Local: addrPort(goldenClient, 50440), Remote: addrPort(goldenServer, 5201),
		PeerBytes: 2357985280, PeerSeconds: 2.000011, Retransmits: 17}, ivs)
	return &result.Result{
		Role: "client", Version: result.Version, SystemInfo: "Linux lab-a 6.12.0 #1 SMP x86_64", Time: goldenTime,
		Peer: addrPort(goldenServer, 5201), Host: "198.18.0.2", Cookie: "revrevrevrevrevrevrevrevrevrevrevrev",
		Params:               wire.Params{TCP: true, Time: 2, Parallel: 1, Reverse: true, GetServerOutput: 1, Blast: &wire.BlastParams{Version: result.Version}},
		TCPMSSDefault:        1448,
		Streams:              []*result.StreamResult{st},
		Intervals:            ivs,
		CPU:                  result.CPUUtil{Total: 31.5, User: 0.9, System: 30.6, UserSeconds: 0.02, SystemSeconds: 0.61},
		RemoteCPU:            result.CPUUtil{Total: 61.25, User: 1.5, System: 59.75},
		RemoteHasRetransmits: true, Congestion: "cubic", RemoteCongestion: "bbr",
		Backend:          "readwrite",
		ServerOutputText: "Accepted connection from 198.18.0.1, port 50438\n[  5] local 198.18.0.2 port 5201 connected to 198.18.0.1 port 50440\n",
	}
}

// clientBidir is blast client --bidir -T lab-a: one stream each way.
func clientBidir() *result.Result {
	ivs := intervals(
		[]goldenIv{
			{socket: 5, id: 1, sender: true, start: 0, end: 1.000072, calls: 4410, retr: 0, cwnd: 2359296, rtt: 1210, minRTT: 80},
			{socket: 7, id: 2, start: 0, end: 1.000072, calls: 9120, bytes: 571473920},
		},
		[]goldenIv{
			{socket: 5, id: 1, sender: true, start: 1.000072, end: 2.000119, calls: 4502, retr: 2, cwnd: 2490368, rtt: 1188, minRTT: 80},
			{socket: 7, id: 2, start: 1.000072, end: 2.000119, calls: 9307, bytes: 590086144},
		},
	)
	up := streamFromIntervals(&result.StreamResult{ID: 1, Socket: 5, Sender: true,
		Local: addrPort(goldenClient, 50442), Remote: addrPort(goldenServer, 5201),
		PeerBytes: 1168113664, PeerSeconds: 2.0301,
		MaxSndCwnd: 2490368, MaxSndWnd: 3 << 20, MinRTT: 1188, MaxRTT: 1210, MeanRTT: 1199}, ivs)
	down := streamFromIntervals(&result.StreamResult{ID: 2, Socket: 7, Sender: false,
		Local: addrPort(goldenClient, 50444), Remote: addrPort(goldenServer, 5201),
		PeerBytes: 1161560064, PeerSeconds: 2.000098, Retransmits: 9}, ivs)
	return &result.Result{
		Role: "client", Version: result.Version, SystemInfo: "Linux lab-a 6.12.0 #1 SMP x86_64", Time: goldenTime,
		Peer: addrPort(goldenServer, 5201), Host: "198.18.0.2", Cookie: "bidibidibidibidibidibidibidibidibidi",
		Params:         wire.Params{TCP: true, Time: 2, Parallel: 1, Bidirectional: true, Title: "lab-a", Blast: &wire.BlastParams{Version: result.Version}},
		TCPMSSDefault:  1448,
		Streams:        []*result.StreamResult{up, down},
		Intervals:      ivs,
		CPU:            result.CPUUtil{Total: 99.5, User: 2.5, System: 97.0, UserSeconds: 0.05, SystemSeconds: 1.94},
		RemoteCPU:      result.CPUUtil{Total: 98.0, User: 2.0, System: 96.0, UserSeconds: 0.04, SystemSeconds: 1.92},
		HasRetransmits: true, RemoteHasRetransmits: true, Congestion: "cubic", RemoteCongestion: "cubic",
		Backend: "readwrite", RemoteBackend: "readwrite", RemoteVersion: result.Version,
	}
}

// serverP2 is the server's side of blast client -P 2 -t 2: it receives,
// the client's totals arrive with its results.
func serverP2() *result.Result {
	ivs := intervals(
		[]goldenIv{
			{socket: 6, id: 1, start: 0, end: 1.000301, calls: 14920, bytes: 602931200},
			{socket: 7, id: 2, start: 0, end: 1.000301, calls: 15014, bytes: 611057664},
		},
		[]goldenIv{
			{socket: 6, id: 1, start: 1.000301, end: 2.001012, calls: 15102, bytes: 598736896},
			{socket: 7, id: 2, start: 1.000301, end: 2.001012, calls: 14877, bytes: 606208000},
		},
	)
	r := &result.Result{
		Role: "server", Version: result.Version, SystemInfo: "Linux lab-b 6.12.0 #1 SMP x86_64", Time: goldenTime,
		Peer: addrPort(goldenClient, 50450), Cookie: "srvsrvsrvsrvsrvsrvsrvsrvsrvsrvsrvsr",
		Params:               wire.Params{TCP: true, Time: 2, Parallel: 2, Blast: &wire.BlastParams{Version: result.Version}},
		TCPMSSDefault:        1448,
		Intervals:            ivs,
		CPU:                  result.CPUUtil{Total: 61.0, User: 2.5, System: 58.5, UserSeconds: 0.05, SystemSeconds: 1.17},
		RemoteCPU:            result.CPUUtil{Total: 74.3, User: 1.8, System: 72.5, UserSeconds: 0.04, SystemSeconds: 1.45},
		RemoteHasRetransmits: true, Congestion: "cubic", RemoteCongestion: "cubic",
		Backend: "readwrite", RemoteBackend: "zerocopy", RemoteVersion: result.Version,
	}
	peer := []struct {
		bytes int64
		retr  int64
	}{{1201668096, 3}, {1217265664, 0}}
	for i, p := range peer {
		sr := streamFromIntervals(&result.StreamResult{ID: i + 1, Socket: 6 + i, Sender: false,
			Local: addrPort(goldenServer, 5201), Remote: addrPort(goldenClient, uint16(50452+i)),
			PeerBytes: p.bytes, PeerSeconds: 2.0, Retransmits: p.retr}, ivs)
		sr.PeerIO = &engine.Sample{Bytes: p.bytes, Calls: p.bytes / goldenBlock, MinIO: goldenBlock, MaxIO: goldenBlock}
		r.Streams = append(r.Streams, sr)
	}
	return r
}

// clientFailed is blast client -P 2 whose second stream was reset after
// 1.5 s: the peer's results never came.
func clientFailed() *result.Result {
	ivs := intervals(
		[]goldenIv{
			{socket: 5, id: 1, sender: true, start: 0, end: 1.000093, calls: 4120, retr: 0, cwnd: 655360, rtt: 600, minRTT: 70},
			{socket: 7, id: 2, sender: true, start: 0, end: 1.000093, calls: 4088, retr: 1, cwnd: 622592, rtt: 610, minRTT: 70},
		},
		[]goldenIv{
			{socket: 5, id: 1, sender: true, start: 1.000093, end: 1.503377, calls: 2051, retr: 0, cwnd: 688128, rtt: 590, minRTT: 70},
			{socket: 7, id: 2, sender: true, start: 1.000093, end: 1.503377, calls: 1530, retr: 6, cwnd: 14480, rtt: 4200, minRTT: 70},
		},
	)
	r := &result.Result{
		Role: "client", Version: result.Version, SystemInfo: "Linux lab-a 6.12.0 #1 SMP x86_64", Time: goldenTime,
		Peer: addrPort(goldenServer, 5201), Host: "198.18.0.2", Cookie: "failfailfailfailfailfailfailfailfail",
		Params:         wire.Params{TCP: true, Time: 10, Parallel: 2, Blast: &wire.BlastParams{Version: result.Version}},
		TCPMSSDefault:  1448,
		Intervals:      ivs,
		CPU:            result.CPUUtil{Total: 35.0, User: 1.0, System: 34.0, UserSeconds: 0.015, SystemSeconds: 0.51},
		HasRetransmits: true, Congestion: "cubic",
		Backend: "readwrite",
		Err:     errors.New("stream 2: write: connection reset by peer"),
	}
	for i := range 2 {
		r.Streams = append(r.Streams, streamFromIntervals(&result.StreamResult{ID: i + 1, Socket: 5 + 2*i, Sender: true,
			Local: addrPort(goldenClient, uint16(50460+i)), Remote: addrPort(goldenServer, 5201),
			PeerBytes: -1, PeerSeconds: -1, MaxSndCwnd: 688128, MaxSndWnd: 3 << 20, MinRTT: 590, MaxRTT: 4200, MeanRTT: 1500}, ivs))
	}
	return r
}

// clientNoIntervals is blast client -i 0 -n 1G: no interval reports, a
// byte-count test.
func clientNoIntervals() *result.Result {
	st := &result.StreamResult{ID: 1, Socket: 5, Sender: true,
		Local: addrPort(goldenClient, 50470), Remote: addrPort(goldenServer, 5201),
		Bytes: 1 << 30, Seconds: 0.912004, PeerBytes: 1 << 30, PeerSeconds: 0.914551, Retransmits: 0,
		MaxSndCwnd: 1048576, MaxSndWnd: 3 << 20, MinRTT: 120, MaxRTT: 480, MeanRTT: 300,
		IO: engine.Sample{Bytes: 1 << 30, Calls: 8192, MinIO: goldenBlock, MaxIO: goldenBlock}}
	return &result.Result{
		Role: "client", Version: result.Version, SystemInfo: "Linux lab-a 6.12.0 #1 SMP x86_64", Time: goldenTime,
		Peer: addrPort(goldenServer, 5201), Host: "198.18.0.2", Cookie: "nonononononononononononononononon0no",
		Params:         wire.Params{TCP: true, Num: 1 << 30, Parallel: 1, Blast: &wire.BlastParams{Version: result.Version}},
		TCPMSSDefault:  1448,
		Streams:        []*result.StreamResult{st},
		CPU:            result.CPUUtil{Total: 80.2, User: 2.2, System: 78.0, UserSeconds: 0.02, SystemSeconds: 0.71},
		RemoteCPU:      result.CPUUtil{Total: 90.1, User: 3.1, System: 87.0, UserSeconds: 0.03, SystemSeconds: 0.8},
		HasRetransmits: true, Congestion: "cubic", RemoteCongestion: "cubic",
		Backend: "readwrite", RemoteBackend: "readwrite", RemoteVersion: result.Version,
	}
}

// udpStream is one UDP stream of a golden test: ivs are this side's counts
// for each interval (a sender's datagrams sent; a receiver's growth of the
// highest sequence number, loss, out-of-order, duplicates and running
// jitter), peer the peer's totals from its results (nil: none came).
type udpStream struct {
	socket, id int
	sender     bool
	localPort  uint16
	ivs        []wire.UDPStats
	peer       *wire.UDPStats
	peerSecs   float64
}

// udpResult builds a UDP test's Result from its streams over the interval
// spans: datagrams of blockLen bytes; a receiver's bytes are the
// datagrams that arrived (duplicates too, as iperf3 counts them).
func udpResult(r *result.Result, blockLen int64, spans [][2]float64, streams []udpStream) *result.Result {
	server := r.Role == "server"
	bytesOf := func(u wire.UDPStats, sender bool) int64 {
		if sender {
			return u.Packets * blockLen
		}
		return (u.Packets - u.Lost + u.Duplicates) * blockLen
	}
	for i, sp := range spans {
		iv := &result.Interval{}
		for _, s := range streams {
			u := s.ivs[i]
			b := bytesOf(u, s.sender)
			iv.Streams = append(iv.Streams, result.StreamInterval{ID: s.id, Socket: s.socket, Sender: s.sender, Start: sp[0], End: sp[1],
				Bytes: b, Retransmits: -1, UDP: &u,
				IO: engine.Sample{Bytes: b, Datagrams: b / blockLen, Calls: b / blockLen, MinIO: blockLen, MaxIO: blockLen}})
		}
		r.Intervals = append(r.Intervals, iv)
	}
	for _, s := range streams {
		local, remote := addrPort(goldenClient, s.localPort), addrPort(goldenServer, 5201)
		if server {
			local, remote = addrPort(goldenServer, 5201), addrPort(goldenClient, s.localPort)
		}
		sr := streamFromIntervals(&result.StreamResult{ID: s.id, Socket: s.socket, Sender: s.sender, Local: local, Remote: remote,
			PeerBytes: -1, PeerSeconds: -1, Retransmits: -1}, r.Intervals)
		var tot wire.UDPStats
		for _, u := range s.ivs {
			tot.Packets += u.Packets
			tot.Lost += u.Lost
			tot.OutOfOrder += u.OutOfOrder
			tot.Duplicates += u.Duplicates
			tot.Jitter = u.Jitter
		}
		sr.UDP = &tot
		if s.peer != nil {
			p := *s.peer
			sr.PeerUDP = &p
			sr.PeerBytes, sr.PeerSeconds = bytesOf(p, !s.sender), s.peerSecs
		}
		r.Streams = append(r.Streams, sr)
	}
	return r
}

// udpClient and udpServer are the fixed parts of a UDP test's Result.
func udpClient(cookie string, p wire.Params) *result.Result {
	p.UDP, p.Blast = true, &wire.BlastParams{Version: result.Version}
	return &result.Result{
		Role: "client", Version: result.Version, SystemInfo: "Linux lab-a 6.12.0 #1 SMP x86_64", Time: goldenTime,
		Peer: addrPort(goldenServer, 5201), Host: "198.18.0.2", Cookie: cookie, Params: p, TCPMSSDefault: 1448,
		SndBufActual: 212992, RcvBufActual: 212992,
		CPU:       result.CPUUtil{Total: 12.4, User: 1.1, System: 11.3, UserSeconds: 0.02, SystemSeconds: 0.23},
		RemoteCPU: result.CPUUtil{Total: 9.8, User: 0.9, System: 8.9, UserSeconds: 0.02, SystemSeconds: 0.18},
		Backend:   "readwrite", RemoteBackend: "readwrite", RemoteVersion: result.Version,
	}
}

func udpServer(cookie string, p wire.Params) *result.Result {
	r := udpClient(cookie, p)
	r.Role, r.SystemInfo, r.Peer, r.Host = "server", "Linux lab-b 6.12.0 #1 SMP x86_64", addrPort(goldenClient, 50500), ""
	r.CPU, r.RemoteCPU = r.RemoteCPU, r.CPU
	return r
}

var udpSpans2 = [][2]float64{{0, 1.000083}, {1.000083, 2.000129}}

// udpClientP1 is blast client -u -b 10M -t 3 -l 1460 against a blast
// server that lost nothing.
func udpClientP1() *result.Result {
	r := udpClient("udp1udp1udp1udp1udp1udp1udp1udp1udp1", wire.Params{Time: 3, Parallel: 1, Len: 1460, Bandwidth: 10000000})
	return udpResult(r, 1460, [][2]float64{{0, 1.000061}, {1.000061, 2.000113}, {2.000113, 3.000042}}, []udpStream{
		{socket: 5, id: 1, sender: true, localPort: 50500,
			ivs:  []wire.UDPStats{{Packets: 856}, {Packets: 856}, {Packets: 856}},
			peer: &wire.UDPStats{Packets: 2568, Jitter: 0.0000213}, peerSecs: 3.000611},
	})
}

// udpClientP2Loss is blast client -u -P 2 -b 400M -t 2 -l 1460: the
// blast server lost datagrams on both streams, the last one of the
// second, and saw some out of order on the first (which iperf3's client
// does not print: it never learns the receiver's out-of-order count).
func udpClientP2Loss() *result.Result {
	r := udpClient("lossylossylossylossylossylossylossyl", wire.Params{Time: 2, Parallel: 2, Len: 1460, Bandwidth: 400000000})
	return udpResult(r, 1460, udpSpans2, []udpStream{
		{socket: 5, id: 1, sender: true, localPort: 50502,
			ivs:  []wire.UDPStats{{Packets: 17121}, {Packets: 17126}},
			peer: &wire.UDPStats{Packets: 34247, Lost: 412, OutOfOrder: 7, Jitter: 0.000183}, peerSecs: 2.000842},
		{socket: 7, id: 2, sender: true, localPort: 50503,
			ivs:  []wire.UDPStats{{Packets: 17118}, {Packets: 17122}},
			peer: &wire.UDPStats{Packets: 34239, Lost: 1389, Jitter: 0.000247}, peerSecs: 2.000842},
	})
}

// udpClientReverse is blast client -u -R -b 100M -t 2 -l 1460 against
// iperf3: the client receives, loses some and sees some out of order.
func udpClientReverse() *result.Result {
	r := udpClient("udpRudpRudpRudpRudpRudpRudpRudpRudpR", wire.Params{Time: 2, Parallel: 1, Len: 1460, Bandwidth: 100000000, Reverse: true})
	r.RemoteBackend, r.RemoteVersion = "", ""
	r.RemoteCPU.UserSeconds, r.RemoteCPU.SystemSeconds = 0, 0
	return udpResult(r, 1460, udpSpans2, []udpStream{
		{socket: 5, id: 1, localPort: 50504,
			ivs: []wire.UDPStats{
				{Packets: 8562, Lost: 31, OutOfOrder: 3, Jitter: 0.000412},
				{Packets: 8561, Lost: 12, OutOfOrder: 1, Jitter: 0.000388},
			},
			peer: &wire.UDPStats{Packets: 17124}, peerSecs: 2.000031},
	})
}

// udpClientReverseDups is blast client -u -R -b 10M -t 2 -l 1460 against
// a blast server whose datagrams arrived twice, some of them: iperf3's
// out-of-order line counts them, blast's own line tells them apart.
func udpClientReverseDups() *result.Result {
	r := udpClient("dupsdupsdupsdupsdupsdupsdupsdupsdups", wire.Params{Time: 2, Parallel: 1, Len: 1460, Bandwidth: 10000000, Reverse: true})
	return udpResult(r, 1460, udpSpans2, []udpStream{
		{socket: 5, id: 1, localPort: 50506,
			ivs: []wire.UDPStats{
				{Packets: 856, OutOfOrder: 1, Duplicates: 2, Jitter: 0.0000391},
				{Packets: 856, Duplicates: 3, Jitter: 0.0000288},
			},
			peer: &wire.UDPStats{Packets: 1712}, peerSecs: 2.000077},
	})
}

// udpClientBidir is blast client -u --bidir -P 2 -b 10M -t 2 -l 1460:
// two streams each way, the client's receivers lose a few datagrams.
func udpClientBidir() *result.Result {
	r := udpClient("bidubidubidubidubidubidubidubidubidu", wire.Params{Time: 2, Parallel: 2, Len: 1460, Bandwidth: 10000000, Bidirectional: true})
	return udpResult(r, 1460, udpSpans2, []udpStream{
		{socket: 5, id: 1, sender: true, localPort: 50508,
			ivs:  []wire.UDPStats{{Packets: 856}, {Packets: 857}},
			peer: &wire.UDPStats{Packets: 1713, Jitter: 0.000051}, peerSecs: 2.000702},
		{socket: 7, id: 2, sender: true, localPort: 50509,
			ivs:  []wire.UDPStats{{Packets: 856}, {Packets: 856}},
			peer: &wire.UDPStats{Packets: 1712, Lost: 1, Jitter: 0.000063}, peerSecs: 2.000702},
		{socket: 9, id: 3, localPort: 50510,
			ivs:  []wire.UDPStats{{Packets: 856, Lost: 2, Jitter: 0.000072}, {Packets: 856, Jitter: 0.000066}},
			peer: &wire.UDPStats{Packets: 1712}, peerSecs: 2.000098},
		{socket: 11, id: 4, localPort: 50511,
			ivs:  []wire.UDPStats{{Packets: 855, Jitter: 0.000081}, {Packets: 857, Lost: 5, OutOfOrder: 2, Jitter: 0.000094}},
			peer: &wire.UDPStats{Packets: 1712}, peerSecs: 2.000098},
	})
}

// udpServerP2 is the server's side of blast client -u -P 2 -b 1G -t 2
// -l 1460: it receives, loses datagrams, sees some out of order and one
// stream's twice. It prints its summary as iperf3 does, before the
// client's totals (which its JSON has).
func udpServerP2() *result.Result {
	r := udpServer("srvusrvusrvusrvusrvusrvusrvusrvusrvu", wire.Params{Time: 2, Parallel: 2, Len: 1460, Bandwidth: 1000000000})
	return udpResult(r, 1460, udpSpans2, []udpStream{
		{socket: 6, id: 1, localPort: 50512,
			ivs: []wire.UDPStats{
				{Packets: 42808, Lost: 1204, OutOfOrder: 15, Jitter: 0.000021},
				{Packets: 42803, Lost: 988, OutOfOrder: 4, Jitter: 0.000019},
			},
			peer: &wire.UDPStats{Packets: 85612}, peerSecs: 2.000011},
		{socket: 7, id: 2, localPort: 50513,
			ivs: []wire.UDPStats{
				{Packets: 42799, Lost: 2210, Jitter: 0.000033},
				{Packets: 42811, Lost: 1876, Duplicates: 6, Jitter: 0.000029},
			},
			peer: &wire.UDPStats{Packets: 85610}, peerSecs: 2.000011},
	})
}

// udpServerReverse is the server's side of blast client -u -R -b 10M -t 2
// -l 1460: it sends, and prints only its sender line.
func udpServerReverse() *result.Result {
	r := udpServer("srvRsrvRsrvRsrvRsrvRsrvRsrvRsrvRsrvR", wire.Params{Time: 2, Parallel: 1, Len: 1460, Bandwidth: 10000000, Reverse: true})
	return udpResult(r, 1460, udpSpans2, []udpStream{
		{socket: 6, id: 1, sender: true, localPort: 50514,
			ivs:  []wire.UDPStats{{Packets: 856}, {Packets: 856}},
			peer: &wire.UDPStats{Packets: 1712, Lost: 3, Jitter: 0.000044}, peerSecs: 2.000164},
	})
}

// udpServerBidir is the server's side of blast client -u --bidir -b 10M
// -t 2 -l 1460: its receiver first, then its sender.
func udpServerBidir() *result.Result {
	r := udpServer("srvBsrvBsrvBsrvBsrvBsrvBsrvBsrvBsrvB", wire.Params{Time: 2, Parallel: 1, Len: 1460, Bandwidth: 10000000, Bidirectional: true})
	return udpResult(r, 1460, udpSpans2, []udpStream{
		{socket: 6, id: 1, localPort: 50516,
			ivs:  []wire.UDPStats{{Packets: 856, Jitter: 0.000047}, {Packets: 856, Lost: 1, Jitter: 0.000052}},
			peer: &wire.UDPStats{Packets: 1712}, peerSecs: 2.000066},
		{socket: 7, id: 2, sender: true, localPort: 50517,
			ivs:  []wire.UDPStats{{Packets: 856}, {Packets: 856}},
			peer: &wire.UDPStats{Packets: 1712, Jitter: 0.000039}, peerSecs: 2.000133},
	})
}

var goldenResults = []struct {
	name string
	r    func() *result.Result
}{
	{"client-p1", clientP1},
	{"client-p3-omit-window", clientP3},
	{"client-reverse-iperf3", clientReverse},
	{"client-bidir-title", clientBidir},
	{"server-p2", serverP2},
	{"client-failed", clientFailed},
	{"client-no-intervals", clientNoIntervals},
	{"udp-client-p1", udpClientP1},
	{"udp-client-p2-loss", udpClientP2Loss},
	{"udp-client-reverse-iperf3", udpClientReverse},
	{"udp-client-reverse-dups", udpClientReverseDups},
	{"udp-client-bidir-p2", udpClientBidir},
	{"udp-server-p2", udpServerP2},
	{"udp-server-reverse", udpServerReverse},
	{"udp-server-bidir", udpServerBidir},
}

func TestTextGolden(t *testing.T) {
	for _, tc := range goldenResults {
		t.Run(tc.name, func(t *testing.T) {
			golden.Check(t, "testdata/golden/"+tc.name+".txt", TextString(tc.r()))
		})
	}
}

func TestJSONGolden(t *testing.T) {
	for _, tc := range goldenResults {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := EncodeJSON(&b, tc.r()); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "testdata/golden/"+tc.name+".json", b.String())
		})
	}
}

// clientP4Reverse is blast client -P 4 -R -t 2 against a blast server that
// reported its retransmits: four receiving streams and their sums.
func clientP4Reverse() *result.Result {
	var first, second []goldenIv
	for i := range 4 {
		first = append(first, goldenIv{socket: 5 + 2*i, id: i + 1, start: 0, end: 1.000211, calls: 5100 + int64(i), bytes: 290713600 + int64(i)*131072})
		second = append(second, goldenIv{socket: 5 + 2*i, id: i + 1, start: 1.000211, end: 2.000043, calls: 5200 - int64(i), bytes: 298647552 - int64(i)*65536})
	}
	ivs := intervals(first, second)
	r := &result.Result{
		Role: "client", Version: result.Version, SystemInfo: "Linux lab-a 6.12.0 #1 SMP x86_64", Time: goldenTime,
		Peer: addrPort(goldenServer, 5201), Host: "198.18.0.2", Cookie: "p4p4p4p4p4p4p4p4p4p4p4p4p4p4p4p4p4p4",
		Params:               wire.Params{TCP: true, Time: 2, Parallel: 4, Reverse: true, Blast: &wire.BlastParams{Version: result.Version}},
		TCPMSSDefault:        1448,
		Intervals:            ivs,
		CPU:                  result.CPUUtil{Total: 41.5, User: 1.9, System: 39.6},
		RemoteCPU:            result.CPUUtil{Total: 71.25, User: 2.5, System: 68.75},
		RemoteHasRetransmits: true, Congestion: "cubic", RemoteCongestion: "cubic",
		Backend: "readwrite", RemoteBackend: "readwrite", RemoteVersion: result.Version,
	}
	for i := range 4 {
		st := streamFromIntervals(&result.StreamResult{ID: i + 1, Socket: 5 + 2*i, Sender: false,
			Local: addrPort(goldenClient, uint16(50440+i)), Remote: addrPort(goldenServer, 5201),
			PeerBytes: 589430784 + int64(i)*1048576, PeerSeconds: 2.000011 + float64(i)/1e6, Retransmits: int64(3 * i),
			PeerTCP: &wire.TCPSummary{MaxSndCwnd: 1048576 + int64(i)*4096, MinRTT: 40 + int64(i), MeanRTT: 300 + int64(i)}}, ivs)
		r.Streams = append(r.Streams, st)
	}
	return r
}

// udpClientP4Loss is blast client -u -P 4 -b 100M -t 2 against a blast
// server whose receivers lost and reordered some datagrams.
func udpClientP4Loss() *result.Result {
	r := udpClient("udp4udp4udp4udp4udp4udp4udp4udp4udp4", wire.Params{Time: 2, Parallel: 4, Len: 1460, Bandwidth: 100000000})
	var streams []udpStream
	for i := range 4 {
		n := int64(4280 + i)
		streams = append(streams, udpStream{socket: 5 + 2*i, id: i + 1, sender: true, localPort: uint16(50520 + i),
			ivs:  []wire.UDPStats{{Packets: n}, {Packets: n + 1}},
			peer: &wire.UDPStats{Packets: 2*n + 1, Lost: int64(7 * i), OutOfOrder: int64(i % 2), Duplicates: int64(i / 3), Jitter: 0.000051 + float64(i)*0.000013}, peerSecs: 2.000702})
	}
	return udpResult(r, 1460, udpSpans2, streams)
}

// serverP4NoPeer is a blast server's -P 4 test whose client went away
// before it sent its results: the server's own receiving counts only.
func serverP4NoPeer() *result.Result {
	var first, second []goldenIv
	for i := range 4 {
		first = append(first, goldenIv{socket: 5 + i, id: i + 1, start: 0, end: 1.000042, calls: 4000 + int64(i), bytes: 280000000 + int64(i)*1448})
		second = append(second, goldenIv{socket: 5 + i, id: i + 1, start: 1.000042, end: 2.000091, calls: 4100 - int64(i), bytes: 281000000 - int64(i)*2896})
	}
	ivs := intervals(first, second)
	r := &result.Result{
		Role: "server", Version: result.Version, SystemInfo: "Linux lab-b 6.12.0 #1 SMP x86_64", Time: goldenTime,
		Peer: addrPort(goldenClient, 50430), Cookie: "nopeernopeernopeernopeernopeernopeer",
		Params:        wire.Params{TCP: true, Time: 2, Parallel: 4, Blast: &wire.BlastParams{Version: result.Version}},
		TCPMSSDefault: 1448,
		Intervals:     ivs,
		CPU:           result.CPUUtil{Total: 33.3, User: 1.2, System: 32.1},
		Backend:       "readwrite",
		Err:           errors.New("control connection: EOF"),
	}
	for i := range 4 {
		st := streamFromIntervals(&result.StreamResult{ID: i + 1, Socket: 5 + i, Sender: false,
			Local: addrPort(goldenServer, 5201), Remote: addrPort(goldenClient, uint16(50431+i)),
			PeerBytes: -1, PeerSeconds: -1, Retransmits: -1}, ivs)
		r.Streams = append(r.Streams, st)
	}
	return r
}

// goldenP4 are the -P 4 cases, pinned before the renderers moved onto one
// summary.
var goldenP4 = []struct {
	name string
	r    func() *result.Result
}{
	{"client-p4-reverse", clientP4Reverse},
	{"udp-client-p4-loss", udpClientP4Loss},
	{"server-p4-no-peer", serverP4NoPeer},
}

func init() { goldenResults = append(goldenResults, goldenP4...) }
