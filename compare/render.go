package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/blastnet/blast/stats"
	"github.com/blastnet/blast/units"
)

// WriteTable prints rows as one aligned table, then each row's notes; the
// throughput in unit (-f; 0: SI bits per second, as fits each).
func WriteTable(w io.Writer, rows []Row, udp bool, unit units.Format) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	repeats := false
	for _, r := range rows {
		repeats = repeats || r.Repeat != nil
	}
	same := NotDifferent(rows)
	head := "backend (tx -> rx)\tthroughput\t"
	if repeats {
		head = "#\tbackend (tx -> rx)\tthroughput (mean ± CI)\truns\tnot different from\t"
	}
	if udp {
		head += "pkt/s\tlost\t"
	}
	head += "tx cpu usr/sys\trx cpu usr/sys\tcpu-s/GB\ttx calls\ttx B/call\trx calls\trx B/call\ttx not copied\trx not copied\t"
	fmt.Fprintln(tw, head)
	cells := strings.Count(head, "\t")
	for i, r := range rows {
		name := r.Case
		lead := 2
		if repeats {
			name = fmt.Sprintf("%d\t%s", i+1, r.Case)
			lead = 3
		}
		if r.Skipped != "" {
			fmt.Fprintf(tw, "%s\tskipped\t%s\n", name, strings.Repeat("-\t", cells-lead))
			continue
		}
		if r.Error != "" {
			// Every cell, so the columns below stay aligned; the reason
			// follows the table.
			fmt.Fprintf(tw, "%s\tfailed\t%s\n", name, strings.Repeat("-\t", cells-lead))
			continue
		}
		line := fmt.Sprintf("%s\t%s\t", name, unit.Rate(r.BitsPerSec))
		if repeats {
			ci, runs, others := "", "1", "-"
			if rp := r.Repeat; rp != nil {
				ci = " ±" + stats.Percent(rp.Summary.HalfWidthPct)
				runs = fmt.Sprint(rp.Runs)
			}
			if len(same[i]) > 0 {
				var ns []string
				for _, j := range same[i] {
					ns = append(ns, fmt.Sprintf("#%d", j+1))
				}
				others = strings.Join(ns, " ")
			}
			line = fmt.Sprintf("%s\t%s%s\t%s\t%s\t", name, unit.Rate(r.BitsPerSec), ci, runs, others)
		}
		if udp {
			line += fmt.Sprintf("%.0f\t%.2f%%\t", r.PacketsSec, r.LostPercent)
		}
		share := func(n, of int64) string {
			if n <= 0 || of <= 0 {
				return "-"
			}
			return fmt.Sprintf("%.0f%%", 100*float64(n)/float64(of))
		}
		txNC, rxNC := share(r.TxNotCopied, r.SentBytes), share(r.RxNotCopied, r.Bytes)
		cpuPerGB := "-"
		if !r.TxCPUUnknown && !r.RxCPUUnknown {
			cpuPerGB = fmt.Sprintf("%.2f", r.CPUPerGB)
		}
		line += fmt.Sprintf("%s\t%s\t%s\t%d\t%.0f\t%d\t%.0f\t%s\t%s\t",
			cpuCell(r.TxCPU, r.TxCPUUnknown), cpuCell(r.RxCPU, r.RxCPUUnknown), cpuPerGB,
			r.TxCalls, r.TxPerCall, r.RxCalls, r.RxPerCall, txNC, rxNC)
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
	fmt.Fprintf(w, "\n%s; not copied: per end, the share of the bytes that end moved without a copy between user memory and the kernel (sendfile, splice and MSG_ZEROCOPY send so; MSG_TRUNC and splice receive so; a write(2) sender copies every byte, whatever the receiver does).\n", cpu)
	if repeats {
		level := "95%"
		for _, r := range rows {
			if r.Repeat != nil {
				level = stats.LevelPercent(r.Repeat.Summary.Level)
				break
			}
		}
		fmt.Fprintf(w, "Throughput is the mean of each row's runs, ± the half-width of its %s confidence interval as a share of the mean; rows whose intervals overlap are not different (the gap is within the noise); the other columns are each row's last run.\n", level)
		for _, r := range rows {
			if r.Repeat != nil {
				if note := r.Repeat.Note(); note != "" {
					fmt.Fprintf(w, "  %s: %s\n", r.Case, note)
				}
			}
		}
	}
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
