package control

import (
	"github.com/blastnet/blast/control/render"
	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/engine"
)

// What a test measured (control/result) and its renderings
// (control/render), under the names blast's callers use.

// The Result of a test and its parts.
type (
	Result         = result.Result
	StreamResult   = result.StreamResult
	Interval       = result.Interval
	StreamInterval = result.StreamInterval
	DiskFile       = result.DiskFile
	CPUUtil        = result.CPUUtil
	Stall          = result.Stall
	// TCPInfo is a sending stream's TCP_INFO sample.
	TCPInfo = engine.TCPInfo
)

// Version is what blast calls itself on the wire and in results.
const Version = result.Version

// ErrInvalid fails a test that ran to its end but whose measurement is not
// valid: a finding on either end says so (the link went down during it).
var ErrInvalid = result.ErrInvalid

// Text renders Results as iperf3's text output; JSONStream as iperf3's
// --json-stream.
type (
	Text       = render.Text
	JSONStream = render.JSONStream
)

// The renderers: iperf3's text, -J and blast's CSV.
var (
	WriteStart    = render.WriteStart
	WriteInterval = render.WriteInterval
	WriteSummary  = render.WriteSummary
	WriteText     = render.WriteText
	TextString    = render.TextString
	JSONBytes     = render.JSONBytes
	EncodeJSON    = render.EncodeJSON
	WriteCSV      = render.WriteCSV
)
