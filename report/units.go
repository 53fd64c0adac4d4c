package report

import (
	"fmt"
	"strings"
)

// Rates and sizes are rendered here, once, for every mode: SIRate for
// blast's own lines (SI bits per second), IperfBits and IperfBytes for
// iperf3's text (its unit_snprintf), TTCPRate for ttcp's -f.

// IperfBytes formats a byte count as iperf3's unit_snprintf does with 'A'
// (1024-based, adaptive): "1.30 GByte". Callers add the plural "s".
func IperfBytes(n float64) string {
	return iperfUnit(n, 1024, [...]string{"Byte", "KByte", "MByte", "GByte", "TByte"})
}

// IperfBits formats a rate given in bytes per second in bits with
// 1000-based prefixes, as iperf3 does with 'a': "11.1 Gbit".
func IperfBits(bytesPerSec float64) string {
	return iperfUnit(bytesPerSec*8, 1000, [...]string{"bit", "Kbit", "Mbit", "Gbit", "Tbit"})
}

func iperfUnit(n, base float64, labels [5]string) string {
	conv := 0
	for n >= base && conv < len(labels)-1 {
		n /= base
		conv++
	}
	switch {
	case n < 9.995:
		return fmt.Sprintf("%4.2f %s", n, labels[conv])
	case n < 99.95:
		return fmt.Sprintf("%4.1f %s", n, labels[conv])
	default:
		return fmt.Sprintf("%4.0f %s", n, labels[conv])
	}
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

// SIRate formats bits per second with SI prefixes, as iperf3 does.
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

// RateUnit is the -f of the measuring commands: 0 adapts (blast's SI bits
// per second), k, m, g or t fix 1000-based bits per second, K, M, G or T
// 1024-based bytes per second (iperf3's -f letters).
type RateUnit byte

// ParseRateUnit reads -f: "" or "a" adapt, else one of kmgtKMGT.
func ParseRateUnit(s string) (RateUnit, error) {
	switch {
	case s == "" || s == "a":
		return 0, nil
	case len(s) == 1 && strings.IndexByte("kmgtKMGT", s[0]) >= 0:
		return RateUnit(s[0]), nil
	}
	return 0, fmt.Errorf("-f %q: use k, m, g or t for bits/s, K, M, G or T for bytes/s", s)
}

// Rate renders bits per second in the unit: SIRate when it adapts, else
// FixedUnit with "/s".
func (u RateUnit) Rate(bitsPerSec float64) string {
	if u == 0 || u == 'a' {
		return SIRate(bitsPerSec)
	}
	return strings.TrimLeft(FixedUnit(bitsPerSec/8, byte(u)), " ") + "/s"
}

// FixedUnit is iperf3's unit_snprintf with a fixed unit: k, m, g, t
// convert bytes to bits with 1000-based prefixes, K, M, G, T keep bytes
// with 1024-based ones ("9410 Mbit", "1.10 GByte"; the caller adds "/s"
// or iperf3's "s/sec").
func FixedUnit(bytesPerSec float64, format byte) string {
	n := bytesPerSec
	labels, base := [...]string{"bit", "Kbit", "Mbit", "Gbit", "Tbit"}, 1000.0
	if format >= 'A' && format <= 'Z' {
		labels, base = [...]string{"Byte", "KByte", "MByte", "GByte", "TByte"}, 1024
	} else {
		n *= 8
	}
	conv := strings.IndexByte("_kmgt", format|0x20)
	if conv < 0 {
		conv = 0
	}
	for range conv {
		n /= base
	}
	switch {
	case n < 9.995:
		return fmt.Sprintf("%4.2f %s", n, labels[conv])
	case n < 99.95:
		return fmt.Sprintf("%4.1f %s", n, labels[conv])
	}
	return fmt.Sprintf("%4.0f %s", n, labels[conv])
}
