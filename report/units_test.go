package report

import "testing"

// TestFixedUnit checks -f against iperf3's unit_snprintf: the same number
// in each unit, and the widths iperf3 picks.
func TestFixedUnit(t *testing.T) {
	const bytesPerSec = 1234567890.0 // 9.88 Gbit/s
	for _, tc := range []struct {
		f    byte
		want string
	}{
		{'k', "9876543 Kbit"}, {'m', "9877 Mbit"}, {'g', "9.88 Gbit"}, {'t', "0.01 Tbit"},
		{'K', "1205633 KByte"}, {'M', "1177 MByte"}, {'G', "1.15 GByte"}, {'T', "0.00 TByte"},
	} {
		if got := FixedUnit(bytesPerSec, tc.f); got != tc.want {
			t.Errorf("-f %c: %q, want %q", tc.f, got, tc.want)
		}
	}
}

func TestRateUnit(t *testing.T) {
	for _, tc := range []struct {
		f, want string
	}{
		{"", "9.88 Gbit/s"}, {"a", "9.88 Gbit/s"}, {"m", "9877 Mbit/s"}, {"G", "1.15 GByte/s"},
	} {
		u, err := ParseRateUnit(tc.f)
		if err != nil {
			t.Fatalf("-f %q: %v", tc.f, err)
		}
		if got := u.Rate(8 * 1234567890.0); got != tc.want {
			t.Errorf("-f %q: %q, want %q", tc.f, got, tc.want)
		}
	}
	for _, bad := range []string{"x", "mm", "b"} {
		if _, err := ParseRateUnit(bad); err == nil || err.Error() != `-f "`+bad+`": use k, m, g or t for bits/s, K, M, G or T for bytes/s` {
			t.Errorf("-f %q: %v", bad, err)
		}
	}
}
