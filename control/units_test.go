package control

import (
	"errors"
	"math"
	"testing"
	"time"
)

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

// TestConfigValidateBounds: the numbers of a client Config a library user
// sets are bounded as the command line's are.
func TestConfigValidateBounds(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(c *Config)
		want string
	}{
		{"connect timeout negative", func(c *Config) { c.ConnectTimeout = -5 * time.Millisecond },
			"--connect-timeout -5: must be 0 (the system's) to 86400000 ms"},
		{"connect timeout too long", func(c *Config) { c.ConnectTimeout = 100000 * time.Second },
			"--connect-timeout 100000000: must be 0 (the system's) to 86400000 ms"},
		{"parallel negative", func(c *Config) { c.Parallel = -1 },
			"-P -1: invalid number of parallel streams (min = 1, max = 128)"},
		{"parallel too many", func(c *Config) { c.Parallel = 129 },
			"-P 129: invalid number of parallel streams (min = 1, max = 128)"},
		{"mss negative", func(c *Config) { c.MSS = -5 }, "-M -5: must be 0 (the system's) to 32767"},
		{"bytes negative", func(c *Config) { c.Bytes = math.MinInt64 }, "-n and -k must not be negative"},
		{"interval negative", func(c *Config) { c.Interval = -time.Second }, "-i -1s: must be 0 (off) or 0.1 to 60 seconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Host: "h"}
			tc.set(&c)
			c.Defaults()
			err := c.Validate()
			if err == nil || err.Error() != tc.want {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
	c := Config{Host: "h", ConnectTimeout: 86400 * time.Second}
	c.Defaults()
	if err := c.Validate(); err != nil {
		t.Errorf("--connect-timeout 86400000: %v", err)
	}
}

// TestServerConfigValidateBounds: the server's interval, and its counts of
// which 0 means the default to Defaults, but not less.
func TestServerConfigValidateBounds(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(c *ServerConfig)
		want string
	}{
		{"interval negative", func(c *ServerConfig) { c.Interval = -time.Second }, "-i -1: must be 0 (off) or 0.1 to 60 seconds"},
		{"interval short", func(c *ServerConfig) { c.Interval = time.Millisecond }, "-i 0.001: must be 0 (off) or 0.1 to 60 seconds"},
		{"interval long", func(c *ServerConfig) { c.Interval = time.Hour }, "-i 3600: must be 0 (off) or 0.1 to 60 seconds"},
		{"max clients negative", func(c *ServerConfig) { c.MaxClients = -1 }, "--max-clients -1: must be at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ServerConfig{}
			tc.set(&c)
			c.Defaults()
			err := c.Validate()
			if err == nil || err.Error() != tc.want {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
	c := ServerConfig{Interval: time.Second}
	c.Defaults()
	if err := c.Validate(); err != nil || c.MaxClients < 1 {
		t.Errorf("MaxClients 0 (unset): %v, MaxClients %d", err, c.MaxClients)
	}
}
