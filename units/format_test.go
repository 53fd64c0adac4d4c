package units

import "testing"

// TestIperf is unit_snprintf's output (iperf3's units.c) at its edges:
// the widths it picks (two decimals under 9.995, one under 99.95, none
// from there), adaptive units that step at 1000 bits or 1024 bytes and so
// print "1000 bit" and "1023 KByte" below the step, the bits of a byte
// count times 8, a fixed unit too small or too large, and the cap at T.
// Checked against iperf3 3.12's own unit_snprintf (libiperf): 20000
// values in 12 letters, 4800 next to each width's edge in 10, no
// difference.
func TestIperf(t *testing.T) {
	for _, tc := range []struct {
		n    float64
		f    byte
		want string
	}{
		{0, 'a', "0.00 bit"},
		{0, 'A', "0.00 Byte"},
		{1, 'a', "8.00 bit"},
		{1.249, 'a', "9.99 bit"},
		{1.2494, 'a', "10.0 bit"}, // 9.9952 would round to 10.00
		{12.4, 'a', "99.2 bit"},
		{12.494, 'a', " 100 bit"}, // 99.952 would round to 100.0
		{124.9, 'a', " 999 bit"},
		{124.99, 'a', "1000 bit"}, // 999.92 bits: under the step, 4 places
		{125, 'a', "1.00 Kbit"},
		{1250, 'A', "1.22 KByte"},
		{1000, 'A', "1000 Byte"},
		{1023.9, 'A', "1024 Byte"},
		{1024, 'A', "1.00 KByte"},
		{1 << 20, 'A', "1.00 MByte"},
		{1048575, 'A', "1024 KByte"},
		{1.3 * (1 << 30), 'A', "1.30 GByte"},
		{1.25e12, 'a', "10.0 Tbit"},
		{5e15, 'a', "40000 Tbit"}, // no prefix past T
		{5e15, 'A', "4547 TByte"},
		{1234567890, 'k', "9876543 Kbit"},
		{1234567890, 'm', "9877 Mbit"},
		{1234567890, 'g', "9.88 Gbit"},
		{1234567890, 't', "0.01 Tbit"},
		{1234567890, 'K', "1205633 KByte"},
		{1234567890, 'M', "1177 MByte"},
		{1234567890, 'G', "1.15 GByte"},
		{1234567890, 'T', "0.00 TByte"},
		{1234567890, 'b', "9876543120 bit"},
		{1234567890, 'B', "1234567890 Byte"},
		{12.5e3, 'm', "0.10 Mbit"},
		{1234567890, 'x', "9.88 Gbit"}, // an unknown letter adapts, as iperf3's default case
		// iperf3 multiplies by 1/1000^conv: dividing by 1000 conv times
		// rounded these across a width's edge (blast's text until now).
		{1249.3749999999998, 'a', "10.0 Kbit"},
		{1249.3749999999998, 'k', "10.0 Kbit"},
		{12493750, 'a', "99.9 Mbit"},
		{12493750, 'm', "99.9 Mbit"},
	} {
		if got := Iperf(tc.n, tc.f); got != tc.want {
			t.Errorf("Iperf(%g, %c) = %q, want %q", tc.n, tc.f, got, tc.want)
		}
	}
	if got, want := IperfBytes(1.3*(1<<30)), "1.30 GByte"; got != want {
		t.Errorf("IperfBytes: %q, want %q", got, want)
	}
	if got, want := IperfBits(1234567890), "9.88 Gbit"; got != want {
		t.Errorf("IperfBits: %q, want %q", got, want)
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		f, want string
	}{
		{"", "9.88 Gbit/s"}, {"a", "9.88 Gbit/s"}, {"m", "9877 Mbit/s"}, {"G", "1.15 GByte/s"}, {"k", "9876543 Kbit/s"},
	} {
		u, err := ParseFormat(tc.f)
		if err != nil {
			t.Fatalf("-f %q: %v", tc.f, err)
		}
		if got := u.Rate(8 * 1234567890.0); got != tc.want {
			t.Errorf("-f %q: %q, want %q", tc.f, got, tc.want)
		}
	}
	for _, bad := range []string{"x", "mm", "b", "A", "B"} {
		if _, err := ParseFormat(bad); err == nil || err.Error() != `-f "`+bad+`": use k, m, g or t for bits/s, K, M, G or T for bytes/s` {
			t.Errorf("-f %q: %v", bad, err)
		}
	}
	for _, f := range []byte("kmgtKMGT") {
		if !ValidFormat(f) {
			t.Errorf("%c refused", f)
		}
	}
	for _, f := range []byte("abxAB0") {
		if ValidFormat(f) {
			t.Errorf("%c taken: iperf3 takes only kmgtKMGT", f)
		}
	}
}

// TestBits: three significant digits for blast's findings, stepping up a
// unit where the rounding would print 1000.
func TestBits(t *testing.T) {
	for _, tc := range []struct {
		bps  float64
		want string
	}{
		{0, "0 bit/s"}, {94.1e6, "94.1 Mbit/s"}, {189.4e6, "189 Mbit/s"}, {44.7e9, "44.7 Gbit/s"},
		{9.4e9, "9.40 Gbit/s"}, {9.996e6, "10.0 Mbit/s"}, {99.96e6, "100 Mbit/s"},
		{999.4e6, "999 Mbit/s"}, {999.5e6, "1.00 Gbit/s"}, {1.5e15, "1500 Tbit/s"}, {500, "500 bit/s"},
	} {
		if got := Bits(tc.bps); got != tc.want {
			t.Errorf("Bits(%g) = %q, want %q", tc.bps, got, tc.want)
		}
	}
}

func TestSIRate(t *testing.T) {
	for _, tc := range []struct {
		bps  float64
		want string
	}{
		{0, "0.00 bit/s"}, {999, "999.00 bit/s"}, {1e3, "1.00 Kbit/s"}, {93.21e6, "93.21 Mbit/s"},
		{999.999e6, "1000.00 Mbit/s"}, {12.9e9, "12.90 Gbit/s"}, {2e12, "2000.00 Gbit/s"},
	} {
		if got := SIRate(tc.bps); got != tc.want {
			t.Errorf("SIRate(%g) = %q, want %q", tc.bps, got, tc.want)
		}
	}
}

func TestTTCPRate(t *testing.T) {
	const bps = 1 << 30 // one GiB per second
	for f, want := range map[byte]string{
		'k': "8388608.00 Kbit", 'K': "1048576.00 KB", 'm': "8192.00 Mbit",
		'M': "1024.00 MB", 'g': "8.00 Gbit", 'G': "1.00 GB",
	} {
		if got := TTCPRate(f, bps); got != want {
			t.Errorf("-f %c: got %q, want %q", f, got, want)
		}
	}
}

// TestBitsShort: Bits without a fraction's ending zeros, for plots and
// flags; 999.5 and up is the next unit ("%.3g" printed "1e+03 Mbit/s").
func TestBitsShort(t *testing.T) {
	for _, tc := range []struct {
		bps  float64
		want string
	}{
		{95e6, "95 Mbit/s"}, {9.4e9, "9.4 Gbit/s"}, {1e9, "1 Gbit/s"}, {9.41e9, "9.41 Gbit/s"},
		{481e6, "481 Mbit/s"}, {999.7e6, "1 Gbit/s"}, {0, "0 bit/s"}, {12.05e3, "12.1 Kbit/s"},
	} {
		if got := BitsShort(tc.bps); got != tc.want {
			t.Errorf("BitsShort(%g) = %q, want %q", tc.bps, got, tc.want)
		}
	}
	for v, want := range map[float64]string{3: "3", 1.6: "1.6", 12.5: "12.5", 340: "340", 9.996: "10", 0.5: "0.5", 2.10: "2.1"} {
		if got := Sig3Short(v); got != want {
			t.Errorf("Sig3Short(%g) = %q, want %q", v, got, want)
		}
	}
}

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		x    float64
		want string
	}{
		{0, "0"}, {980, "980"}, {999.4, "999"}, {999.7, "1k"}, {12.5e3, "12.5k"}, {1.2e6, "1.2M"},
		{999.7e3, "1M"}, {123456, "123k"}, {1.5e9, "1.5G"}, {2e12, "2000G"},
	} {
		if got := Count(tc.x); got != tc.want {
			t.Errorf("Count(%g) = %q, want %q", tc.x, got, tc.want)
		}
	}
}
