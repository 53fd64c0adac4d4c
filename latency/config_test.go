package latency

import (
	"math"
	"testing"
	"time"
)

// TestValidateBounds: the times and counts of a client Config are bounded
// for library users as the command line bounds them, as usage errors.
func TestValidateBounds(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(c *Config)
		want string // "" accepted
	}{
		{"defaults", func(c *Config) {}, ""},
		{"duration too long", func(c *Config) { c.Duration = math.MaxInt64 },
			"-t 2562047h47m16.854775807s: give a positive number of seconds, at most 1000000"},
		{"duration negative with a count", func(c *Config) { c.Count, c.Duration = 5, -time.Second },
			"-t -1s: give a positive number of seconds, at most 1000000"},
		{"interval too long", func(c *Config) { c.Interval = 2e6 * time.Second },
			"-i 555h33m20s: give 0 (no interval reports) or 0.01 to 1000000 seconds"},
		{"timeout zero", func(c *Config) { c.Timeout = 0 }, "--timeout 0s: give a positive number of seconds, at most 1000000"},
		{"timeout too long", func(c *Config) { c.Timeout = math.MaxInt64 },
			"--timeout 2562047h47m16.854775807s: give a positive number of seconds, at most 1000000"},
		{"tos", func(c *Config) { c.Sock.TOS = 256 }, "-S 256: the TOS byte is 0 to 255"},
		{"size", func(c *Config) { c.Size = 99999999999 }, "-l 99999999999: a request is at most 67108864 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Defaults()
			c.Host = "h"
			tc.set(&c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want || !IsUsage(err)):
				t.Errorf("Validate() = %v, want the usage error %q", err, tc.want)
			}
		})
	}
}
