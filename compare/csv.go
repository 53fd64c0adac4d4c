package compare

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"

	"github.com/blastnet/blast/engine"
)

// csvHeader is the one header line of WriteCSV: the unit of each figure
// is in its name.
var csvHeader = []string{
	"case", "tx", "tx_opts", "rx", "rx_opts", "status", "reason", "local_end",
	"seconds", "bytes_sent", "bytes_received", "datagrams_sent", "datagrams_received",
	"bits_per_second", "packets_per_second", "lost_pct",
	"tx_cpu_user_s", "tx_cpu_sys_s", "rx_cpu_user_s", "rx_cpu_sys_s", "cpu_s_per_gb",
	"tx_io_calls", "tx_bytes_per_call", "rx_io_calls", "rx_bytes_per_call",
	"tx_syscalls", "rx_syscalls", "not_copied_bytes", "tx_not_copied_bytes", "rx_not_copied_bytes", "notes",
}

// WriteCSV writes rows as CSV, the figures of WriteTable unrounded: one
// header line, then one row per case in order. case is the table's name
// of the case ("mmsg[gso] -> mmsg[gro]"), tx and rx its backends, tx_opts
// and rx_opts their options. status is ok, skipped or failed; reason says
// why a case was skipped or failed, and the other figures of such a row
// are empty. local_end is the end this host ran in the HOST form (tx or
// rx; empty in lab mode).
//
// datagrams_*, packets_per_second and lost_pct are set on rows that
// counted datagrams (UDP). An end whose CPU is not measured (its backend
// ran on threads of its own) has empty CPU cells, and then cpu_s_per_gb
// is empty too. tx_syscalls and rx_syscalls are empty where the backend
// does not count its system calls. not_copied_bytes is the bytes both ends moved without a
// copy between user memory and the kernel; the table's share of it is
// not_copied_bytes/bytes_received. notes are the case's notes joined by
// "; ". Seconds have 6 decimals, rates none, lost_pct and cpu_s_per_gb 4,
// bytes per call 1; counts are integers.
func WriteCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	for _, r := range rows {
		if err := cw.Write(csvRow(r)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// csvRow is one row's cells.
func csvRow(r Row) []string {
	tx, rx, _ := strings.Cut(r.Case, " -> ")
	txName, txOpts := splitBackend(tx)
	rxName, rxOpts := splitBackend(rx)
	status, reason := "ok", ""
	switch {
	case r.Skipped != "":
		status, reason = "skipped", r.Skipped
	case r.Error != "":
		status, reason = "failed", r.Error
	}
	row := []string{r.Case, txName, txOpts, rxName, rxOpts, status, reason, r.LocalEnd}
	if status != "ok" {
		return append(row, make([]string, len(csvHeader)-len(row))...)
	}
	i := strconv.FormatInt
	f := func(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	udp := r.Datagrams > 0 || r.SentDgrams > 0
	opt := func(ok bool, s string) string {
		if !ok {
			return ""
		}
		return s
	}
	return append(row,
		f(r.Seconds, 6), i(r.SentBytes, 10), i(r.Bytes, 10),
		opt(udp, i(r.SentDgrams, 10)), opt(udp, i(r.Datagrams, 10)),
		f(r.BitsPerSec, 0), opt(udp, f(r.PacketsSec, 0)), opt(udp, f(r.LostPercent, 4)),
		opt(!r.TxCPUUnknown, f(r.TxCPU.User, 6)), opt(!r.TxCPUUnknown, f(r.TxCPU.Sys, 6)),
		opt(!r.RxCPUUnknown, f(r.RxCPU.User, 6)), opt(!r.RxCPUUnknown, f(r.RxCPU.Sys, 6)),
		opt(!r.TxCPUUnknown && !r.RxCPUUnknown, f(r.CPUPerGB, 4)),
		i(r.TxCalls, 10), f(r.TxPerCall, 1), i(r.RxCalls, 10), f(r.RxPerCall, 1),
		opt(hasFact(r.TxFacts, engine.FactSyscalls), i(r.TxSyscalls, 10)),
		opt(hasFact(r.RxFacts, engine.FactSyscalls), i(r.RxSyscalls, 10)),
		i(r.NotCopied, 10),
		i(r.TxNotCopied, 10),
		i(r.RxNotCopied, 10),
		strings.Join(r.Notes, "; "),
	)
}

// hasFact reports whether an end's backend reported the fact.
func hasFact(facts map[string]int64, name string) bool {
	_, ok := facts[name]
	return ok
}

// splitBackend splits one side of a case's name, "mmsg[gso]", into the
// backend and its options (see Case.Name).
func splitBackend(side string) (name, opts string) {
	if n, rest, ok := strings.Cut(side, "["); ok && strings.HasSuffix(rest, "]") {
		return n, strings.TrimSuffix(rest, "]")
	}
	return side, ""
}
