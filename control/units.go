package control

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MaxSize is the largest size ParseSize returns: what an int64 holds,
// 8 EiB less one byte.
const MaxSize = math.MaxInt64

// ErrSizeRange is a size larger than MaxSize: ParseSize's error wraps it,
// and says "too large (at most 9223372036854775807)".
var ErrSizeRange = fmt.Errorf("too large (at most %d)", int64(MaxSize))

// ParseSize reads a size as iperf3 does (unit_atoi): a number with an
// optional K, M, G or T suffix, 1024-based. "1.5M" is 1572864. A size
// that does not fit an int64 is refused with an error wrapping
// ErrSizeRange, never wrapped around to a negative one.
func ParseSize(s string) (int64, error) {
	if s == "" {
		return 0, fmt.Errorf("empty size")
	}
	mult := 1.0
	switch s[len(s)-1] {
	case 'k', 'K':
		mult = 1 << 10
	case 'm', 'M':
		mult = 1 << 20
	case 'g', 'G':
		mult = 1 << 30
	case 't', 'T':
		mult = 1 << 40
	}
	num := s
	if mult != 1 {
		num = s[:len(s)-1]
	} else if n, err := strconv.ParseInt(num, 10, 64); err == nil && n >= 0 {
		return n, nil // a whole number of bytes, exactly (a float has 53 bits)
	}
	f, err := strconv.ParseFloat(num, 64)
	switch {
	case errors.Is(err, strconv.ErrRange) && f > 0, err == nil && !math.IsInf(f, 0) && f*mult >= 0x1p63:
		return 0, fmt.Errorf("size %q: %w", s, ErrSizeRange)
	case err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0):
		return 0, fmt.Errorf("size %q: want a number with an optional K, M, G or T suffix", s)
	}
	return int64(f * mult), nil
}

// ParseSizeFlag is ParseSize for a command-line flag: its errors name
// the flag and its value, and what to give instead ("want" such as "a
// byte count such as 100M or 1G"). A size of 0 is refused unless zero
// is true.
func ParseSizeFlag(flag, s, want string, zero bool) (int64, error) {
	n, err := ParseSize(s)
	switch {
	case errors.Is(err, ErrSizeRange):
		return 0, fmt.Errorf("%s %s: %w", flag, s, ErrSizeRange)
	case err != nil || (n == 0 && !zero):
		return 0, fmt.Errorf("%s %q: want %s", flag, s, want)
	}
	return n, nil
}

// dscpNames are the DiffServ code point names iperf3's --dscp accepts.
var dscpNames = map[string]int{
	"cs0": 0, "cs1": 8, "cs2": 16, "cs3": 24, "cs4": 32, "cs5": 40, "cs6": 48, "cs7": 56,
	"af11": 10, "af12": 12, "af13": 14, "af21": 18, "af22": 20, "af23": 22,
	"af31": 26, "af32": 28, "af33": 30, "af41": 34, "af42": 36, "af43": 38,
	"ef": 46, "va": 44, "le": 1,
}

// ParseDSCP reads a DSCP as a number (0-63, decimal, 0x hex or 0 octal)
// or a name (EF, AF11, CS1, ...) and returns the TOS byte (dscp << 2).
func ParseDSCP(s string) (int, error) {
	if v, ok := dscpNames[strings.ToLower(s)]; ok {
		return v << 2, nil
	}
	v, err := strconv.ParseInt(s, 0, 32)
	if err != nil || v < 0 || v > 63 {
		return 0, fmt.Errorf("DSCP %q: want 0 to 63 or a name such as EF, AF11, CS1", s)
	}
	return int(v) << 2, nil
}

// ParseTOS reads a TOS byte as iperf3's -S does (strtol base 0: decimal,
// 0x hex, 0 octal).
func ParseTOS(s string) (int, error) {
	v, err := strconv.ParseInt(s, 0, 32)
	if err != nil || v < 0 || v > 255 {
		return 0, fmt.Errorf("TOS %q: want 0 to 255 (decimal, 0x hex or 0 octal)", s)
	}
	return int(v), nil
}
