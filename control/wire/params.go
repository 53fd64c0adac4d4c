package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/hostload"
	"github.com/blastnet/blast/internal/verify"
	"github.com/blastnet/blast/nicinfo"
	"github.com/blastnet/blast/pathinfo"
	"github.com/blastnet/blast/units"
)

// Int is a JSON integer as iperf3's cJSON writes it: usually digits, but
// any number (1e+09, 3.0) decodes, rounded toward zero; true is 1, false
// and null are 0.
type Int int64

// UnmarshalJSON implements json.Unmarshaler.
func (n *Int) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch string(b) {
	case "null", "false":
		*n = 0
		return nil
	case "true":
		*n = 1
		return nil
	}
	if i, err := strconv.ParseInt(string(b), 10, 64); err == nil {
		*n = Int(i)
		return nil
	}
	// cJSON builds print -1 as 18446744073709551615 when it went through
	// an unsigned type: keep the two's complement meaning.
	if u, err := strconv.ParseUint(string(b), 10, 64); err == nil {
		*n = Int(int64(u))
		return nil
	}
	// int64 holds [-2^63, 2^63): a float outside converts differently
	// on each platform.
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(f) || f >= 0x1p63 || f < -0x1p63 {
		return fmt.Errorf("not an integer: %.40q", b)
	}
	*n = Int(f)
	return nil
}

// Flag is one of iperf3's presence flags ("reverse": true): iperf3 tests
// only that the key is there, so any value but false, 0 and null sets it.
type Flag bool

// UnmarshalJSON implements json.Unmarshaler.
func (f *Flag) UnmarshalJSON(b []byte) error {
	switch string(bytes.TrimSpace(b)) {
	case "false", "null", "0":
		*f = false
	default:
		*f = true
	}
	return nil
}

// Params are the test parameters the client sends after PARAM_EXCHANGE,
// under iperf3's key names (send_parameters in iperf_api.c). Zero values
// are left out, as iperf3 does; the protocol flag, omit, time, num,
// blockcount and parallel are always sent.
type Params struct {
	TCP              Flag   `json:"tcp,omitempty"`
	UDP              Flag   `json:"udp,omitempty"`
	SCTP             Flag   `json:"sctp,omitempty"`
	Omit             Int    `json:"omit"`
	ServerAffinity   *Int   `json:"server_affinity,omitempty"`
	Time             Int    `json:"time"`
	Num              Int    `json:"num"`
	BlockCount       Int    `json:"blockcount"`
	MSS              Int    `json:"MSS,omitempty"`
	NoDelay          Flag   `json:"nodelay,omitempty"`
	Parallel         Int    `json:"parallel"`
	Reverse          Flag   `json:"reverse,omitempty"`
	Bidirectional    Flag   `json:"bidirectional,omitempty"`
	Window           Int    `json:"window,omitempty"`
	Len              Int    `json:"len,omitempty"`
	Bandwidth        Int    `json:"bandwidth,omitempty"`
	FQRate           Int    `json:"fqrate,omitempty"`
	PacingTimer      Int    `json:"pacing_timer,omitempty"`
	Burst            Int    `json:"burst,omitempty"`
	TOS              Int    `json:"TOS,omitempty"`
	FlowLabel        Int    `json:"flowlabel,omitempty"`
	Title            string `json:"title,omitempty"`
	ExtraData        string `json:"extra_data,omitempty"`
	Congestion       string `json:"congestion,omitempty"`
	CongestionUsed   string `json:"congestion_used,omitempty"`
	GetServerOutput  Int    `json:"get_server_output,omitempty"`
	UDPCounters64    Int    `json:"udp_counters_64bit,omitempty"`
	RepeatingPayload Int    `json:"repeating_payload,omitempty"`
	ZeroCopy         Int    `json:"zerocopy,omitempty"`
	DontFragment     Int    `json:"dont_fragment,omitempty"`
	SkipRxCopy       Int    `json:"skip_rx_copy,omitempty"`
	MPTCP            Flag   `json:"mptcp,omitempty"`
	AuthToken        string `json:"authtoken,omitempty"`
	ClientVersion    string `json:"client_version,omitempty"`
	// GSO and GRO (iperf3 3.21's --gsro) ask the server to send with UDP
	// GSO in buffers of GSOBfSize bytes cut in GSODgSize datagrams, and
	// to receive with GRO into buffers of GROBfSize.
	GSO       Int `json:"gso,omitempty"`
	GSODgSize Int `json:"gso_dg_size,omitempty"`
	GSOBfSize Int `json:"gso_bf_size,omitempty"`
	GRO       Int `json:"gro,omitempty"`
	GROBfSize Int `json:"gro_bf_size,omitempty"`

	// Blast is present when the client is blast.
	Blast *BlastParams `json:"blast,omitempty"`
}

// BlastParams are the blast-only parameters; iperf3 ignores them.
type BlastParams struct {
	Version string `json:"version"`
	// Sys asks the server for its host load (--sys), per interval and
	// over the test.
	Sys bool `json:"sys,omitempty"`
	// Backend is what the client asks the server to move bytes with
	// ("" = the server's default).
	Backend string `json:"backend,omitempty"`
	// RxBackend is what the client asks the server to receive with.
	RxBackend string `json:"rx_backend,omitempty"`
	// BackendOptions and RxBackendOptions are the options of the two, in
	// the form engine.ParseOptions reads.
	BackendOptions   string `json:"backend_options,omitempty"`
	RxBackendOptions string `json:"rx_backend_options,omitempty"`
	// Verify asks both ends to send numbered, checksummed blocks and to
	// check what they receive (--verify, control/verify.go).
	Verify bool `json:"verify,omitempty"`
}

// Validate checks every field of p the way iperf3's server does
// (get_parameters, 3.17 and later; 3.12 checks none) or stricter, and
// returns the iperf3 error number to send back with SERVER_ERROR, or 0.
// Stricter than iperf3: upper bounds on the rate, the byte and block
// counts' product, the pacing timer and the GSO and GRO sizes iperf3
// takes unbounded.
func (p *Params) Validate() (ierrno int32, err error) {
	switch {
	case bool(p.SCTP):
		return 13, fmt.Errorf("SCTP tests are not implemented (TCP and UDP are)")
	case bool(p.UDP && p.TCP):
		return 131, fmt.Errorf("the parameters ask for both TCP and UDP: choose one")
	case bool(p.UDP) && p.Len != 0 && (p.Len < MinUDPBlock || p.Len > MaxUDPBlock):
		return 20, fmt.Errorf("UDP block size %d: must be %d to %d", p.Len, MinUDPBlock, MaxUDPBlock)
	case p.Bandwidth < 0 || p.FQRate < 0:
		return IERecvParams, fmt.Errorf("bitrate %d or fq-rate %d: must not be negative", p.Bandwidth, p.FQRate)
	case float64(p.Bandwidth) > units.MaxRate || float64(p.FQRate) > units.MaxRate:
		return 27, fmt.Errorf("bitrate %d or fq-rate %d: must be 0 to 10T", p.Bandwidth, p.FQRate)
	case p.Burst < 0 || p.Burst > units.MaxBurst:
		return 15, fmt.Errorf("burst %d: must be 1 to %d", p.Burst, units.MaxBurst)
	case p.Parallel < 1 || p.Parallel > MaxStreams:
		return 6, fmt.Errorf("parallel streams %d: must be 1 to %d", p.Parallel, MaxStreams)
	case p.Time < 0 || p.Time > MaxTime:
		return 5, fmt.Errorf("duration %d s: must be 0 to %d", p.Time, MaxTime)
	case p.Omit < 0 || p.Omit > MaxOmit:
		return 12, fmt.Errorf("omit %d s: must be 0 to %d", p.Omit, MaxOmit)
	case p.Len < 0 || p.Len > 1<<20:
		return 7, fmt.Errorf("block size %d: must be at most 1 MiB", p.Len)
	case p.MSS < 0 || p.MSS > MaxMSS:
		return 10, fmt.Errorf("MSS %d: must be at most %d", p.MSS, MaxMSS)
	case p.Window < 0 || p.Window > 512<<20:
		return 8, fmt.Errorf("window %d: must be at most 512 MiB", p.Window)
	case p.Num < 0 || p.BlockCount < 0:
		return IERecvParams, fmt.Errorf("byte count %d or block count %d: must not be negative", p.Num, p.BlockCount)
	case p.BlockCount > 0 && int64(p.BlockCount) > math.MaxInt64/int64(p.BlockLen()):
		return 16, fmt.Errorf("block count %d of %d bytes: the byte count overflows (at most %d blocks)", p.BlockCount, p.BlockLen(), math.MaxInt64/int64(p.BlockLen()))
	case bool(p.Reverse && p.Bidirectional):
		return 25, fmt.Errorf("a test cannot be both reverse and bidirectional")
	case p.TOS < 0 || p.TOS > 255:
		return 21, fmt.Errorf("TOS %d: must be 0 to 255", p.TOS)
	case p.FlowLabel < 0 || p.FlowLabel > engine.MaxFlowLabel:
		return IESetFlow, fmt.Errorf("flow label %d: must be 1 to %#x (20 bits)", p.FlowLabel, engine.MaxFlowLabel)
	case p.ServerAffinity != nil && (*p.ServerAffinity < 0 || *p.ServerAffinity > MaxServerAffinity):
		return IEAffinity, fmt.Errorf("server affinity %d: the CPU must be 0 to %d", *p.ServerAffinity, MaxServerAffinity)
	case p.PacingTimer < 0 || p.PacingTimer > math.MaxInt32:
		return IERecvParams, fmt.Errorf("pacing timer %d us: must be 0 to %d", p.PacingTimer, math.MaxInt32)
	case p.GSO < 0 || p.GSO > 1 || p.GRO < 0 || p.GRO > 1:
		return IERecvParams, fmt.Errorf("gso %d or gro %d: must be 0 or 1", p.GSO, p.GRO)
	case p.GSODgSize < 0 || p.GSODgSize > MaxUDPBlock || p.GSOBfSize < 0 || p.GSOBfSize > MaxUDPBlock || p.GROBfSize < 0 || p.GROBfSize > MaxUDPBlock:
		return IERecvParams, fmt.Errorf("gso_dg_size %d, gso_bf_size %d or gro_bf_size %d: must be 0 to %d", p.GSODgSize, p.GSOBfSize, p.GROBfSize, MaxUDPBlock)
	}
	return 0, nil
}

// validateFrame checks what Validate cannot see in p: a key iperf3
// refuses when it is there with a value blast's zero value would read as
// absent (burst, flowlabel and parallel of 0), then p itself.
func (p *Params) ValidateFrame(b []byte) (ierrno int32, err error) {
	var present struct {
		Parallel  *Int `json:"parallel"`
		Burst     *Int `json:"burst"`
		FlowLabel *Int `json:"flowlabel"`
	}
	if json.Unmarshal(b, &present) == nil {
		switch {
		case present.Parallel != nil && *present.Parallel < 1:
			return 6, fmt.Errorf("parallel streams %d: must be 1 to %d", *present.Parallel, MaxStreams)
		case present.Burst != nil && *present.Burst < 1:
			return 15, fmt.Errorf("burst %d: must be 1 to %d", *present.Burst, units.MaxBurst)
		case present.FlowLabel != nil && *present.FlowLabel < 1:
			return IESetFlow, fmt.Errorf("flow label %d: must be 1 to %#x (20 bits)", *present.FlowLabel, engine.MaxFlowLabel)
		}
	}
	return p.Validate()
}

// blockLen is the block size the parameters ask for.
func (p *Params) BlockLen() int {
	switch {
	case p.Len > 0:
		return int(p.Len)
	case bool(p.UDP):
		return DefaultUDPBlock
	}
	return DefaultTCPBlock
}

// byteLimit is the total the test ends at (0: time-limited).
func (p *Params) ByteLimit() int64 {
	if p.Num > 0 {
		return int64(p.Num)
	}
	if p.BlockCount > 0 {
		// Saturated: blocks past 8 EiB are a test without a count's end.
		return int64(min(p.BlockCount, Int(math.MaxInt64/p.BlockLen()))) * int64(p.BlockLen())
	}
	return 0
}

// Results are what each side sends the other after EXCHANGE_RESULTS
// (send_results in iperf_api.c).
type Results struct {
	CPUUtilTotal         float64         `json:"cpu_util_total"`
	CPUUtilUser          float64         `json:"cpu_util_user"`
	CPUUtilSystem        float64         `json:"cpu_util_system"`
	SenderHasRetransmits Int             `json:"sender_has_retransmits"`
	CongestionUsed       string          `json:"congestion_used,omitempty"`
	ServerOutputJSON     json.RawMessage `json:"server_output_json,omitempty"`
	ServerOutputText     string          `json:"server_output_text,omitempty"`
	Streams              []StreamResults `json:"streams"`
	Blast                *BlastResults   `json:"blast,omitempty"`
}

// StreamResults are one stream's totals on one side.
type StreamResults struct {
	ID          Int     `json:"id"`
	Bytes       Int     `json:"bytes"`
	Retransmits Int     `json:"retransmits"`
	Jitter      float64 `json:"jitter"`
	Errors      Int     `json:"errors"`
	Packets     Int     `json:"packets"`
	// OmittedErrors and OmittedPackets are what the omit period saw
	// (iperf3 sends both or neither).
	OmittedErrors  *Int    `json:"omitted_errors,omitempty"`
	OmittedPackets *Int    `json:"omitted_packets,omitempty"`
	StartTime      float64 `json:"start_time"`
	EndTime        float64 `json:"end_time"`
}

// BlastResults are the blast-only results of one side.
type BlastResults struct {
	Version string `json:"version"`
	// Backend is the backend that actually moved the bytes.
	Backend string `json:"backend"`
	// Streams holds per-stream I/O counters, in the order of Results.Streams.
	Streams []BlastStream `json:"streams,omitempty"`
	// Note says anything the peer should show (a requested backend that
	// could not run, for one).
	Note string `json:"note,omitempty"`
	// NIC is the interface that carried the traffic on this side.
	NIC *nicinfo.Result `json:"nic,omitempty"`
	// CPU is this side's process CPU time over the test, in seconds.
	CPU *CPUSeconds `json:"cpu_seconds,omitempty"`
	// Pauses are this side's stop-the-world pauses over the test (the
	// collector's and the runtime's others).
	Pauses *engine.Pauses `json:"stw_pauses,omitempty"`
	// Host is this side's host load over the test, HostIntervals per
	// interval (--sys).
	Host          *hostload.Load  `json:"host,omitempty"`
	HostIntervals []hostload.Load `json:"host_intervals,omitempty"`
	// Path is this side's path facts over the test (pathinfo), Sysctls
	// its buffer settings, SndBuf and RcvBuf the buffers its kernel
	// granted on the first stream.
	Path    *pathinfo.Delta   `json:"path,omitempty"`
	Sysctls map[string]string `json:"sysctls,omitempty"`
	SndBuf  int               `json:"sndbuf,omitempty"`
	RcvBuf  int               `json:"rcvbuf,omitempty"`
	// Errors are the failures of this side's data streams (a backend
	// that stopped early), which the control exchange alone would not
	// show: the peer only sees the stream end.
	Errors []string `json:"errors,omitempty"`
}

// CPUSeconds is CPU time in seconds, user and system.
type CPUSeconds struct {
	User   float64 `json:"user"`
	System float64 `json:"system"`
}

// BlastStream is one stream's I/O counters on one side.
type BlastStream struct {
	ID Int           `json:"id"`
	IO engine.Sample `json:"io"`
	// Facts are what the backend reported beyond the counters (engine.Facts):
	// bytes not copied, system calls, zero-copy completions, fallbacks.
	Facts *engine.FactSample `json:"facts,omitempty"`
	// UDP carries what iperf3's stream results cannot: out-of-order and
	// duplicate datagrams counted apart.
	UDP *UDPStats `json:"udp,omitempty"`
	// Verify is what this side's receiver found on the stream (--verify).
	Verify *verify.Counts `json:"verify,omitempty"`
	// TCP is the TCP_INFO summary of a stream this side sent on.
	TCP *TCPSummary `json:"tcp,omitempty"`
	// Drained is what this side received after the test's end
	// (StreamResult.Drained).
	Drained *Drained `json:"drained,omitempty"`
	// Thread is what this side's data thread of the stream spent.
	Thread *ThreadTimes `json:"thread,omitempty"`
}

// ThreadTimes are what a stream's data thread spent, in nanoseconds: the
// time it ran the backend (wall), its CPU time, and the time it was
// runnable but waited for a CPU (the scheduler's run delay, which a CPU
// quota adds to), as engine.Run measures them.
type ThreadTimes struct {
	WallNs    int64 `json:"wall_ns"`
	CPUNs     int64 `json:"cpu_ns"`
	RunWaitNs int64 `json:"run_wait_ns"`
	// Free says the stream ran free (engine.Free: an unlocked goroutine
	// in raw calls), not on a locked thread; the switches are its
	// context switches, voluntary (waits in the kernel) and involuntary
	// (the scheduler took its CPU).
	Free          bool  `json:"free"`
	VolSwitches   int64 `json:"voluntary_switches"`
	InvolSwitches int64 `json:"involuntary_switches"`
}

// ThreadTimesOf is what f's thread spent, nil when Run measured nothing.
func ThreadTimesOf(f *engine.Flow) *ThreadTimes {
	if f.Wall <= 0 {
		return nil
	}
	return &ThreadTimes{WallNs: int64(f.Wall), CPUNs: int64(f.CPU.Total()), RunWaitNs: int64(f.RunWait),
		Free: f.Free, VolSwitches: f.Switches.Voluntary, InvolSwitches: f.Switches.Involuntary}
}

// TCPSummary is what the path rules need of a sending stream's TCP_INFO
// over the test: the largest windows in bytes, the RTTs in microseconds,
// the last path MTU and send MSS.
type TCPSummary struct {
	MaxSndCwnd int64 `json:"max_snd_cwnd"`
	MaxSndWnd  int64 `json:"max_snd_wnd"`
	MeanRTT    int64 `json:"mean_rtt"`
	MinRTT     int64 `json:"min_rtt"`
	PMTU       int64 `json:"pmtu"`
	MSS        int64 `json:"mss"`
	Acked      int64 `json:"bytes_acked"`
	TCPLimits
}

// TCPLimits are the smallest RTT a sending stream's kernel measured and
// the microseconds it had data in flight
// (TCP_INFO's tcpi_busy_time) and, of that, could not send more because
// the receiver's advertised window was full (tcpi_rwnd_limited) or its
// own send buffer was (tcpi_sndbuf_limited), over the test. All 0 when
// the kernel (before Linux 4.10) or the peer (blast before them) does
// not tell.
type TCPLimits struct {
	// PathRTTUs is the smallest RTT the kernel measured on the
	// connection (tcpi_min_rtt), the path's without queues.
	PathRTTUs       int64 `json:"path_rtt_us,omitempty"`
	BusyUs          int64 `json:"busy_us,omitempty"`
	RwndLimitedUs   int64 `json:"rwnd_limited_us,omitempty"`
	SndbufLimitedUs int64 `json:"sndbuf_limited_us,omitempty"`
	// RTOs are the retransmission timeouts over the test, RTOTimeMs the
	// milliseconds spent recovering from them (tcpi_total_rto,
	// tcpi_total_rto_time: Linux 6.7+).
	RTOs      int64 `json:"rtos,omitempty"`
	RTOTimeMs int64 `json:"rto_time_ms,omitempty"`
}

// LimitsOf is TCP_INFO's times since the connection began.
func LimitsOf(ti engine.TCPInfo) TCPLimits {
	return TCPLimits{PathRTTUs: ti.MinRTT, BusyUs: ti.BusyTime, RwndLimitedUs: ti.RwndLimited, SndbufLimitedUs: ti.SndbufLimited,
		RTOs: ti.TotalRTO, RTOTimeMs: ti.RTOTimeMs}
}

// sub is l less an earlier reading (the RTT is l's).
func (l TCPLimits) Sub(b TCPLimits) TCPLimits {
	return TCPLimits{PathRTTUs: l.PathRTTUs, BusyUs: l.BusyUs - b.BusyUs, RwndLimitedUs: l.RwndLimitedUs - b.RwndLimitedUs,
		SndbufLimitedUs: l.SndbufLimitedUs - b.SndbufLimitedUs, RTOs: l.RTOs - b.RTOs, RTOTimeMs: l.RTOTimeMs - b.RTOTimeMs}
}

// check reports what is missing from results a peer sent, as iperf3's
// get_results does.
func (r *Results) Check() error {
	if r.Streams == nil {
		return fmt.Errorf("results without streams")
	}
	return nil
}

// DecodeResults parses results and makes sure the keys iperf3 insists on
// are there.
func DecodeResults(b []byte) (*Results, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	for _, k := range []string{"cpu_util_total", "cpu_util_user", "cpu_util_system", "sender_has_retransmits", "streams"} {
		if _, ok := raw[k]; !ok {
			return nil, fmt.Errorf("results lack %q", k)
		}
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return &r, r.Check()
}
