package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/units"
)

// TTCPHeader is what the first line of a ttcp run says.
type TTCPHeader struct {
	Prefix   string // "ttcp-t", "blast-r", ...
	Transmit bool
	BufLen   int
	NBuf     int
	Align    int
	Offset   int
	Port     int
	SockBuf  int // 0: not set
	UDP      bool
	Host     string // transmitter only
}

// Line renders the header exactly as ttcp prints it.
func (h TTCPHeader) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: buflen=%d, nbuf=%d, align=%d/%d, port=%d", h.Prefix, h.BufLen, h.NBuf, h.Align, h.Offset, h.Port)
	if h.SockBuf != 0 {
		fmt.Fprintf(&b, ", sockbufsize=%d", h.SockBuf)
	}
	proto := "tcp"
	if h.UDP {
		proto = "udp"
	}
	if h.Transmit {
		fmt.Fprintf(&b, "  %s  -> %s", proto, h.Host)
	} else {
		fmt.Fprintf(&b, "  %s", proto)
	}
	return b.String()
}

// Rusage is the part of getrusage(2) ttcp prints, as the difference over
// the timed section (MaxRSS is the peak, in KiB).
type Rusage struct {
	User, Sys      time.Duration
	MaxRSS         int64
	MajFlt, MinFlt int64
	NVCSw, NIVCSw  int64
	IXRSS, IDRSS   int64 // integral shared and unshared sizes (0 on Linux)
}

// TTCPResult is what a finished ttcp run reports.
type TTCPResult struct {
	Prefix   string
	Transmit bool
	Format   byte // k K m M g G
	Verbose  bool
	Bytes    int64
	Real     time.Duration
	Calls    int64 // every I/O call, sentinels included, as ttcp counts
	Rusage   Rusage
	// Data is the data path's counters (sentinels excluded).
	Data    engine.Sample
	UDP     bool
	Backend string
	Notes   []string // further blast lines, printed last
}

// TTCPRun is one ttcp-mode transfer as JSON (-J): the figures of the
// classic lines, in plain units, and blast's.
type TTCPRun struct {
	Side          string        `json:"side"`     // "transmit" or "receive"
	Protocol      string        `json:"protocol"` // "tcp" or "udp"
	Backend       string        `json:"backend,omitempty"`
	Bytes         int64         `json:"bytes"`
	Seconds       float64       `json:"seconds"`
	BitsPerSecond float64       `json:"bits_per_second"`
	Calls         int64         `json:"io_calls"` // as ttcp counts them, sentinels included
	CPUUser       float64       `json:"cpu_user_seconds"`
	CPUSys        float64       `json:"cpu_system_seconds"`
	MaxRSSKiB     int64         `json:"max_rss_kib"`
	Data          engine.Sample `json:"data"` // the data path's counters, sentinels excluded
	Notes         []string      `json:"notes,omitempty"`
}

// JSON is the transfer as -J writes it.
func (r TTCPResult) JSON() TTCPRun {
	j := TTCPRun{Side: "receive", Protocol: "tcp", Backend: r.Backend, Bytes: r.Bytes, Seconds: r.Real.Seconds(),
		Calls: r.Calls, CPUUser: r.Rusage.User.Seconds(), CPUSys: r.Rusage.Sys.Seconds(), MaxRSSKiB: r.Rusage.MaxRSS,
		Data: r.Data, Notes: r.Notes}
	if r.Transmit {
		j.Side = "transmit"
	}
	if r.UDP {
		j.Protocol = "udp"
	}
	if j.Seconds > 0 {
		j.BitsPerSecond = 8 * float64(r.Bytes) / j.Seconds
	}
	return j
}

// Lines renders the classic summary lines, then blast's own.
func (r TTCPResult) Lines() []string {
	realt := r.Real.Seconds()
	if realt <= 0 {
		realt = 0.001
	}
	cput := (r.Rusage.User + r.Rusage.Sys).Seconds()
	if cput <= 0 {
		cput = 0.001
	}
	nbytes := float64(r.Bytes)
	calls := float64(r.Calls)
	var lines []string
	add := func(format string, a ...any) {
		lines = append(lines, r.Prefix+": "+fmt.Sprintf(format, a...))
	}
	add("%.0f bytes in %.2f real seconds = %s/sec +++", nbytes, realt, units.TTCPRate(r.Format, nbytes/realt))
	if r.Verbose {
		add("%.0f bytes in %.2f CPU seconds = %s/cpu sec", nbytes, cput, units.TTCPRate(r.Format, nbytes/cput))
	}
	msecPerCall := 0.0
	if r.Calls > 0 {
		msecPerCall = 1024 * realt / calls // sic: ttcp's 1024
	}
	add("%d I/O calls, msec/call = %.2f, calls/sec = %.2f", r.Calls, msecPerCall, calls/realt)
	add("%s", r.Rusage.Format(r.Real))

	// blast's lines.
	op := "read"
	if r.Transmit {
		op = "write"
	}
	d := r.Data
	add("bytes per %s: avg %.1f, min %d, max %d over %d %ss", op, d.AvgIO(), d.MinIO, d.MaxIO, d.DataCalls(), op)
	if r.UDP {
		verb := "received"
		if r.Transmit {
			verb = "sent"
		}
		add("%d datagrams %s", d.Datagrams, verb)
	}
	add("%s (backend %s)", units.SIRate(nbytes*8/realt), r.Backend)
	for _, n := range r.Notes {
		add("%s", n)
	}
	return lines
}

// Format renders ttcp's rusage line,
// "%Uuser %Ssys %Ereal %P %Xi+%Dd %Mmaxrss %F+%Rpf %Ccsw", for a timed
// section of real length.
func (u Rusage) Format(real time.Duration) string {
	t := int64(u.User/(10*time.Millisecond) + u.Sys/(10*time.Millisecond)) // centiseconds of CPU
	ms := int64(real / (10 * time.Millisecond))                            // centiseconds of real time
	den := ms
	if den == 0 {
		den = 1
	}
	perT := func(v int64) int64 {
		if t == 0 {
			return 0
		}
		return v / t
	}
	return fmt.Sprintf("%suser %ssys %sreal %d%% %di+%dd %dmaxrss %d+%dpf %d+%dcsw",
		tenths(u.User), tenths(u.Sys), psecs(ms/100), t*100/den,
		perT(u.IXRSS), perT(u.IDRSS), u.MaxRSS, u.MajFlt, u.MinFlt, u.NVCSw, u.NIVCSw)
}

// tenths prints seconds with one truncated decimal, as ttcp's %U and %S.
func tenths(d time.Duration) string {
	return fmt.Sprintf("%d.%01d", d/time.Second, (d%time.Second)/(100*time.Millisecond))
}

// psecs prints whole seconds as M:SS, or H:MM:SS from an hour up.
func psecs(l int64) string {
	if h := l / 3600; h > 0 {
		m := (l % 3600) / 60
		return fmt.Sprintf("%d:%d%d:%02d", h, m/10, m%10, l%60)
	}
	return fmt.Sprintf("%d:%02d", l/60, l%60)
}

// WriteLines writes lines to w, one per line.
func WriteLines(w io.Writer, lines ...string) error {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
