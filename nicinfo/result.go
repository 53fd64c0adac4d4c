package nicinfo

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/internal/safetext"
)

// Result is what a test (or a pair of captures) says about one interface: its
// state at the end, the counter changes and the findings. Every blast result
// carries one per interface that moved the traffic.
type Result struct {
	Interface *Interface `json:"interface"`
	Delta     *Deltas    `json:"delta,omitempty"`
	// Renamed is set when the interface has another name in the second of
	// two captures: how it was followed across the rename.
	Renamed  *Match            `json:"renamed,omitempty"`
	Findings []finding.Finding `json:"findings"`
}

// Watch holds the snapshot taken before a test.
type Watch struct {
	src    *Source
	name   string
	before *Snapshot
}

// Watch snapshots the interface; call Stop after the test.
func (s *Source) Watch(name string) (*Watch, error) {
	snap, err := s.Snapshot(name)
	if err != nil {
		return nil, err
	}
	return &Watch{src: s, name: name, before: snap}, nil
}

// Stop snapshots again, inspects the interface and runs the rules. goodputBps
// is the test's goodput through this interface (0 if unknown); nicBound says the
// NIC was the narrowest point of the path (enables D9).
func (w *Watch) Stop(goodputBps float64, nicBound bool) (*Result, error) {
	after, err := w.src.Snapshot(w.name)
	if err != nil {
		return nil, err
	}
	d, err := Delta(w.before, after)
	if err != nil {
		return nil, err
	}
	ifc, err := w.src.Inspect(w.name)
	if err != nil {
		return nil, err
	}
	return &Result{Interface: ifc, Delta: d,
		Findings: Diagnose(Input{Iface: ifc, Delta: d, GoodputBps: goodputBps, NICBound: nicBound})}, nil
}

// WriteResult writes the full report, the counter changes and the findings.
func WriteResult(w io.Writer, r *Result) error {
	if m := r.Renamed; m != nil {
		if _, err := fmt.Fprintf(safetext.Writer(w), "%s before is %s after: same %s\n\n", m.Before, m.After, m.By); err != nil {
			return err
		}
	}
	if err := WriteReport(w, r.Interface); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if r.Delta != nil {
		if err := WriteDelta(w, r.Delta); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	return WriteFindings(w, r.Findings)
}

// WriteBrief writes the lines a test result ends with, each starting with
// prefix ("blast-t: "): the NIC summary, the nonzero counter changes on one
// line, and one line per finding.
func WriteBrief(w io.Writer, prefix string, r *Result) error {
	w = safetext.Writer(w) // names and counters come from files
	if _, err := fmt.Fprintf(w, "%snic %s\n", prefix, Summary(r.Interface)); err != nil {
		return err
	}
	if d := r.Delta; d != nil {
		var parts []string
		for _, k := range d.NonZero() {
			src, name, _ := strings.Cut(k, "/")
			if src == "driver" {
				parts = append(parts, name+"(-S) +"+strconv.FormatUint(d.DriverStats[name], 10))
			} else {
				parts = append(parts, name+" +"+strconv.FormatUint(d.Counters[name], 10))
			}
		}
		if c := d.CarrierChanges; c != nil && *c > 0 {
			parts = append(parts, "carrier_changes +"+strconv.FormatUint(*c, 10))
		}
		line := "no counter changed"
		if len(parts) > 0 {
			line = strings.Join(parts, ", ")
		}
		if len(d.Resets) > 0 {
			line += "; reset: " + strings.Join(d.Resets, ", ")
		}
		if d.Restarted != "" {
			line += "; counted from zero: " + d.Restarted
		}
		if _, err := fmt.Fprintf(w, "%snic deltas %s: %s\n", prefix, d.Name, line); err != nil {
			return err
		}
	}
	for _, f := range r.Findings {
		if _, err := fmt.Fprintf(w, "%s%s: %s (%s). Fix: %s\n", prefix, f.Head(), f.Summary, f.Evidence, f.Fix); err != nil {
			return err
		}
	}
	return nil
}

// Invalid is the first finding that makes the result invalid (nil: none,
// or no result).
func (r *Result) Invalid() *finding.Finding {
	if r == nil {
		return nil
	}
	return finding.FirstInvalid(r.Findings)
}
