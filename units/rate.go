package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MaxBurst is iperf3's MAX_BURST; MaxRate bounds -b at 10 Tbit/s so that
// the bitrate fits iperf3's JSON integer.
const (
	MaxBurst = 1000
	MaxRate  = 10e12
)

// errBits is ParseBits' refusal, for callers that word their own.
var errBits = errors.New("want a rate such as 100M or 1G, at most 10T (0: unlimited)")

// ParseBits reads bits per second as iperf3's unit_atof_rate does: a
// number with an optional k, m, g or t suffix in either case, 1000-based
// ("1.5k" is 1500). Text that is no number, and a rate under 0, are
// refused; the caller bounds the rest in its own words: NaN and +Inf
// pass ("NaN", "Inf", "1e300G").
func ParseBits(s string) (float64, error) {
	if s == "" {
		return 0, errBits
	}
	mult, num := suffix(s, 1e3)
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 {
		return 0, errBits
	}
	return f * mult, nil
}

// ParseRate reads iperf3's -b: a bitrate as ParseBits reads it, then
// optionally "/BURST", the datagrams or buffers sent back to back (1 to
// MaxBurst). "0" means unlimited.
func ParseRate(s string) (bits float64, burst int, err error) {
	rate, b, slash := strings.Cut(s, "/")
	if slash {
		n, perr := strconv.Atoi(b)
		if perr != nil || n < 1 || n > MaxBurst {
			return 0, 0, fmt.Errorf("-b %q: the burst after / must be 1 to %d", s, MaxBurst)
		}
		burst = n
	}
	if rate == "" {
		return 0, 0, fmt.Errorf("-b %q: want a rate such as 100M or 1G (0: unlimited)", s)
	}
	if bits, err = ParseBits(rate); err != nil || !(bits <= MaxRate) { // NaN too
		return 0, 0, fmt.Errorf("-b %q: %w", s, errBits)
	}
	return bits, burst, nil
}

// RateFlag is a rate as -b takes it, for a command line blast suggests:
// G from 1 Gbit/s (exact), else M or K to a tenth: "500M", "86.3M",
// "1.25G", "64.5K".
func RateFlag(bps float64) string {
	switch {
	case bps >= 1e9:
		return strconv.FormatFloat(bps/1e9, 'f', -1, 64) + "G"
	case bps >= 1e6:
		return strconv.FormatFloat(math.Round(bps/1e5)/10, 'f', -1, 64) + "M"
	}
	return strconv.FormatFloat(math.Round(bps/1e2)/10, 'f', -1, 64) + "K"
}

// RateFlagBelow is a rate as -b takes it for a pace that must not pass
// bps: three significant digits rounded down, "94.1M", "1.2G", "999K".
func RateFlagBelow(bps float64) string {
	v, unit := bps, ""
	switch {
	case bps >= 1e9:
		v, unit = bps/1e9, "G"
	case bps >= 1e6:
		v, unit = bps/1e6, "M"
	case bps >= 1e3:
		v, unit = bps/1e3, "K"
	}
	digits := 2.0
	if v >= 100 {
		digits = 0
	} else if v >= 10 {
		digits = 1
	}
	scale := math.Pow(10, digits)
	return strconv.FormatFloat(math.Floor(v*scale)/scale, 'f', -1, 64) + unit
}
