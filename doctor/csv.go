package doctor

import (
	"encoding/csv"
	"io"
	"strconv"
	"time"

	"github.com/blastnet/blast/internal/safetext"
	"github.com/blastnet/blast/pathmtu"
)

// csvHeader is the one header line of WriteCSV: the unit of each figure
// is in its name.
var csvHeader = []string{
	"kind", "name", "command", "bits_per_second", "target_bits_per_second", "retransmits",
	"datagram_bytes", "sent_datagrams", "lost_datagrams",
	"rtt_min_us", "rtt_p50_us", "rtt_p99_us", "rtt_max_us", "error",
	"rank", "rule", "severity", "iface", "summary", "evidence", "fix", "invalid", "healthy",
	"path_mtu_upload_bytes", "path_mtu_download_bytes",
}

// Column indexes of csvHeader.
const (
	csvKind = iota
	csvName
	csvCommand
	csvBitsPerSec
	csvTarget
	csvRetransmits
	csvDatagram
	csvSent
	csvLost
	csvRTTMin
	csvRTTP50
	csvRTTP99
	csvRTTMax
	csvError
	csvRank
	csvRule
	csvSeverity
	csvIface
	csvSummary
	csvEvidence
	csvFix
	csvInvalid
	csvHealthy
	csvPMTUUp
	csvPMTUDown
	csvColumns
)

// WriteCSV writes the report as CSV, in the order WriteText writes it:
// one header line, one row per test (kind "test"), the verdict (kind
// "verdict": summary is the verdict, healthy whether the path is), then
// one row per finding, most likely cause first (kind "finding", rank 1
// up). A test row has the figures of its kind: goodput and retransmits
// for TCP; goodput, target rate, datagram size, datagrams sent and lost
// for UDP; round-trip times in microseconds with 3 decimals for the
// latency run; the path MTU test's largest packet each way, in bytes
// (empty: not measured); a test that failed before it measured anything only its
// error (and a UDP test its target). Rates are bits per second with no
// decimals. Text that came from the peer or a file is escaped as in
// WriteText, line breaks kept; encoding/csv quotes what needs it.
func WriteCSV(w io.Writer, rep *Report) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	for _, t := range rep.Tests {
		if err := cw.Write(t.csvCells()); err != nil {
			return err
		}
	}
	row := csvRow("verdict")
	row[csvSummary] = safetext.Escape(rep.Verdict)
	row[csvHealthy] = strconv.FormatBool(rep.Healthy)
	if err := cw.Write(row); err != nil {
		return err
	}
	for i, f := range rep.Findings {
		row := csvRow("finding")
		row[csvRank] = strconv.Itoa(i + 1)
		row[csvRule] = safetext.Escape(string(f.Rule))
		row[csvSeverity] = f.Severity.String()
		row[csvIface] = safetext.Escape(f.Iface)
		row[csvSummary] = safetext.Escape(f.Summary)
		row[csvEvidence] = safetext.Escape(f.Evidence)
		row[csvFix] = safetext.Escape(f.Fix)
		row[csvInvalid] = strconv.FormatBool(f.Invalid)
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func csvRow(kind string) []string {
	row := make([]string, csvColumns)
	row[csvKind] = kind
	return row
}

// csvCells is the test's row.
func (t Test) csvCells() []string {
	row := csvRow("test")
	row[csvName], row[csvCommand] = safetext.Escape(t.Name), safetext.Escape(t.Command)
	row[csvError] = safetext.Escape(t.Err)
	bps := func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	udp := t.Datagram > 0 || t.Sent > 0
	if t.RateBps > 0 {
		row[csvTarget] = bps(t.RateBps)
	}
	switch {
	case t.Err != "" && t.Bps == 0 && t.RTT == nil:
		// Failed before it measured anything.
	case t.PathMTU != nil:
		// The largest packet that arrived each way; empty: not measured.
		for col, d := range map[int]pathmtu.Direction{csvPMTUUp: t.PathMTU.Up, csvPMTUDown: t.PathMTU.Down} {
			if d.Measured {
				row[col] = strconv.Itoa(d.PMTU)
			}
		}
	case t.RTT != nil:
		us := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e3, 'f', 3, 64) }
		row[csvRTTMin], row[csvRTTP50], row[csvRTTP99], row[csvRTTMax] = us(t.RTT.Min), us(t.RTT.P50), us(t.RTT.P99), us(t.RTT.Max)
	case udp:
		row[csvBitsPerSec] = bps(t.Bps)
		row[csvDatagram], row[csvSent], row[csvLost] = i(int64(t.Datagram)), i(t.Sent), i(t.Lost)
	default:
		row[csvBitsPerSec], row[csvRetransmits] = bps(t.Bps), i(t.Retransmits)
	}
	return row
}
