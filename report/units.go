package report

import "fmt"

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
	switch {
	case bitsPerSec >= 1e9:
		return fmt.Sprintf("%.2f Gbit/s", bitsPerSec/1e9)
	case bitsPerSec >= 1e6:
		return fmt.Sprintf("%.2f Mbit/s", bitsPerSec/1e6)
	case bitsPerSec >= 1e3:
		return fmt.Sprintf("%.2f Kbit/s", bitsPerSec/1e3)
	}
	return fmt.Sprintf("%.2f bit/s", bitsPerSec)
}
