package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/internal/safetext"
	"github.com/blastnet/blast/nicinfo"
	"github.com/blastnet/blast/units"
)

// WriteText writes the report for a reader: what ran and what it measured,
// the interfaces at both ends, the verdict, then every finding ranked,
// each with its evidence and fix.
func WriteText(w io.Writer, rep *Report) error {
	ew := safetext.Writer(w) // names and errors come from the peer and files
	if rep.Port > 0 {
		fmt.Fprintf(ew, "blast doctor %s port %d\n", rep.Host, rep.Port)
	} else {
		fmt.Fprintf(ew, "blast doctor %s\n", rep.Host)
	}
	width := 13 // "tcp download" and a space
	for _, t := range rep.Tests {
		width = max(width, len(t.Name))
	}
	for _, t := range rep.Tests {
		fmt.Fprintf(ew, "  %-*s %s\n", width, t.Name, t.line(rep.Unit))
	}
	if rep.Local != nil {
		fmt.Fprintf(ew, "local  nic %s\n", nicinfo.Summary(rep.Local))
	}
	if rep.Remote != nil {
		fmt.Fprintf(ew, "remote nic %s\n", nicinfo.Summary(rep.Remote))
	}
	for _, ifc := range rep.Interfaces {
		fmt.Fprintf(ew, "nic %s\n", nicinfo.Summary(ifc))
	}
	fmt.Fprintf(ew, "verdict: %s\n", rep.Verdict)
	for i, f := range rep.Findings {
		if rep.Healthy && f.Severity < finding.Warn && i == 0 {
			fmt.Fprintf(ew, "notes:\n")
		}
		where := string(f.Rule) // a path finding (D7, D26) names no interface
		if f.Iface != "" {
			where += " " + f.Iface
		}
		fmt.Fprintf(ew, "  %d. %s %s: %s\n", i+1, f.Severity, where, f.Summary)
		fmt.Fprintf(ew, "     evidence: %s\n", f.Evidence)
		fmt.Fprintf(ew, "     fix: %s\n", f.Fix)
	}
	return nil
}

// line is one test's figures, its rates in unit.
func (t Test) line(unit units.Format) string {
	if strings.HasPrefix(t.Err, "skipped: ") {
		return t.Err // not run: it would have failed for a known cause
	}
	if t.Err != "" && t.Bps == 0 && t.RTT == nil {
		return "failed: " + t.Err
	}
	var s string
	switch {
	case t.PathMTU != nil:
		s = mtuLine(t.PathMTU)
	case t.RTT != nil:
		s = fmt.Sprintf("round trip min %s, p50 %s, p99 %s, max %s (TCP, 64 B)", dur(t.RTT.Min), dur(t.RTT.P50), dur(t.RTT.P99), dur(t.RTT.Max))
	case t.Datagram > 0 || t.Sent > 0:
		s = fmt.Sprintf("%s at %s, %d-byte datagrams, %d of %d lost", unit.Rate(t.Bps), unit.Rate(t.RateBps), t.Datagram, t.Lost, t.Sent)
	default:
		s = fmt.Sprintf("%s, %d retransmits", unit.Rate(t.Bps), t.Retransmits)
	}
	if t.Err != "" {
		s += "; failed: " + t.Err
	}
	return s
}

// WriteJSON writes the report as one JSON document.
func WriteJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}
