package control

import "github.com/blastnet/blast/control/wire"

// iperf3's wire (control/wire) under the names blast's callers and this
// package's code use: the states, the limits, the parameters and results
// as exchanged, the frames.

// The wire's types.
type (
	State           = wire.State
	ServerErrorCode = wire.ServerErrorCode
	Int             = wire.Int
	Flag            = wire.Flag
	Params          = wire.Params
	BlastParams     = wire.BlastParams
	Results         = wire.Results
	StreamResults   = wire.StreamResults
	BlastResults    = wire.BlastResults
	BlastStream     = wire.BlastStream
	CPUSeconds      = wire.CPUSeconds
	ThreadTimes     = wire.ThreadTimes
	TCPSummary      = wire.TCPSummary
	TCPLimits       = wire.TCPLimits
	UDPStats        = wire.UDPStats
	Drained         = wire.Drained
)

// The states of iperf3's control protocol.
const (
	TestStart       = wire.TestStart
	TestRunning     = wire.TestRunning
	ResultRequest   = wire.ResultRequest
	TestEnd         = wire.TestEnd
	StreamBegin     = wire.StreamBegin
	StreamRunning   = wire.StreamRunning
	StreamEnd       = wire.StreamEnd
	AllStreamsEnd   = wire.AllStreamsEnd
	ParamExchange   = wire.ParamExchange
	CreateStreams   = wire.CreateStreams
	ServerTerminate = wire.ServerTerminate
	ClientTerminate = wire.ClientTerminate
	ExchangeResults = wire.ExchangeResults
	DisplayResults  = wire.DisplayResults
	IperfStart      = wire.IperfStart
	IperfDone       = wire.IperfDone
	AccessDenied    = wire.AccessDenied
	ServerError     = wire.ServerError
)

// The protocol's limits and defaults.
const (
	DefaultPort     = wire.DefaultPort
	CookieSize      = wire.CookieSize
	DefaultTCPBlock = wire.DefaultTCPBlock
	MaxStreams      = wire.MaxStreams
	MaxTime         = wire.MaxTime
	MaxOmit         = wire.MaxOmit
	MaxMSS          = wire.MaxMSS
	MaxParamsJSON   = wire.MaxParamsJSON
	MaxResultsJSON  = wire.MaxResultsJSON
	MinUDPBlock     = wire.MinUDPBlock
	MaxUDPBlock     = wire.MaxUDPBlock
	DefaultUDPBlock = wire.DefaultUDPBlock

	MaxServerAffinity = wire.MaxServerAffinity
)

// ErrBusy: the server is running as many tests as it takes; ErrTooLarge:
// a frame over its limit.
var (
	ErrBusy     = wire.ErrBusy
	ErrTooLarge = wire.ErrTooLarge
)

// The frames and the cookie.
var (
	NewCookie  = wire.NewCookie
	StreamID   = wire.StreamID
	ReadState  = wire.ReadState
	WriteState = wire.WriteState
	WriteJSON  = wire.WriteJSON
	ReadFrame  = wire.ReadFrame
	ReadJSON   = wire.ReadJSON
)
