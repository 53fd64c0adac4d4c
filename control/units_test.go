package control

import (
	"math"
	"testing"
	"time"
)

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
