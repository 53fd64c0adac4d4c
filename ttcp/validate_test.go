package ttcp

import (
	"math"
	"testing"
)

// TestValidateBounds: every number of a Config is bounded before anything
// is allocated (ttcp -l 9999999999999999 used to panic in makeslice, -l
// 99999999999 to run out of memory), in one line naming the flag, the
// value and the range, as a usage error.
func TestValidateBounds(t *testing.T) {
	rx := func(set func(c *Config)) func(c *Config) {
		return func(c *Config) { c.SinkMode = true; set(c) }
	}
	tx := func(set func(c *Config)) func(c *Config) {
		return func(c *Config) { c.Transmit, c.SinkMode, c.Host = true, true, "h"; set(c) }
	}
	for _, tc := range []struct {
		name string
		set  func(c *Config)
		want string // "" accepted
	}{
		{"tcp -l 64M", tx(func(c *Config) { c.BufLen = 64 << 20 }), ""},
		{"tcp -l 64M+1", tx(func(c *Config) { c.BufLen = 64<<20 + 1 }),
			"-l 67108865: the buffer length must be 1 to 67108864 (64 MiB) for TCP: give a smaller -l"},
		{"tcp -l huge, receiver", rx(func(c *Config) { c.BufLen = 9999999999999999 }),
			"-l 9999999999999999: the buffer length must be 1 to 67108864 (64 MiB) for TCP: give a smaller -l"},
		{"tcp -l 99999999999", tx(func(c *Config) { c.BufLen = 99999999999 }),
			"-l 99999999999: the buffer length must be 1 to 67108864 (64 MiB) for TCP: give a smaller -l"},
		{"udp -l huge", rx(func(c *Config) { c.UDP, c.BufLen = true, 99999999999 }),
			"-l 99999999999: a UDP datagram carries at most 65507 bytes"},
		{"iouring batch × -l", tx(func(c *Config) { c.Backend, c.BufLen = "iouring", 64<<20 }),
			"-l 67108864 with --backend iouring: its buffers would take 512 MiB (-l times the buffers the backend keeps in flight), more than 256 MiB: give a smaller -l or batch="},
		{"iouring batch=256 × 2M", tx(func(c *Config) { c.Backend, c.BackendOpts, c.BufLen = "iouring", "batch=256", 2<<20 }),
			"-l 2097152 with --backend iouring:batch=256: its buffers would take 512 MiB (-l times the buffers the backend keeps in flight), more than 256 MiB: give a smaller -l or batch="},
		{"iouring batch=4 × 64M", tx(func(c *Config) { c.Backend, c.BackendOpts, c.BufLen = "iouring", "batch=4", 64<<20 }), ""},
		{"iouring multishot receiver × 32M", rx(func(c *Config) { c.Backend, c.BackendOpts, c.BufLen = "iouring", "multishot", 32<<20 }),
			"-l 33554432 with --backend iouring:multishot: its buffers would take 512 MiB (-l times the buffers the backend keeps in flight), more than 256 MiB: give a smaller -l or batch="},
		{"mmsg gso batch × 64K", tx(func(c *Config) { c.UDP, c.Backend, c.BackendOpts, c.BufLen = true, "mmsg", "batch=1024,gso", 65507 }), ""},
		{"-n × -l past int64", tx(func(c *Config) { c.NBuf = math.MaxInt64 }),
			"-n 9223372036854775807: 9223372036854775807 buffers of -l 8192 bytes are more than 8 EiB: -n must be 1 to 1125899906842623"},
		{"-n 0", tx(func(c *Config) { c.NBuf = 0 }), "-n 0: the number of buffers must be at least 1"},
		{"-b negative", rx(func(c *Config) { c.SockBuf = -1 }), "-b -1: the socket buffer size must be 0 (the system's) to 2147483647 bytes"},
		{"-b past a C int", rx(func(c *Config) { c.SockBuf = 1 << 31 }), "-b 2147483648: the socket buffer size must be 0 (the system's) to 2147483647 bytes"},
		{"-A negative", rx(func(c *Config) { c.Align = -1 }), "-A -1: the buffer alignment must be 0 to 67108864 bytes"},
		{"-A huge", rx(func(c *Config) { c.Align = 1 << 40 }), "-A 1099511627776: the buffer alignment must be 0 to 67108864 bytes"},
		{"-O huge", rx(func(c *Config) { c.Offset = 1 << 40 }), "-O 1099511627776: the buffer offset must be 0 to 67108864 bytes"},
		{"--rate NaN", tx(func(c *Config) { c.Rate = math.NaN() }), "--rate NaN: must be 0 (unlimited) to 10T bits/s"},
		{"--rate +Inf", tx(func(c *Config) { c.Rate = math.Inf(1) }), "--rate +Inf: must be 0 (unlimited) to 10T bits/s"},
		{"--rate negative", tx(func(c *Config) { c.Rate = -1 }), "--rate -1: must be 0 (unlimited) to 10T bits/s"},
		{"-S below -1", rx(func(c *Config) { c.TOS = -2 }), "-S -0x2: the TOS byte is 0 to 255"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Defaults()
			tc.set(&c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("Validate() = %v\nwant %q", err, tc.want)
			case tc.want != "" && !IsUsage(err):
				t.Errorf("Validate() = %v: not a usage error", err)
			}
		})
	}
}
