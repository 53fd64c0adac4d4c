// Package finding is the one home of diagnosis findings: their severity,
// their form (a rule that fired on an interface or a path, with a summary,
// its evidence and a fix), the typed rule IDs and the registry that says
// what each rule finds, the evidence it needs and how it ranks. nicinfo's
// link rules, pathdiag's path rules, doctor and mesh make, rank, exchange
// and print findings in this form; the rule table in README.md is the
// registry's rendering (Table), checked by this package's tests.
package finding

import (
	"fmt"
	"strconv"
	"strings"
)

// Severity ranks a finding.
type Severity int

// Severities, least to most serious.
const (
	Info Severity = iota
	Warn
	Error
)

func (s Severity) String() string {
	switch s {
	case Info:
		return "INFO"
	case Warn:
		return "WARN"
	case Error:
		return "ERROR"
	}
	return "Severity(" + strconv.Itoa(int(s)) + ")"
}

// MarshalText makes severities read as words in JSON.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses INFO, WARN (or WARNING) or ERROR, in any case.
func (s *Severity) UnmarshalText(b []byte) error {
	switch strings.ToUpper(string(b)) {
	case "INFO":
		*s = Info
	case "WARN", "WARNING":
		*s = Warn
	case "ERROR":
		*s = Error
	default:
		return fmt.Errorf("finding: unknown severity %q (want INFO, WARN or ERROR)", b)
	}
	return nil
}

// Finding is one rule that fired.
type Finding struct {
	Rule     ID       `json:"rule"`
	Severity Severity `json:"severity"`
	// Iface is the interface the finding is about ("" for D7, which is about a path).
	Iface   string `json:"iface,omitempty"`
	Summary string `json:"summary"`
	// Evidence is the counter values, ratios and states that made the rule fire.
	Evidence string `json:"evidence"`
	Fix      string `json:"fix"`
	// Invalid: the finding means the measurement itself is not valid
	// (the link went down during it), not only why it is slow: a mode
	// fails such a result (exit status 1) and says so.
	Invalid bool `json:"invalid,omitempty"`
}

// FirstInvalid is the first finding of fs that makes a result invalid,
// or nil.
func FirstInvalid(fs []Finding) *Finding {
	for i := range fs {
		if fs[i].Invalid {
			return &fs[i]
		}
	}
	return nil
}

// Head is how a finding's line begins: its severity, rule and interface
// ("WARN D7" when it names no interface: a finding about the path).
func (f Finding) Head() string {
	if f.Iface == "" {
		return f.Severity.String() + " " + string(f.Rule)
	}
	return f.Severity.String() + " " + string(f.Rule) + " " + f.Iface
}

// String is the finding in one line: rule, summary, evidence.
func (f Finding) String() string {
	return fmt.Sprintf("%s %s (%s)", f.Rule, f.Summary, f.Evidence)
}
