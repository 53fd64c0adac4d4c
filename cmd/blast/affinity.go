package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/engine"
)

// affinity is what -A's value means, read as iperf3's parser reads it.
type affinity struct {
	cpu     int    // the client's CPU
	server  *int   // the server's CPU (after a comma), nil without one
	warning string // what iperf3 reads past or wraps without a word, or ""
}

// parseAffinity reads -A's value as iperf3 does (iperf_api.c, option
// 'A'): the client's CPU is the number at the start in C's base 0
// (decimal, 0x hex or 0 octal, after blanks and a sign), whatever follows
// it ignored; if a comma appears anywhere, the server's CPU is the decimal
// number after the first one, 0 when there is none. Both are C ints
// (wrapped at 32 bits) and must be 0 to 1024 (blast pins the client to
// 1023 at most, as iperf3 fails to pin to 1024). So "1/1" is CPU 1 and no
// server CPU, and "1,x" asks the server for CPU 0; both warn.
func parseAffinity(s string) (affinity, error) {
	bad := func(why string) (affinity, error) {
		return affinity{}, fmt.Errorf("-A %s: unable to set CPU affinity: %s", s, why)
	}
	cpu, n := cStrtol(s, 0)
	if n == 0 {
		return bad("want N or N,M, with N the client's CPU and M the server's")
	}
	a := affinity{cpu: int(int32(cpu))}
	if a.cpu < 0 || a.cpu > engine.MaxCPU {
		return bad(fmt.Sprintf("the client's CPU N must be 0 to %d", engine.MaxCPU))
	}
	canon := fmt.Sprint(a.cpu)
	var notes []string
	if int64(a.cpu) != cpu {
		notes = append(notes, fmt.Sprintf("%s wraps to %d in a C int", strings.TrimSpace(s[:n]), a.cpu))
	}
	comma := strings.IndexByte(s, ',')
	if comma < 0 {
		if rest := s[n:]; rest != "" {
			notes = append(notes, fmt.Sprintf("it ignores %q", rest))
			if strings.ContainsAny(rest, "0123456789") {
				notes = append(notes, "-A N,M asks the server for CPU M")
			}
		}
	} else {
		if between := s[n:comma]; between != "" {
			notes = append(notes, fmt.Sprintf("it ignores %q", between))
		}
		after := s[comma+1:]
		m, k := cStrtol(after, 10)
		srv := int(int32(m))
		if srv < 0 || srv > wire.MaxServerAffinity {
			return bad(fmt.Sprintf("the server's CPU M must be 0 to %d", wire.MaxServerAffinity))
		}
		a.server = &srv
		canon += fmt.Sprint(",", srv)
		switch {
		case k == 0:
			notes = append(notes, fmt.Sprintf("the server's CPU %q reads as 0", after))
		case int64(srv) != m:
			notes = append(notes, fmt.Sprintf("%s wraps to %d in a C int", strings.TrimSpace(after[:k]), srv))
		}
		if k > 0 && after[k:] != "" {
			notes = append(notes, fmt.Sprintf("it ignores %q", after[k:]))
		}
	}
	if len(notes) > 0 {
		a.warning = fmt.Sprintf("warning: -A %s is read as -A %s, as iperf3 reads it: %s", s, canon, strings.Join(notes, "; "))
	}
	return a, nil
}

// cStrtol reads a number at the start of s as C's strtol does: blanks,
// a sign, then digits of base (0: a 0x prefix is hex, a leading 0 octal,
// else decimal), clamped to the range of a 64-bit long. It returns the
// number and how many bytes of s it read, 0 when there were no digits.
func cStrtol(s string, base int) (int64, int) {
	i := 0
	for i < len(s) && strings.IndexByte(" \t\n\v\f\r", s[i]) >= 0 {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	digit := func(c byte) int {
		switch {
		case c >= '0' && c <= '9':
			return int(c - '0')
		case c >= 'a' && c <= 'z':
			return int(c-'a') + 10
		case c >= 'A' && c <= 'Z':
			return int(c-'A') + 10
		}
		return 99
	}
	if base == 0 {
		switch {
		case i+2 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') && digit(s[i+2]) < 16:
			base, i = 16, i+2
		case i < len(s) && s[i] == '0':
			base = 8
		default:
			base = 10
		}
	}
	start := i
	var v uint64
	over := false
	for i < len(s) && digit(s[i]) < base {
		d := uint64(digit(s[i]))
		if v > (math.MaxUint64-d)/uint64(base) {
			over = true
		} else {
			v = v*uint64(base) + d
		}
		i++
	}
	if i == start {
		return 0, 0
	}
	switch {
	case neg && (over || v > 1<<63):
		return math.MinInt64, i
	case neg:
		return -int64(v), i
	case over || v > math.MaxInt64:
		return math.MaxInt64, i
	}
	return int64(v), i
}
