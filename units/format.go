package units

import (
	"fmt"
	"strconv"
	"strings"
)

// Iperf is iperf3's unit_snprintf: n bytes in format's unit. Lower case
// converts to bits with 1000-based prefixes (b, k, m, g, t; a picks the
// largest prefix that leaves 1000 or less), upper case keeps bytes with
// 1024-based ones (B, K, M, G, T; A adapts); an unknown letter adapts as
// a and A do. The number fits 4 places where it can: "9.41 Gbit",
// "94.1 Mbit", " 941 Kbit", "1.30 GByte", "9877 Mbit" (a fixed unit too
// small for it). The caller adds iperf3's "s" and "/sec" or "/s".
func Iperf(n float64, format byte) string {
	bytes := format >= 'A' && format <= 'Z'
	labels, base := [...]string{"bit", "Kbit", "Mbit", "Gbit", "Tbit"}, 1000.0
	if bytes {
		labels, base = [...]string{"Byte", "KByte", "MByte", "GByte", "TByte"}, 1024
	} else {
		n *= 8
	}
	conv := strings.IndexByte("bkmgt", format|0x20)
	if conv < 0 { // adaptive
		conv = 0
		for v := n; v >= base && conv < len(labels)-1; conv++ {
			v /= base
		}
	}
	// iperf3 multiplies by 1/base^conv, which rounds as dividing by
	// base conv times does not.
	f := 1.0
	for range conv {
		f /= base
	}
	n *= f
	switch {
	case n < 9.995: // would round to 10.0
		return fmt.Sprintf("%4.2f %s", n, labels[conv])
	case n < 99.95: // would round to 100
		return fmt.Sprintf("%4.1f %s", n, labels[conv])
	}
	return fmt.Sprintf("%4.0f %s", n, labels[conv])
}

// IperfBytes formats a byte count as iperf3 does with 'A' (1024-based,
// adaptive): "1.30 GByte". Callers add the plural "s".
func IperfBytes(n float64) string { return Iperf(n, 'A') }

// IperfBits formats a rate given in bytes per second in bits with
// 1000-based prefixes, as iperf3 does with 'a': "11.1 Gbit".
func IperfBits(bytesPerSec float64) string { return Iperf(bytesPerSec, 'a') }

// Format is the -f of the measuring commands: 0 adapts (blast's SI bits
// per second), k, m, g or t fix 1000-based bits per second, K, M, G or T
// 1024-based bytes per second (iperf3's -f letters).
type Format byte

// ValidFormat reports whether f is one of the -f letters iperf3 takes:
// kmgtKMGT (not a, A, b or B, which its unit_snprintf knows).
func ValidFormat(f byte) bool { return strings.IndexByte("kmgtKMGT", f) >= 0 }

// ParseFormat reads -f: "" or "a" adapt, else one of kmgtKMGT.
func ParseFormat(s string) (Format, error) {
	switch {
	case s == "" || s == "a":
		return 0, nil
	case len(s) == 1 && ValidFormat(s[0]):
		return Format(s[0]), nil
	}
	return 0, fmt.Errorf("-f %q: use k, m, g or t for bits/s, K, M, G or T for bytes/s", s)
}

// Rate renders bits per second in the unit: SIRate when it adapts, else
// Iperf's fixed unit with "/s".
func (u Format) Rate(bitsPerSec float64) string {
	if u == 0 || u == 'a' {
		return SIRate(bitsPerSec)
	}
	return strings.TrimLeft(Iperf(bitsPerSec/8, byte(u)), " ") + "/s"
}

// SIRate formats bits per second with SI prefixes and two decimals:
// "9.41 Gbit/s", "941.00 Mbit/s" (blast's own lines and ttcp's).
func SIRate(bitsPerSec float64) string {
	div, unit := SIUnit(bitsPerSec)
	return fmt.Sprintf("%.2f %s", bitsPerSec/div, unit)
}

// SIUnit is the SI unit bits per second up to ref read best in: its
// divisor and name ("Gbit/s" from 1e9 up, then Mbit/s, Kbit/s, bit/s).
func SIUnit(ref float64) (div float64, name string) {
	switch {
	case ref >= 1e9:
		return 1e9, "Gbit/s"
	case ref >= 1e6:
		return 1e6, "Mbit/s"
	case ref >= 1e3:
		return 1e3, "Kbit/s"
	}
	return 1, "bit/s"
}

// Bits is a rate in a finding: three significant digits and its unit,
// "94.1 Mbit/s", "189 Mbit/s", "9.40 Gbit/s", "1.00 Gbit/s" (never
// "1000 Mbit/s": 999.5 and up rounds into the next unit).
func Bits(bps float64) string {
	v, unit := bitUnit(bps)
	return Sig3(v) + " " + unit
}

// BitsShort is Bits without the zeros that end a fraction: "95 Mbit/s",
// "9.4 Gbit/s", "1 Gbit/s", for a plot's labels and a flag's echo.
func BitsShort(bps float64) string {
	v, unit := bitUnit(bps)
	return Sig3Short(v) + " " + unit
}

// bitUnit is bps in the largest 1000-based unit (up to Tbit/s) in which
// it reads 999.5 or less.
func bitUnit(bps float64) (float64, string) {
	v, u := thousands(bps, 4)
	return v, [...]string{"bit/s", "Kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"}[u]
}

// thousands divides v by 1000 while it would print 1000 or more with 3
// significant digits, at most top times; u is how many times it did.
func thousands(v float64, top int) (float64, int) {
	u := 0
	for v >= 999.5 && u < top {
		v /= 1000
		u++
	}
	return v, u
}

// Count is a count per second in blast's load lines (interrupts, context
// switches, packets): whole under 1000, else three significant digits at
// most with k, M or G: "980", "12.5k", "1.2M", "1k" (not "1e+03k").
func Count(x float64) string {
	v, u := thousands(x, 3)
	if u == 0 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return Sig3Short(v) + [...]string{"", "k", "M", "G"}[u]
}

// Sig3 is v (under 1000) with three significant digits: as many decimals
// as that takes, none at 100 or more: 94.1, 9.41, 941, 9.40.
func Sig3(v float64) string {
	switch {
	case v >= 99.95 || v == 0:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 9.995:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// Sig3Short is Sig3 without the zeros that end a fraction: 3, 1.6, 12.5.
func Sig3Short(v float64) string {
	s := Sig3(v)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// TTCPRate formats a rate in bytes per second the way ttcp's -f does:
// k, m, g are bits, K, M, G bytes, all with 1024-based prefixes.
func TTCPRate(format byte, bytesPerSec float64) string {
	switch format {
	case 'G':
		return fmt.Sprintf("%.2f GB", bytesPerSec/1024/1024/1024)
	case 'M':
		return fmt.Sprintf("%.2f MB", bytesPerSec/1024/1024)
	case 'g':
		return fmt.Sprintf("%.2f Gbit", bytesPerSec*8/1024/1024/1024)
	case 'm':
		return fmt.Sprintf("%.2f Mbit", bytesPerSec*8/1024/1024)
	case 'k':
		return fmt.Sprintf("%.2f Kbit", bytesPerSec*8/1024)
	default: // 'K'
		return fmt.Sprintf("%.2f KB", bytesPerSec/1024)
	}
}
