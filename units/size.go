// Package units is blast's one home for the sizes and rates it reads from
// users and peers and the ones it prints: iperf3's 1024-based sizes (-n,
// -l, -w with K, M, G or T), its 1000-based rates (-b with k, m, g or t,
// and -b's /BURST), its -f letters and unit_snprintf's output, ttcp's -f,
// blast's own SI rates, and the three significant digits of blast's
// findings. Parsers check for overflow and bound what they return; each
// error is one line that names the value and what to give instead.
package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
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
	mult, num := suffix(s, 1<<10)
	if mult == 1 {
		if n, err := strconv.ParseInt(num, 10, 64); err == nil && n >= 0 {
			return n, nil // a whole number of bytes, exactly (a float has 53 bits)
		}
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

// Bytes is a size in a finding, in binary units: "4.0 MiB", "1.5 GiB",
// "96 KiB" from 64 KiB up, "1500 bytes" below.
func Bytes(n int64) string {
	switch {
	case n >= 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + " GiB"
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	case n >= 1<<16:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 0, 64) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// SizeFlag is n rounded up to a whole K or M, as -w takes it (ParseSize
// reads it back as n or more): "4M", "96K".
func SizeFlag(n int64) string {
	if n >= 1<<20 {
		return strconv.FormatInt((n+1<<20-1)>>20, 10) + "M"
	}
	return strconv.FormatInt((n+1<<10-1)>>10, 10) + "K"
}

// suffix splits s (not empty) into its number and the multiplier of its
// k, m, g or t suffix in either case, powers of base; 1 and s without one.
func suffix(s string, base float64) (mult float64, num string) {
	conv := 0
	switch s[len(s)-1] {
	case 'k', 'K':
		conv = 1
	case 'm', 'M':
		conv = 2
	case 'g', 'G':
		conv = 3
	case 't', 'T':
		conv = 4
	default:
		return 1, s
	}
	mult = 1
	for range conv {
		mult *= base
	}
	return mult, s[:len(s)-1]
}
