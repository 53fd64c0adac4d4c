package mesh

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/blastnet/blast/internal/safetext"
)

// CSVHeader is the one header line of WriteCSV: the unit of each figure is
// in its name.
var CSVHeader = []string{
	"src", "dst", "proto", "dir", "phase", "round", "start", "seconds", "bps", "bytes",
	"retrans", "rtt_us", "loss_pct", "jitter_ms", "cpu_src_pct", "cpu_dst_pct",
	"nic", "attempts", "findings", "err",
}

// WriteCSV writes d's cells as long CSV: the header, then one row per
// cell in the Document's order. src, dst and dir are the Document's (for
// dir "down" dst sent). start is RFC 3339 in UTC; rates are bits per
// second without decimals, loss a percentage of the datagrams sent. A
// figure a test does not have is empty: retransmissions and RTT for UDP,
// loss and jitter for TCP, and every figure of a failed test (its err
// says why). findings are the cells' rules with their end, "src:D3;dst:D5".
// Text from agents is escaped as Report escapes it.
func WriteCSV(w io.Writer, d *Document) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	for i := range d.Cells {
		if err := cw.Write(csvRow(&d.Cells[i])); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func csvRow(c *Cell) []string {
	f := func(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	row := []string{safetext.Escape(c.Src), safetext.Escape(c.Dst), safetext.Escape(c.Proto), safetext.Escape(c.Dir), safetext.Escape(c.Phase),
		strconv.Itoa(c.Round), "", "", "", "", "", "", "", "", "", "", safetext.Escape(c.NIC), strconv.Itoa(c.Attempts), "", safetext.Escape(c.Err)}
	if !c.Start.IsZero() {
		row[6] = c.Start.UTC().Format(time.RFC3339Nano)
	}
	var rules []string
	for _, fd := range c.Findings {
		rules = append(rules, safetext.Escape(fd.End+":"+string(fd.Rule)))
	}
	row[18] = strings.Join(rules, ";")
	if c.Err != "" {
		return row
	}
	row[7], row[8], row[9] = f(c.Seconds, 3), f(c.Bps, 0), strconv.FormatUint(c.Bytes, 10)
	if c.Proto == "udp" {
		row[12], row[13] = f(100*c.Loss, 4), f(c.JitterMs, 3)
	} else {
		row[10] = strconv.FormatInt(c.Retrans, 10)
		if c.RTTus > 0 {
			row[11] = f(c.RTTus, 1)
		}
	}
	row[14], row[15] = f(c.CPU.Src, 1), f(c.CPU.Dst, 1)
	return row
}
