package render

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/internal/hostload"
	"github.com/blastnet/blast/internal/verify"
	"github.com/blastnet/blast/nicinfo"
	"github.com/blastnet/blast/pathinfo"
)

// The -J document, in iperf3's schema and key order (iperf_api.c), with
// blast's additions under "blast" keys.
type jsonDoc struct {
	Start            jsonStart       `json:"start"`
	Intervals        []jsonInterval  `json:"intervals"`
	End              jsonEnd         `json:"end"`
	Title            string          `json:"title,omitempty"`
	ExtraData        string          `json:"extra_data,omitempty"`
	ServerOutputJSON json.RawMessage `json:"server_output_json,omitempty"`
	ServerOutputText string          `json:"server_output_text,omitempty"`
	Error            string          `json:"error,omitempty"`
}

type jsonConnected struct {
	Socket     int    `json:"socket"`
	LocalHost  string `json:"local_host"`
	LocalPort  int    `json:"local_port"`
	RemoteHost string `json:"remote_host"`
	RemotePort int    `json:"remote_port"`
}

type jsonHostPort struct {
	Host string `json:"host"`
	Port int    `json:"port"`
}

type jsonStart struct {
	Connected          []jsonConnected `json:"connected"`
	Version            string          `json:"version"`
	SystemInfo         string          `json:"system_info"`
	Timestamp          jsonTimestamp   `json:"timestamp"`
	ConnectingTo       *jsonHostPort   `json:"connecting_to,omitempty"`
	AcceptedConnection *jsonHostPort   `json:"accepted_connection,omitempty"`
	Cookie             string          `json:"cookie"`
	TCPMSSDefault      *int            `json:"tcp_mss_default,omitempty"` // TCP only
	TargetBitrate      int64           `json:"target_bitrate"`
	SockBufSize        int             `json:"sock_bufsize"`
	SndBufActual       int             `json:"sndbuf_actual"`
	RcvBufActual       int             `json:"rcvbuf_actual"`
	TestStart          jsonTestStart   `json:"test_start"`
	Blast              jsonStartBlast  `json:"blast"`
}

type jsonTimestamp struct {
	Time     string `json:"time"`
	TimeSecs int64  `json:"timesecs"`
}

type jsonTestStart struct {
	Protocol      string `json:"protocol"`
	NumStreams    int    `json:"num_streams"`
	BlkSize       int    `json:"blksize"`
	Omit          int    `json:"omit"`
	Duration      int    `json:"duration"`
	Bytes         int64  `json:"bytes"`
	Blocks        int64  `json:"blocks"`
	Reverse       int    `json:"reverse"`
	TOS           int    `json:"tos"`
	TargetBitrate int64  `json:"target_bitrate"`
	Bidir         int    `json:"bidir"`
}

type jsonStartBlast struct {
	Version string `json:"version"`
	Backend string `json:"backend"`
	Role    string `json:"role"`
}

type jsonInterval struct {
	Streams         []jsonIntervalStream `json:"streams"`
	Sum             *jsonSum             `json:"sum,omitempty"`
	SumBidirReverse *jsonSum             `json:"sum_bidir_reverse,omitempty"`
	Blast           *jsonIntervalBlast   `json:"blast,omitempty"`
}

// jsonIntervalBlast is blast's addition to an interval: the host's load
// (--sys).
type jsonIntervalBlast struct {
	Host *hostload.Load `json:"host"`
}

type jsonIntervalStream struct {
	Socket        int     `json:"socket"`
	Start         float64 `json:"start"`
	End           float64 `json:"end"`
	Seconds       float64 `json:"seconds"`
	Bytes         int64   `json:"bytes"`
	BitsPerSecond float64 `json:"bits_per_second"`
	Retransmits   *int64  `json:"retransmits,omitempty"`
	SndCwnd       *int64  `json:"snd_cwnd,omitempty"`
	SndWnd        *int64  `json:"snd_wnd,omitempty"`
	RTT           *int64  `json:"rtt,omitempty"`
	RTTVar        *int64  `json:"rttvar,omitempty"`
	PMTU          *int64  `json:"pmtu,omitempty"`
	// UDP: a receiving stream has all four, a sending one packets only.
	JitterMS    *float64         `json:"jitter_ms,omitempty"`
	LostPackets *int64           `json:"lost_packets,omitempty"`
	Packets     *int64           `json:"packets,omitempty"`
	LostPercent *float64         `json:"lost_percent,omitempty"`
	Omitted     bool             `json:"omitted"`
	Sender      bool             `json:"sender"`
	Blast       *jsonStreamBlast `json:"blast,omitempty"`
}

type jsonStreamBlast struct {
	ID           int            `json:"id"`
	MinRTT       *int64         `json:"min_rtt,omitempty"`
	PacingRate   *int64         `json:"pacing_rate,omitempty"`   // bytes/s
	DeliveryRate *int64         `json:"delivery_rate,omitempty"` // bytes/s
	Reordering   *int64         `json:"reordering,omitempty"`
	IO           *engine.Sample `json:"io,omitempty"`
	// UDP is a receiving UDP stream's datagrams of the interval, with the
	// duplicates iperf3 counts as out of order apart.
	UDP *wire.UDPStats `json:"udp,omitempty"`
}

type jsonSum struct {
	Start         float64 `json:"start"`
	End           float64 `json:"end"`
	Seconds       float64 `json:"seconds"`
	Bytes         int64   `json:"bytes"`
	BitsPerSecond float64 `json:"bits_per_second"`
	Retransmits   *int64  `json:"retransmits,omitempty"`
	// UDP: as in jsonIntervalStream.
	JitterMS    *float64 `json:"jitter_ms,omitempty"`
	LostPackets *int64   `json:"lost_packets,omitempty"`
	Packets     *int64   `json:"packets,omitempty"`
	LostPercent *float64 `json:"lost_percent,omitempty"`
	Omitted     *bool    `json:"omitted,omitempty"`
	Sender      bool     `json:"sender"`
}

// jsonEndStream is one stream of the summary: a sender and a receiver
// object on TCP, one udp object holding both views on UDP.
type jsonEndStream struct {
	Sender   *jsonEndSide  `json:"sender,omitempty"`
	DiskFile *jsonDiskFile `json:"diskfile,omitempty"`
	Receiver *jsonEndSide  `json:"receiver,omitempty"`
	UDP      *jsonEndUDP   `json:"udp,omitempty"`
}

// jsonDiskFile is iperf3's summary of a stream's -F file.
type jsonDiskFile struct {
	Sent            int64  `json:"sent"`
	Received        int64  `json:"received"`
	Size            int64  `json:"size"`
	PercentSent     int64  `json:"percent_sent"`
	PercentReceived int64  `json:"percent_received"`
	Filename        string `json:"filename"`
}

// jsonEndUDP is iperf3's "udp" summary of one stream: the sender's bytes
// and time, the receiver's jitter and loss, the sender's datagram count
// where known (the receiver's otherwise), the loss as a share of the
// datagrams sent.
type jsonEndUDP struct {
	Socket        int     `json:"socket"`
	Start         float64 `json:"start"`
	End           float64 `json:"end"`
	Seconds       float64 `json:"seconds"`
	Bytes         int64   `json:"bytes"`
	BitsPerSecond float64 `json:"bits_per_second"`
	JitterMS      float64 `json:"jitter_ms"`
	LostPackets   int64   `json:"lost_packets"`
	Packets       int64   `json:"packets"`
	LostPercent   float64 `json:"lost_percent"`
	OutOfOrder    int64   `json:"out_of_order"`
	Sender        bool    `json:"sender"`
}

type jsonEndSide struct {
	Socket        int     `json:"socket"`
	Start         float64 `json:"start"`
	End           float64 `json:"end"`
	Seconds       float64 `json:"seconds"`
	Bytes         int64   `json:"bytes"`
	BitsPerSecond float64 `json:"bits_per_second"`
	Retransmits   *int64  `json:"retransmits,omitempty"`
	MaxSndCwnd    *int64  `json:"max_snd_cwnd,omitempty"`
	MaxSndWnd     *int64  `json:"max_snd_wnd,omitempty"`
	MaxRTT        *int64  `json:"max_rtt,omitempty"`
	MinRTT        *int64  `json:"min_rtt,omitempty"`
	MeanRTT       *int64  `json:"mean_rtt,omitempty"`
	Sender        bool    `json:"sender"`
}

type jsonEnd struct {
	Streams                 []jsonEndStream `json:"streams"`
	Sum                     *jsonSum        `json:"sum,omitempty"` // UDP only
	SumSent                 *jsonSum        `json:"sum_sent,omitempty"`
	SumReceived             *jsonSum        `json:"sum_received,omitempty"`
	SumBidirReverse         *jsonSum        `json:"sum_bidir_reverse,omitempty"` // UDP only
	SumSentBidirReverse     *jsonSum        `json:"sum_sent_bidir_reverse,omitempty"`
	SumReceivedBidirReverse *jsonSum        `json:"sum_received_bidir_reverse,omitempty"`
	CPU                     jsonCPU         `json:"cpu_utilization_percent"`
	SenderTCPCongestion     string          `json:"sender_tcp_congestion,omitempty"`
	ReceiverTCPCongestion   string          `json:"receiver_tcp_congestion,omitempty"`
	Blast                   jsonEndBlast    `json:"blast"`
}

type jsonCPU struct {
	HostTotal    float64 `json:"host_total"`
	HostUser     float64 `json:"host_user"`
	HostSystem   float64 `json:"host_system"`
	RemoteTotal  float64 `json:"remote_total"`
	RemoteUser   float64 `json:"remote_user"`
	RemoteSystem float64 `json:"remote_system"`
}

type jsonEndBlast struct {
	Backend       string           `json:"backend"`
	RemoteBackend string           `json:"remote_backend,omitempty"`
	RemoteVersion string           `json:"remote_version,omitempty"`
	Notes         []string         `json:"notes,omitempty"`
	NIC           *nicinfo.Result  `json:"nic,omitempty"`
	RemoteNIC     *nicinfo.Result  `json:"remote_nic,omitempty"`
	RemoteErrors  []string         `json:"remote_errors,omitempty"`
	Streams       []jsonEndStreamB `json:"streams"`
	// Host is this side's host load over the test (--sys), RemoteHost
	// and RemoteHostIntervals the peer's.
	Host                *hostload.Load  `json:"host,omitempty"`
	RemoteHost          *hostload.Load  `json:"remote_host,omitempty"`
	RemoteHostIntervals []hostload.Load `json:"remote_host_intervals,omitempty"`
	// Findings are the path and transport findings (D14 and up, D7);
	// Path and RemotePath the path facts they were judged on.
	Findings   []finding.Finding `json:"findings,omitempty"`
	Path       *pathinfo.Delta   `json:"path,omitempty"`
	RemotePath *pathinfo.Delta   `json:"remote_path,omitempty"`
	// Pauses and RemotePauses are each side's stop-the-world pauses
	// over the test.
	Pauses       *engine.Pauses `json:"stw_pauses,omitempty"`
	RemotePauses *engine.Pauses `json:"remote_stw_pauses,omitempty"`
}

type jsonEndStreamB struct {
	ID        int                `json:"id"`
	Socket    int                `json:"socket"`
	Sender    bool               `json:"sender"`
	IO        engine.Sample      `json:"io"`
	PeerIO    *engine.Sample     `json:"peer_io,omitempty"`
	Facts     *engine.FactSample `json:"facts,omitempty"`
	PeerFacts *engine.FactSample `json:"peer_facts,omitempty"`
	// UDP and PeerUDP are the datagram counts of a UDP stream here and
	// at the peer (StreamResult.UDP, PeerUDP), duplicates apart.
	UDP     *wire.UDPStats `json:"udp,omitempty"`
	PeerUDP *wire.UDPStats `json:"peer_udp,omitempty"`
	// Verify and PeerVerify are what the receiver here and at the peer
	// found with --verify (StreamResult.Verify, PeerVerify).
	Verify     *verify.Counts `json:"verify,omitempty"`
	PeerVerify *verify.Counts `json:"peer_verify,omitempty"`
	// Drained and PeerDrained are what the receiver here and at the
	// peer got after a time-limited test's end (StreamResult.Drained).
	Drained     *wire.Drained `json:"drained,omitempty"`
	PeerDrained *wire.Drained `json:"peer_drained,omitempty"`
	// Thread and PeerThread are how the stream's data ran here and at
	// the peer: free or locked, CPU, run-queue wait, context switches.
	Thread     *wire.ThreadTimes `json:"thread,omitempty"`
	PeerThread *wire.ThreadTimes `json:"peer_thread,omitempty"`
}

func i64(v int64) *int64 { return &v }

func f64(v float64) *float64 { return &v }

// JSONDoc is r's -J document, for a caller that encodes it itself (a
// blast server's log line).
func JSONDoc(r *result.Result) any { return jsonOf(r) }

// jsonOf builds the -J document of r.
func jsonOf(r *result.Result) *jsonDoc {
	d := &jsonDoc{Title: r.Params.Title, ExtraData: r.Params.ExtraData}
	if r.Role == "client" && r.Params.GetServerOutput != 0 {
		// iperf3 shows the server's report only to a client that asked.
		d.ServerOutputJSON, d.ServerOutputText = r.ServerOutputJSON, r.ServerOutputText
	}
	if r.Err != nil {
		d.Error = r.Err.Error()
	}
	d.Start = *jsonStartOf(r)
	d.Intervals = []jsonInterval{}
	for _, iv := range r.Intervals {
		d.Intervals = append(d.Intervals, jsonIntervalOf(r, iv))
	}
	d.End = *jsonEndOf(r)
	return d
}

// jsonStartOf is the "start" object of r's -J document.
func jsonStartOf(r *result.Result) *jsonStart {
	s := &jsonStart{}
	s.Connected = []jsonConnected{}
	for _, st := range r.Streams {
		s.Connected = append(s.Connected, jsonConnected{st.Socket, st.Local.Addr().String(), int(st.Local.Port()), st.Remote.Addr().String(), int(st.Remote.Port())})
	}
	s.Version, s.SystemInfo = r.Version, r.SystemInfo
	// iperf3's strftime("%a, %d %b %Y %H:%M:%S %Z") of gmtime says GMT.
	s.Timestamp = jsonTimestamp{r.Time.UTC().Format(rfc1123GMT), r.Time.Unix()}
	hp := &jsonHostPort{r.Peer.Addr().String(), int(r.Peer.Port())}
	if r.Role == "client" {
		if r.Host != "" {
			hp.Host = r.Host
		}
		s.ConnectingTo = hp
	} else {
		s.AcceptedConnection = hp
	}
	s.Cookie = r.Cookie
	if !r.UDP() {
		mss := r.TCPMSSDefault
		s.TCPMSSDefault = &mss
	}
	s.TargetBitrate = int64(r.Params.Bandwidth)
	s.SockBufSize, s.SndBufActual, s.RcvBufActual = r.SockBufSize, r.SndBufActual, r.RcvBufActual
	s.TestStart = jsonTestStart{Protocol: "TCP", NumStreams: r.NumStreams(), BlkSize: r.Params.BlockLen(),
		Omit: int(r.Params.Omit), Duration: int(r.Params.Time), Bytes: int64(r.Params.Num), Blocks: int64(r.Params.BlockCount),
		TOS: int(r.Params.TOS), TargetBitrate: int64(r.Params.Bandwidth)}
	if r.UDP() {
		s.TestStart.Protocol = "UDP"
	}
	if r.Reverse() {
		s.TestStart.Reverse = 1
	}
	if r.Bidir() {
		s.TestStart.Bidir = 1
	}
	s.Blast = jsonStartBlast{Version: result.Version, Backend: r.Backend, Role: r.Role}
	return s
}

// jsonIntervalOf is one element of the "intervals" array.
func jsonIntervalOf(r *result.Result, iv *result.Interval) jsonInterval {
	ji := jsonInterval{Streams: []jsonIntervalStream{}}
	if iv.Load != nil {
		ji.Blast = &jsonIntervalBlast{Host: iv.Load}
	}
	for _, d := range result.SummarizeInterval(r, iv).Dirs {
		for _, si := range d.Streams {
			ji.Streams = append(ji.Streams, jsonIntervalStreamOf(r, si))
		}
		om := iv.Omitted
		sum := jsonSum{Start: d.Start, End: d.End, Seconds: d.Seconds(), Bytes: d.Bytes, BitsPerSecond: 8 * result.Rate(d.Bytes, d.Seconds()),
			Sender: d.Sender, Omitted: &om}
		switch u := d.UDP; {
		case r.UDP() && d.Sender:
			sum.Packets = i64(u.Packets)
		case r.UDP():
			sum.JitterMS, sum.LostPackets, sum.Packets, sum.LostPercent = f64(1000*u.Jitter), i64(u.Lost), i64(u.Packets), f64(lostPercent(u.Lost, u.Packets))
		case d.Sender && r.HasRetransmits:
			sum.Retransmits = i64(d.Retransmits)
		}
		if d.Reverse {
			ji.SumBidirReverse = &sum
		} else {
			ji.Sum = &sum
		}
	}
	return ji
}

// jsonIntervalStreamOf is one stream of an interval.
func jsonIntervalStreamOf(r *result.Result, si *result.StreamInterval) jsonIntervalStream {
	js := jsonIntervalStream{Socket: si.Socket, Start: si.Start, End: si.End, Seconds: si.Seconds(),
		Bytes: si.Bytes, BitsPerSecond: 8 * result.Rate(si.Bytes, si.Seconds()), Omitted: si.Omitted, Sender: si.Sender,
		Blast: &jsonStreamBlast{ID: si.ID}}
	io := si.IO
	js.Blast.IO = &io
	if t := si.TCP; t != nil {
		js.Retransmits, js.SndCwnd, js.SndWnd = i64(si.Retransmits), i64(t.SndCwnd), i64(t.SndWnd)
		js.RTT, js.RTTVar, js.PMTU = i64(t.RTT), i64(t.RTTVar), i64(t.PMTU)
		js.Blast.MinRTT, js.Blast.PacingRate, js.Blast.DeliveryRate, js.Blast.Reordering = i64(t.MinRTT), i64(t.PacingRate), i64(t.DeliveryRate), i64(t.Reordering)
	}
	if r.UDP() {
		u := result.UDPOf(si.UDP)
		if si.Sender {
			js.Packets = i64(u.Packets)
		} else {
			js.JitterMS, js.LostPackets, js.Packets, js.LostPercent = f64(1000*u.Jitter), i64(u.Lost), i64(u.Packets), f64(lostPercent(u.Lost, u.Packets))
			js.Blast.UDP = &u
		}
	}
	return js
}

// jsonEndOf is the "end" object of r's -J document.
func jsonEndOf(r *result.Result) *jsonEnd {
	e := &jsonEnd{}
	e.Streams = []jsonEndStream{}
	if r.UDP() {
		jsonEndUDPOf(r, e)
	} else {
		jsonEndTCPOf(r, e)
	}
	e.CPU = jsonCPU{r.CPU.Total, r.CPU.User, r.CPU.System, r.RemoteCPU.Total, r.RemoteCPU.User, r.RemoteCPU.System}
	snd, rcv := r.Congestion, r.RemoteCongestion
	if !r.LocalSends() {
		snd, rcv = rcv, snd
	}
	if !r.UDP() {
		e.SenderTCPCongestion, e.ReceiverTCPCongestion = snd, rcv
	}
	e.Blast = jsonEndBlast{Backend: r.Backend, RemoteBackend: r.RemoteBackend, RemoteVersion: r.RemoteVersion, RemoteErrors: r.RemoteErrors, Notes: r.Notes, NIC: r.NIC, RemoteNIC: r.RemoteNIC, Streams: []jsonEndStreamB{},
		Host: r.Load, RemoteHost: r.RemoteLoad, RemoteHostIntervals: r.RemoteLoadIntervals,
		Findings: r.Findings, Path: r.Path, RemotePath: r.RemotePath, Pauses: r.CPU.Pauses, RemotePauses: r.RemoteCPU.Pauses}
	for _, st := range r.Streams {
		jb := jsonEndStreamB{ID: st.ID, Socket: st.Socket, Sender: st.Sender, IO: st.IO, PeerIO: st.PeerIO, PeerFacts: st.PeerFacts, UDP: st.UDP, PeerUDP: st.PeerUDP,
			Verify: st.Verify, PeerVerify: st.PeerVerify, Drained: st.Drained, PeerDrained: st.PeerDrained, Thread: st.Thread, PeerThread: st.PeerThread}
		if len(st.Facts.Counts) > 0 || len(st.Facts.Notes) > 0 {
			f := st.Facts
			jb.Facts = &f
		}
		e.Blast.Streams = append(e.Blast.Streams, jb)
	}
	return e
}

// jsonEndTCPOf fills the streams and sums of a TCP test's summary.
func jsonEndTCPOf(r *result.Result, e *jsonEnd) {
	for _, d := range result.Summarize(r).Dirs {
		if d.Empty() {
			continue
		}
		for _, ss := range d.Streams {
			e.Streams = append(e.Streams, jsonEndTCPStream(r, &d, &ss))
		}
		sent := jsonSum{End: d.Sent.Seconds, Seconds: d.Sent.Seconds, Bytes: d.Sent.Bytes, BitsPerSecond: 8 * result.Rate(d.Sent.Bytes, d.Sent.Seconds), Sender: d.Sender}
		recv := jsonSum{End: d.Received.Seconds, Seconds: d.Received.Seconds, Bytes: d.Received.Bytes, BitsPerSecond: 8 * result.Rate(d.Received.Bytes, d.Received.Seconds), Sender: d.Sender}
		if d.Retransmits {
			sent.Retransmits = i64(d.Sent.Retransmits)
		}
		if d.Reverse {
			e.SumSentBidirReverse, e.SumReceivedBidirReverse = &sent, &recv
		} else {
			e.SumSent, e.SumReceived = &sent, &recv
		}
	}
}

// jsonEndTCPStream is one stream of a TCP test's summary: its sender's
// and its receiver's view (a view not known reads 0 bytes).
func jsonEndTCPStream(r *result.Result, d *result.DirSummary, ss *result.StreamSummary) jsonEndStream {
	sb, secs := max(ss.Sent.Bytes, 0), max(ss.Sent.Seconds, 0)
	rb, rs := max(ss.Received.Bytes, 0), max(ss.Received.Seconds, 0)
	es := jsonEndStream{
		Sender:   &jsonEndSide{Socket: ss.Socket, End: secs, Seconds: secs, Bytes: sb, BitsPerSecond: 8 * result.Rate(sb, secs), Sender: d.Sender},
		Receiver: &jsonEndSide{Socket: ss.Socket, End: rs, Seconds: rs, Bytes: rb, BitsPerSecond: 8 * result.Rate(rb, rs), Sender: d.Sender},
	}
	if d.Retransmits {
		es.Sender.Retransmits = i64(max(ss.Retransmits, 0))
		// A client's -R (or --bidir) sender is the server, which keeps
		// its TCP_INFO to itself: iperf3's client writes the keys with
		// zeros.
		if ss.StreamResult.Sender || r.Role == "client" {
			var cwnd, wnd, maxRTT, minRTT, meanRTT int64
			if ss.StreamResult.Sender {
				cwnd, wnd, maxRTT, minRTT, meanRTT = ss.MaxSndCwnd, ss.MaxSndWnd, ss.MaxRTT, ss.MinRTT, ss.MeanRTT
			}
			es.Sender.MaxSndCwnd, es.Sender.MaxSndWnd = i64(cwnd), i64(wnd)
			es.Sender.MaxRTT, es.Sender.MinRTT, es.Sender.MeanRTT = i64(maxRTT), i64(minRTT), i64(meanRTT)
		}
	}
	if r.File != nil {
		es.DiskFile = jsonDiskFileOf(r.File, sb, rb)
	}
	return es
}

// jsonDiskFileOf is iperf3's diskfile object: the bytes sent and
// received as shares of the file's size (100 for an empty file).
func jsonDiskFileOf(f *result.DiskFile, sent, received int64) *jsonDiskFile {
	d := &jsonDiskFile{Sent: sent, Received: received, Size: f.Size, PercentSent: 100, PercentReceived: 100, Filename: f.Name}
	if f.Size > 0 {
		d.PercentSent = int64(float64(sent) / float64(f.Size) * 100)
		d.PercentReceived = int64(float64(received) / float64(f.Size) * 100)
	}
	return d
}

// jsonEndUDPOf fills the streams and sums of a UDP test's summary as
// iperf_print_results does: one "udp" object a stream; per direction a
// "sum" (the receiver's time and loss over the sender's bytes, rate and
// datagrams), a "sum_sent" and a "sum_received", the last two always
// marked sender true and false. Where the peer's figures are not known
// the sender's time falls back to the receiver's, as in iperf3 (View),
// and counts to 0.
func jsonEndUDPOf(r *result.Result, e *jsonEnd) {
	for _, d := range result.Summarize(r).Dirs {
		if d.Empty() {
			continue
		}
		for _, ss := range d.Streams {
			sb, secs := max(ss.Sent.Bytes, 0), ss.Sent.Seconds
			ru := result.UDPOf(ss.RcvUDP)
			// iperf3 reports the sender's count where it has it, the
			// receiver's otherwise, and the loss over the sender's.
			e.Streams = append(e.Streams, jsonEndStream{UDP: &jsonEndUDP{
				Socket: ss.Socket, End: secs, Seconds: secs, Bytes: sb, BitsPerSecond: 8 * result.Rate(sb, secs),
				JitterMS: 1000 * ru.Jitter, LostPackets: ru.Lost, Packets: ss.Packets, LostPercent: lostPercent(ru.Lost, result.UDPOf(ss.SndUDP).Packets),
				OutOfOrder: outOfOrder(ss.RcvUDP), Sender: d.Sender}})
		}
		snt, rcv := &d.Sent, &d.Received
		jitter, lost := 1000*rcv.UDP.Jitter, rcv.UDP.Lost
		sum := &jsonSum{End: rcv.Seconds, Seconds: rcv.Seconds, Bytes: snt.Bytes, BitsPerSecond: 8 * result.Rate(snt.Bytes, snt.Seconds),
			JitterMS: f64(jitter), LostPackets: i64(lost), Packets: i64(d.Packets), LostPercent: f64(lostPercent(lost, d.Packets)), Sender: d.Sender}
		sent := &jsonSum{End: snt.Seconds, Seconds: snt.Seconds, Bytes: snt.Bytes, BitsPerSecond: 8 * result.Rate(snt.Bytes, snt.Seconds),
			JitterMS: f64(0), LostPackets: i64(0), Packets: i64(snt.UDP.Packets), LostPercent: f64(0), Sender: true}
		recv := &jsonSum{End: rcv.Seconds, Seconds: rcv.Seconds, Bytes: rcv.Bytes, BitsPerSecond: 8 * result.Rate(rcv.Bytes, rcv.Seconds),
			JitterMS: f64(jitter), LostPackets: i64(lost), Packets: i64(rcv.UDP.Packets), LostPercent: f64(lostPercent(lost, d.Packets)), Sender: false}
		if d.Reverse {
			e.SumBidirReverse, e.SumSentBidirReverse, e.SumReceivedBidirReverse = sum, sent, recv
		} else {
			e.Sum, e.SumSent, e.SumReceived = sum, sent, recv
		}
	}
}

// jsonFailed is iperf3's -J document of a test that failed before it
// connected: what the client knows of itself, and the error.
type jsonFailed struct {
	Start struct {
		Connected  []jsonConnected `json:"connected"`
		Version    string          `json:"version"`
		SystemInfo string          `json:"system_info"`
	} `json:"start"`
	Intervals []jsonInterval `json:"intervals"`
	End       struct{}       `json:"end"`
	Title     string         `json:"title,omitempty"`
	ExtraData string         `json:"extra_data,omitempty"`
	Error     string         `json:"error,omitempty"`
}

func jsonFailedOf(r *result.Result) *jsonFailed {
	d := &jsonFailed{Intervals: []jsonInterval{}, Title: r.Params.Title, ExtraData: r.Params.ExtraData}
	d.Start.Connected = []jsonConnected{}
	d.Start.Version, d.Start.SystemInfo = r.Version, r.SystemInfo
	if r.Err != nil {
		d.Error = r.Err.Error()
	}
	return d
}

// JSONBytes renders r as iperf3's -J output. A Result that never
// connected (ErrorResult) renders as iperf3's does: the version and
// system, empty intervals and end, and the error.
func JSONBytes(r *result.Result) ([]byte, error) {
	if !r.Connected() {
		return json.MarshalIndent(jsonFailedOf(r), "", "\t")
	}
	return json.MarshalIndent(jsonOf(r), "", "\t")
}

// EncodeJSON writes r as iperf3's -J output, with a newline.
func EncodeJSON(w io.Writer, r *result.Result) error {
	b, err := JSONBytes(r)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

func jsonIndent(w *bytes.Buffer, b []byte) error { return json.Indent(w, b, "", "\t") }
