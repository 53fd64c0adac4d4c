package control

import (
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/blastnet/blast/units"
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

func TestUnits(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{units.IperfBytes(1.30 * (1 << 30)), "1.30 GByte"},
		{units.IperfBytes(512 * 1024), " 512 KByte"},
		{units.IperfBytes(0), "0.00 Byte"},
		{units.IperfBits(11.1e9 / 8), "11.1 Gbit"},
		{units.IperfBits(782e6 / 8), " 782 Mbit"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
