package control

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/nicinfo"
)

// The -J document, in iperf3's schema and key order (iperf_api.c), with
// blast's additions under "blast" keys.
type jsonDoc struct {
	Start            jsonStart       `json:"start"`
	Intervals        []jsonInterval  `json:"intervals"`
	End              jsonEnd         `json:"end"`
	Title            string          `json:"title,omitempty"`
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
	TCPMSSDefault      int             `json:"tcp_mss_default"`
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
}

type jsonIntervalStream struct {
	Socket        int              `json:"socket"`
	Start         float64          `json:"start"`
	End           float64          `json:"end"`
	Seconds       float64          `json:"seconds"`
	Bytes         int64            `json:"bytes"`
	BitsPerSecond float64          `json:"bits_per_second"`
	Retransmits   *int64           `json:"retransmits,omitempty"`
	SndCwnd       *int64           `json:"snd_cwnd,omitempty"`
	SndWnd        *int64           `json:"snd_wnd,omitempty"`
	RTT           *int64           `json:"rtt,omitempty"`
	RTTVar        *int64           `json:"rttvar,omitempty"`
	PMTU          *int64           `json:"pmtu,omitempty"`
	Omitted       bool             `json:"omitted"`
	Sender        bool             `json:"sender"`
	Blast         *jsonStreamBlast `json:"blast,omitempty"`
}

type jsonStreamBlast struct {
	ID           int            `json:"id"`
	MinRTT       *int64         `json:"min_rtt,omitempty"`
	PacingRate   *int64         `json:"pacing_rate,omitempty"`   // bytes/s
	DeliveryRate *int64         `json:"delivery_rate,omitempty"` // bytes/s
	Reordering   *int64         `json:"reordering,omitempty"`
	IO           *engine.Sample `json:"io,omitempty"`
}

type jsonSum struct {
	Start         float64 `json:"start"`
	End           float64 `json:"end"`
	Seconds       float64 `json:"seconds"`
	Bytes         int64   `json:"bytes"`
	BitsPerSecond float64 `json:"bits_per_second"`
	Retransmits   *int64  `json:"retransmits,omitempty"`
	Omitted       *bool   `json:"omitted,omitempty"`
	Sender        bool    `json:"sender"`
}

type jsonEndStream struct {
	Sender   jsonEndSide `json:"sender"`
	Receiver jsonEndSide `json:"receiver"`
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
	SumSent                 *jsonSum        `json:"sum_sent,omitempty"`
	SumReceived             *jsonSum        `json:"sum_received,omitempty"`
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
}

type jsonEndStreamB struct {
	ID        int                `json:"id"`
	Socket    int                `json:"socket"`
	Sender    bool               `json:"sender"`
	IO        engine.Sample      `json:"io"`
	PeerIO    *engine.Sample     `json:"peer_io,omitempty"`
	Facts     *engine.FactSample `json:"facts,omitempty"`
	PeerFacts *engine.FactSample `json:"peer_facts,omitempty"`
}

func i64(v int64) *int64 { return &v }

// jsonOf builds the -J document of r.
func jsonOf(r *Result) *jsonDoc {
	d := &jsonDoc{Title: r.Params.Title, ServerOutputJSON: r.ServerOutputJSON, ServerOutputText: r.ServerOutputText}
	if r.Err != nil {
		d.Error = r.Err.Error()
	}
	s := &d.Start
	s.Connected = []jsonConnected{}
	for _, st := range r.Streams {
		s.Connected = append(s.Connected, jsonConnected{st.Socket, st.Local.Addr().String(), int(st.Local.Port()), st.Remote.Addr().String(), int(st.Remote.Port())})
	}
	s.Version, s.SystemInfo = r.Version, r.SystemInfo
	// iperf3's strftime("%a, %d %b %Y %H:%M:%S %Z") of gmtime says GMT.
	s.Timestamp = jsonTimestamp{r.Time.UTC().Format("Mon, 02 Jan 2006 15:04:05 GMT"), r.Time.Unix()}
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
	s.TCPMSSDefault = r.TCPMSSDefault
	s.TargetBitrate = int64(r.Params.Bandwidth)
	s.SockBufSize, s.SndBufActual, s.RcvBufActual = r.SockBufSize, r.SndBufActual, r.RcvBufActual
	s.TestStart = jsonTestStart{Protocol: "TCP", NumStreams: r.NumStreams(), BlkSize: r.Params.blockLen(),
		Omit: int(r.Params.Omit), Duration: int(r.Params.Time), Bytes: int64(r.Params.Num), Blocks: int64(r.Params.BlockCount),
		TOS: int(r.Params.TOS), TargetBitrate: int64(r.Params.Bandwidth)}
	if r.Reverse() {
		s.TestStart.Reverse = 1
	}
	if r.Bidir() {
		s.TestStart.Bidir = 1
	}
	s.Blast = jsonStartBlast{Version: Version, Backend: r.Backend, Role: r.Role}

	d.Intervals = []jsonInterval{}
	for _, iv := range r.Intervals {
		ji := jsonInterval{Streams: []jsonIntervalStream{}}
		for _, sender := range r.groups() {
			var sum jsonSum
			var retr int64
			n := 0
			for _, si := range iv.Streams {
				if si.Sender != sender {
					continue
				}
				js := jsonIntervalStream{Socket: si.Socket, Start: si.Start, End: si.End, Seconds: si.Seconds(),
					Bytes: si.Bytes, BitsPerSecond: 8 * rate(si.Bytes, si.Seconds()), Omitted: si.Omitted, Sender: si.Sender,
					Blast: &jsonStreamBlast{ID: si.ID}}
				io := si.IO
				js.Blast.IO = &io
				if si.TCP != nil {
					t := si.TCP
					js.Retransmits, js.SndCwnd, js.SndWnd = i64(si.Retransmits), i64(t.SndCwnd), i64(t.SndWnd)
					js.RTT, js.RTTVar, js.PMTU = i64(t.RTT), i64(t.RTTVar), i64(t.PMTU)
					js.Blast.MinRTT, js.Blast.PacingRate, js.Blast.DeliveryRate, js.Blast.Reordering = i64(t.MinRTT), i64(t.PacingRate), i64(t.DeliveryRate), i64(t.Reordering)
					retr += si.Retransmits
				}
				ji.Streams = append(ji.Streams, js)
				if n == 0 {
					sum.Start, sum.End, sum.Seconds = si.Start, si.End, si.Seconds()
				}
				n++
				sum.Bytes += si.Bytes
			}
			if n == 0 {
				continue
			}
			sum.BitsPerSecond = 8 * rate(sum.Bytes, sum.Seconds)
			sum.Sender = sender
			om := iv.Omitted
			sum.Omitted = &om
			if sender && r.HasRetransmits {
				sum.Retransmits = i64(retr)
			}
			if r.Bidir() && !r.upstream(sender) {
				ji.SumBidirReverse = &sum
			} else {
				ji.Sum = &sum
			}
		}
		d.Intervals = append(d.Intervals, ji)
	}

	e := &d.End
	e.Streams = []jsonEndStream{}
	for _, sender := range r.groups() {
		retrOK := r.groupHasRetransmits(sender)
		var sent, recv jsonSum
		var retr int64
		n := 0
		for _, st := range r.Streams {
			if st.Sender != sender {
				continue
			}
			n++
			sb, ss := st.SentBytes()
			rb, rs := st.ReceivedBytes()
			sb, rb = max(sb, 0), max(rb, 0)
			ss, rs = max(ss, 0), max(rs, 0)
			es := jsonEndStream{
				Sender:   jsonEndSide{Socket: st.Socket, End: ss, Seconds: ss, Bytes: sb, BitsPerSecond: 8 * rate(sb, ss), Sender: sender},
				Receiver: jsonEndSide{Socket: st.Socket, End: rs, Seconds: rs, Bytes: rb, BitsPerSecond: 8 * rate(rb, rs), Sender: sender},
			}
			if retrOK {
				es.Sender.Retransmits = i64(max(st.Retransmits, 0))
				retr += max(st.Retransmits, 0)
				if st.Sender {
					es.Sender.MaxSndCwnd, es.Sender.MaxSndWnd = i64(st.MaxSndCwnd), i64(st.MaxSndWnd)
					es.Sender.MaxRTT, es.Sender.MinRTT, es.Sender.MeanRTT = i64(st.MaxRTT), i64(st.MinRTT), i64(st.MeanRTT)
				}
			}
			e.Streams = append(e.Streams, es)
			sent.Bytes += sb
			recv.Bytes += rb
			sent.Seconds = max(sent.Seconds, ss)
			recv.Seconds = max(recv.Seconds, rs)
		}
		if n == 0 {
			continue
		}
		sent.End, recv.End = sent.Seconds, recv.Seconds
		sent.BitsPerSecond = 8 * rate(sent.Bytes, sent.Seconds)
		recv.BitsPerSecond = 8 * rate(recv.Bytes, recv.Seconds)
		sent.Sender, recv.Sender = sender, sender
		if retrOK {
			sent.Retransmits = i64(retr)
		}
		if r.Bidir() && !r.upstream(sender) {
			e.SumSentBidirReverse, e.SumReceivedBidirReverse = &sent, &recv
		} else {
			e.SumSent, e.SumReceived = &sent, &recv
		}
	}
	e.CPU = jsonCPU{r.CPU.Total, r.CPU.User, r.CPU.System, r.RemoteCPU.Total, r.RemoteCPU.User, r.RemoteCPU.System}
	snd, rcv := r.Congestion, r.RemoteCongestion
	if !r.localSends() {
		snd, rcv = rcv, snd
	}
	e.SenderTCPCongestion, e.ReceiverTCPCongestion = snd, rcv
	e.Blast = jsonEndBlast{Backend: r.Backend, RemoteBackend: r.RemoteBackend, RemoteVersion: r.RemoteVersion, RemoteErrors: r.RemoteErrors, Notes: r.Notes, NIC: r.NIC, RemoteNIC: r.RemoteNIC, Streams: []jsonEndStreamB{}}
	for _, st := range r.Streams {
		jb := jsonEndStreamB{ID: st.ID, Socket: st.Socket, Sender: st.Sender, IO: st.IO, PeerIO: st.PeerIO, PeerFacts: st.PeerFacts}
		if len(st.Facts.Counts) > 0 || len(st.Facts.Notes) > 0 {
			f := st.Facts
			jb.Facts = &f
		}
		e.Blast.Streams = append(e.Blast.Streams, jb)
	}
	return d
}

// JSONBytes renders r as iperf3's -J output.
func JSONBytes(r *Result) ([]byte, error) {
	return json.MarshalIndent(jsonOf(r), "", "\t")
}

// EncodeJSON writes r as iperf3's -J output, with a newline.
func EncodeJSON(w io.Writer, r *Result) error {
	b, err := JSONBytes(r)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

func jsonIndent(w *bytes.Buffer, b []byte) error { return json.Indent(w, b, "", "\t") }
