package compare

import (
	"encoding/json"
	"fmt"
	"github.com/blastnet/blast/report"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable prints rows as one aligned table, then each row's notes.
func WriteTable(w io.Writer, rows []Row, udp bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "backend (tx -> rx)\tthroughput\t"
	if udp {
		head += "pkt/s\tlost\t"
	}
	head += "tx cpu usr/sys\trx cpu usr/sys\tcpu-s/GB\ttx calls\ttx B/call\trx calls\trx B/call\tnot copied\t"
	fmt.Fprintln(tw, head)
	cells := strings.Count(head, "\t")
	for _, r := range rows {
		if r.Skipped != "" {
			fmt.Fprintf(tw, "%s\tskipped\t%s\n", r.Case, strings.Repeat("-\t", cells-2))
			continue
		}
		if r.Error != "" {
			// Every cell, so the columns below stay aligned; the reason
			// follows the table.
			fmt.Fprintf(tw, "%s\tfailed\t%s\n", r.Case, strings.Repeat("-\t", cells-2))
			continue
		}
		line := fmt.Sprintf("%s\t%s\t", r.Case, report.SIRate(r.BitsPerSec))
		if udp {
			line += fmt.Sprintf("%.0f\t%.2f%%\t", r.PacketsSec, r.LostPercent)
		}
		notCopied := "-"
		if r.NotCopied > 0 && r.Bytes > 0 {
			notCopied = fmt.Sprintf("%.0f%%", 100*float64(r.NotCopied)/float64(r.Bytes))
		}
		cpuPerGB := "-"
		if !r.TxCPUUnknown && !r.RxCPUUnknown {
			cpuPerGB = fmt.Sprintf("%.2f", r.CPUPerGB)
		}
		line += fmt.Sprintf("%s\t%s\t%s\t%d\t%.0f\t%d\t%.0f\t%s\t",
			cpuCell(r.TxCPU, r.TxCPUUnknown), cpuCell(r.RxCPU, r.RxCPUUnknown), cpuPerGB,
			r.TxCalls, r.TxPerCall, r.RxCalls, r.RxPerCall, notCopied)
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	cpu := "CPU is each end's thread (softirq work is charged to whichever thread the kernel ran it on; - where the backend moved data on threads of its own)"
	if len(rows) > 0 && rows[0].LocalEnd != "" {
		here, there := "tx", "rx"
		if rows[0].LocalEnd == "rx" {
			here, there = there, here
		}
		cpu = fmt.Sprintf("%s is this host, %s the server; CPU is each end's whole process over the test (a server running other tests charges theirs too; softirq work is charged to whichever process the kernel ran it on)", here, there)
	}
	fmt.Fprintf(w, "\n%s; not copied: bytes that never crossed between user memory and the kernel by a copy, both ends, as a share of the bytes received.\n", cpu)
	for _, r := range rows {
		if r.Skipped != "" {
			fmt.Fprintf(w, "  %s: skipped: %s\n", r.Case, r.Skipped)
		}
		if r.Error != "" {
			fmt.Fprintf(w, "  %s: failed: %s\n", r.Case, r.Error)
		}
		for _, n := range r.Notes {
			fmt.Fprintf(w, "  %s: %s\n", r.Case, n)
		}
	}
	return nil
}

// WriteJSON writes rows as JSON.
func WriteJSON(w io.Writer, rows []Row) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // "readwrite -> trunc", not "readwrite -\u003e trunc"
	return enc.Encode(rows)
}

// cpuCell renders one end's user/system seconds, or "-" when the end's
// backend ran on threads whose time was not measured.
func cpuCell(c CPU, unknown bool) string {
	if unknown {
		return "-"
	}
	return fmt.Sprintf("%.2f/%.2f", c.User, c.Sys)
}
