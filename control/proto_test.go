package control

import (
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/blastnet/blast/report"
)

func TestParamsEncodeLikeIperf3(t *testing.T) {
	cfg := Config{Host: "h", Duration: 10e9, Parallel: 2, Reverse: true}
	cfg.Defaults()
	p := cfg.params()
	p.Blast = nil
	b, _ := json.Marshal(&p)
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, k := range []string{"tcp", "omit", "time", "num", "blockcount", "parallel", "reverse", "len", "client_version"} {
		if _, ok := m[k]; !ok {
			t.Errorf("%s missing from %s", k, b)
		}
	}
	for _, k := range []string{"bidirectional", "nodelay", "window", "MSS", "udp"} {
		if _, ok := m[k]; ok {
			t.Errorf("%s present in %s; iperf3 leaves unset options out", k, b)
		}
	}
}

// frame is body with its length prefix.
func frame(body []byte) []byte {
	h := make([]byte, 4, 4+len(body))
	binary.BigEndian.PutUint32(h, uint32(len(body)))
	return append(h, body...)
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

func TestUnits(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{report.IperfBytes(1.30 * (1 << 30)), "1.30 GByte"},
		{report.IperfBytes(512 * 1024), " 512 KByte"},
		{report.IperfBytes(0), "0.00 Byte"},
		{report.IperfBits(11.1e9 / 8), "11.1 Gbit"},
		{report.IperfBits(782e6 / 8), " 782 Mbit"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
