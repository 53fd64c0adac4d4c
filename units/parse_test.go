package units

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

// oneLine fails t when err's text spans lines.
func oneLine(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil && strings.ContainsAny(err.Error(), "\r\n") {
		t.Errorf("%s: error of more than one line: %q", what, err)
	}
}

// TestParseSizeRange: sizes past an int64 are refused as too large, never
// wrapped around to a negative size; the largest whole one is exact.
func TestParseSizeRange(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  string
	}{
		{"9223372036854775807", math.MaxInt64, ""},
		{"8388607T", 8388607 << 40, ""},
		{"99999999999999999999", 0, `size "99999999999999999999": too large (at most 9223372036854775807)`},
		{"9223372036854775808", 0, `size "9223372036854775808": too large (at most 9223372036854775807)`},
		{"8388608T", 0, `size "8388608T": too large (at most 9223372036854775807)`},
		{"1e19", 0, `size "1e19": too large (at most 9223372036854775807)`},
		{"1e400", 0, `size "1e400": too large (at most 9223372036854775807)`},
		{"1e300T", 0, `size "1e300T": too large (at most 9223372036854775807)`},
		{"NaN", 0, `size "NaN": want a number with an optional K, M, G or T suffix`},
		{"Inf", 0, `size "Inf": want a number with an optional K, M, G or T suffix`},
		{"-Inf", 0, `size "-Inf": want a number with an optional K, M, G or T suffix`},
		{"-1e400", 0, `size "-1e400": want a number with an optional K, M, G or T suffix`},
		{"-99999999999999999999", 0, `size "-99999999999999999999": want a number with an optional K, M, G or T suffix`},
		{"-1K", 0, `size "-1K": want a number with an optional K, M, G or T suffix`},
	} {
		got, err := ParseSize(tc.in)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("ParseSize(%q) = %d, %v; want error %q", tc.in, got, err, tc.err)
		case tc.err != "" && errors.Is(err, ErrSizeRange) != (tc.err[len(tc.err)-1] == ')'):
			t.Errorf("ParseSize(%q): %v: errors.Is(ErrSizeRange) wrong", tc.in, err)
		}
	}
}

func TestParseSizeFlag(t *testing.T) {
	for _, tc := range []struct {
		flag, in string
		zero     bool
		want     int64
		err      string
	}{
		{"-n", "1G", false, 1 << 30, ""},
		{"-w", "0", true, 0, ""},
		{"-n", "0", false, 0, `-n "0": want a byte count`},
		{"-n", "99999999999999999999", false, 0, "-n 99999999999999999999: too large (at most 9223372036854775807)"},
		{"-n", "-5", false, 0, `-n "-5": want a byte count`},
		{"-n", "NaN", false, 0, `-n "NaN": want a byte count`},
	} {
		got, err := ParseSizeFlag(tc.flag, tc.in, "a byte count", tc.zero)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseSizeFlag(%s %q) = %d, %v; want %d", tc.flag, tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("ParseSizeFlag(%s %q) = %d, %v; want error %q", tc.flag, tc.in, got, err, tc.err)
		}
	}
}

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in    string
		bits  float64
		burst int
		err   string
	}{
		{"100M", 100e6, 0, ""},
		{"1G/100", 1e9, 100, ""},
		{"0", 0, 0, ""},
		{"1.5k", 1500, 0, ""},
		{"10T", 10e12, 0, ""},
		{"11T", 0, 0, `-b "11T": want a rate such as 100M or 1G, at most 10T (0: unlimited)`},
		{"fast", 0, 0, `-b "fast": want a rate such as 100M or 1G, at most 10T (0: unlimited)`},
		{"1G/0", 0, 0, `-b "1G/0": the burst after / must be 1 to 1000`},
		{"1G/1001", 0, 0, `-b "1G/1001": the burst after / must be 1 to 1000`},
		{"/10", 0, 0, `-b "/10": want a rate such as 100M or 1G (0: unlimited)`},
		{"NaN", 0, 0, `-b "NaN": want a rate such as 100M or 1G, at most 10T (0: unlimited)`},
		{"Inf", 0, 0, `-b "Inf": want a rate such as 100M or 1G, at most 10T (0: unlimited)`},
		{"1e300G", 0, 0, `-b "1e300G": want a rate such as 100M or 1G, at most 10T (0: unlimited)`},
		{"100Mbit", 0, 0, `-b "100Mbit": want a rate such as 100M or 1G, at most 10T (0: unlimited)`},
		{"1.5K/1", 1500, 1, ""},
	} {
		bits, burst, err := ParseRate(tc.in)
		switch {
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("ParseRate(%q): %v, want error %q", tc.in, err, tc.err)
		case tc.err == "" && (err != nil || bits != tc.bits || burst != tc.burst):
			t.Errorf("ParseRate(%q) = %g, %d, %v; want %g, %d", tc.in, bits, burst, err, tc.bits, tc.burst)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"100": 100, "1K": 1024, "1.5M": 1572864, "2g": 2 << 30, "0": 0} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "-1", "1Q"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) accepted", in)
		}
	}
	if v, err := ParseDSCP("EF"); err != nil || v != 46<<2 {
		t.Errorf("DSCP EF: %d, %v", v, err)
	}
}

// TestParse is every parser on the forms iperf3 reads (units.c's
// unit_atoi and unit_atof_rate: a number, then one suffix letter in
// either case; sizes 1024-based, rates 1000-based) and where blast parts
// from it: iperf3's sscanf ignores what follows the suffix ("10Mbit" is
// 10M) and wraps a negative size to a huge one; blast refuses both, as a
// typo should not run a test.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in        string
		size      int64 // -1: refused
		bits      float64
		bitsErr   bool
		dscp, tos int // -1: refused
	}{
		{"0", 0, 0, false, 0, 0},
		{"1", 1, 1, false, 4, 1},
		{"1k", 1024, 1e3, false, -1, -1},
		{"1K", 1024, 1e3, false, -1, -1},
		{"1m", 1 << 20, 1e6, false, -1, -1},
		{"1.5M", 1572864, 1.5e6, false, -1, -1},
		{"2g", 2 << 30, 2e9, false, -1, -1},
		{"1T", 1 << 40, 1e12, false, -1, -1},
		{"10t", 10 << 40, 10e12, false, -1, -1},
		{"0.5K", 512, 500, false, -1, -1},
		{"1e3", 1000, 1000, false, -1, -1},
		{"1e3K", 1024000, 1e6, false, -1, -1},
		{".5M", 1 << 19, 5e5, false, -1, -1},
		{"63", 63, 63, false, 63 << 2, 63},
		{"64", 64, 64, false, -1, 64},
		{"0x10", -1, 0, true, 16 << 2, 16},
		{"020", 20, 20, false, 16 << 2, 16},
		{"256", 256, 256, false, -1, -1},
		{"EF", -1, 0, true, 46 << 2, -1},
		{"af11", -1, 0, true, 10 << 2, -1},
		{"cs7", -1, 0, true, 56 << 2, -1},
		{"le", -1, 0, true, 1 << 2, -1},
		{"10Mbit", -1, 0, true, -1, -1},
		{"M", -1, 0, true, -1, -1},
		{"", -1, 0, true, -1, -1},
		{"-1", -1, 0, true, -1, -1},
		{"-1M", -1, 0, true, -1, -1},
		{"1Q", -1, 0, true, -1, -1},
		{" 1", -1, 0, true, -1, -1},
		{"11T", 11 << 40, 11e12, false, -1, -1},
		{"1e300G", -1, math.Inf(1), false, -1, -1},
		{"Inf", -1, math.Inf(1), false, -1, -1},
	} {
		size, err := ParseSize(tc.in)
		if tc.size < 0 && err == nil || tc.size >= 0 && (err != nil || size != tc.size) {
			t.Errorf("ParseSize(%q) = %d, %v; want %d (-1: refused)", tc.in, size, err, tc.size)
		}
		bits, err := ParseBits(tc.in)
		if tc.bitsErr && err == nil || !tc.bitsErr && (err != nil || bits != tc.bits) {
			t.Errorf("ParseBits(%q) = %g, %v; want %g (refused: %t)", tc.in, bits, err, tc.bits, tc.bitsErr)
		}
		dscp, err := ParseDSCP(tc.in)
		if tc.dscp < 0 && err == nil || tc.dscp >= 0 && (err != nil || dscp != tc.dscp) {
			t.Errorf("ParseDSCP(%q) = %d, %v; want %d (-1: refused)", tc.in, dscp, err, tc.dscp)
		}
		tos, err := ParseTOS(tc.in)
		if tc.tos < 0 && err == nil || tc.tos >= 0 && (err != nil || tos != tc.tos) {
			t.Errorf("ParseTOS(%q) = %d, %v; want %d (-1: refused)", tc.in, tos, err, tc.tos)
		}
	}
}

// TestRateFlag: a rate blast suggests for -b reads back as itself, to
// the tenth of the unit it is written in.
func TestRateFlag(t *testing.T) {
	for _, tc := range []struct {
		bps  float64
		want string
	}{
		{500e6, "500M"}, {86.34e6, "86.3M"}, {1.25e9, "1.25G"}, {64.5e3, "64.5K"}, {1e6, "1M"}, {999.96e6, "1000M"},
	} {
		got := RateFlag(tc.bps)
		if got != tc.want {
			t.Errorf("RateFlag(%g) = %q, want %q", tc.bps, got, tc.want)
		}
		if back, err := ParseBits(got); err != nil || math.Abs(back-tc.bps) > 0.05*back {
			t.Errorf("RateFlag(%g) = %q, which reads back as %g, %v", tc.bps, got, back, err)
		}
	}
}

// TestBytes: sizes in findings, and -w's form that reads back as at
// least the size.
func TestBytes(t *testing.T) {
	for _, tc := range []struct {
		n          int64
		words, flg string
	}{
		{1500, "1500 bytes", "2K"}, {65535, "65535 bytes", "64K"}, {1 << 16, "64 KiB", "64K"},
		{96 << 10, "96 KiB", "96K"}, {4 << 20, "4.0 MiB", "4M"}, {4<<20 + 1, "4.0 MiB", "5M"}, {3 << 29, "1.5 GiB", "1536M"},
	} {
		if got := Bytes(tc.n); got != tc.words {
			t.Errorf("Bytes(%d) = %q, want %q", tc.n, got, tc.words)
		}
		got := SizeFlag(tc.n)
		if got != tc.flg {
			t.Errorf("SizeFlag(%d) = %q, want %q", tc.n, got, tc.flg)
		}
		if back, err := ParseSize(got); err != nil || back < tc.n {
			t.Errorf("SizeFlag(%d) = %q, which reads back as %d, %v", tc.n, got, back, err)
		}
	}
}

// TestRateFlagBelow: a pace suggested under a limit is never above it.
func TestRateFlagBelow(t *testing.T) {
	for _, tc := range []struct {
		bps  float64
		want string
	}{
		{94.19e6, "94.1M"}, {1.299e9, "1.29G"}, {999.9e3, "999K"}, {500e6, "500M"}, {12.34e9, "12.3G"}, {800, "800"},
	} {
		got := RateFlagBelow(tc.bps)
		if got != tc.want {
			t.Errorf("RateFlagBelow(%g) = %q, want %q", tc.bps, got, tc.want)
		}
		if back, err := ParseBits(got); err != nil || back > tc.bps {
			t.Errorf("RateFlagBelow(%g) = %q, which reads back as %g, %v", tc.bps, got, back, err)
		}
	}
}

// FuzzUnits: the sizes, rates, TOS and DSCP values of the command line.
// Any text is parsed or refused in one line; what parses is in range and,
// written back as a number, parses to the same value.
func FuzzUnits(f *testing.F) {
	for _, s := range []string{"100", "1K", "1.5M", "2g", "0", "1T", "", "x", "-1", "1Q", "1e30", "1e300T", "NaN", "Inf",
		"0x10", "020", "256", "EF", "af11", "cs7", "63", "64", "0x3f",
		"100M", "1G/10", "10M/1001", "/5", "10T", "10.1T", "1e-320", "100M/5", "1G/0.05", "1G/60", "1G/NaN", "1G/", "\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := ParseSize(s); err != nil {
			oneLine(t, "ParseSize", err)
		} else {
			if n < 0 {
				t.Errorf("ParseSize(%q) = %d", s, n)
			}
			if back, err := ParseSize(strconv.FormatInt(n, 10)); err != nil || back != n {
				t.Errorf("ParseSize(%q) = %d, which reads back as %d, %v", s, n, back, err)
			}
		}
		if n, err := ParseSizeFlag("-n", s, "a byte count such as 100M or 1G", false); err != nil {
			oneLine(t, "ParseSizeFlag", err)
		} else if n < 1 {
			t.Errorf("ParseSizeFlag(%q) = %d", s, n)
		}
		if v, err := ParseTOS(s); err != nil {
			oneLine(t, "ParseTOS", err)
		} else if back, err := ParseTOS(strconv.Itoa(v)); v < 0 || v > 255 || err != nil || back != v {
			t.Errorf("ParseTOS(%q) = %d, which reads back as %d, %v", s, v, back, err)
		}
		if v, err := ParseDSCP(s); err != nil {
			oneLine(t, "ParseDSCP", err)
		} else if back, err := ParseDSCP(strconv.Itoa(v >> 2)); v < 0 || v > 255 || v&3 != 0 || err != nil || back != v {
			t.Errorf("ParseDSCP(%q) = %d, which reads back as %d, %v", s, v, back, err)
		}
		if bits, burst, err := ParseRate(s); err != nil {
			oneLine(t, "ParseRate", err)
		} else {
			if bits < 0 || bits > MaxRate || math.IsNaN(bits) || burst < 0 || burst > MaxBurst {
				t.Errorf("ParseRate(%q) = %v, %d", s, bits, burst)
			}
			again := strconv.FormatFloat(bits, 'g', -1, 64)
			if burst > 0 {
				again += "/" + strconv.Itoa(burst)
			}
			if b2, u2, err := ParseRate(again); err != nil || b2 != bits || u2 != burst {
				t.Errorf("ParseRate(%q) = %v, %d, which reads back (%q) as %v, %d, %v", s, bits, burst, again, b2, u2, err)
			}
		}
	})
}
