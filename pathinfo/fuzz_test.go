package pathinfo

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"testing/fstest"
)

// FuzzSNMP feeds the /proc/net parsers arbitrary files: they never panic,
// and what they accept is made of names and numbers the input had. The
// recorded files of testdata/proc/net are seeds too, besides the corpus
// under testdata/fuzz/FuzzSNMP.
func FuzzSNMP(f *testing.F) {
	for _, name := range []string{"snmp", "netstat", "snmp6", "softnet_stat"} {
		b, err := os.ReadFile("testdata/proc/net/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fields := len(strings.Fields(string(data)))
		if m, err := ParseSNMP(bytes.NewReader(data)); err == nil {
			if len(m) > fields/2 {
				t.Errorf("ParseSNMP: %d counters from %d fields", len(m), fields)
			}
			for k := range m {
				table, name, ok := strings.Cut(k, ".")
				if !ok || table == "" || name == "" || strings.ContainsAny(k, " \t\n") {
					t.Errorf("ParseSNMP: malformed name %q", k)
				}
			}
		}
		if m, err := ParseSNMP6(bytes.NewReader(data)); err == nil {
			if len(m) > fields/2 {
				t.Errorf("ParseSNMP6: %d counters from %d fields", len(m), fields)
			}
			for k := range m {
				if k == "" || strings.ContainsAny(k, " \t\n") {
					t.Errorf("ParseSNMP6: malformed name %q", k)
				}
			}
		}
		if m, err := parseSoftnet(bytes.NewReader(data)); err == nil && len(m) != 2 {
			t.Errorf("parseSoftnet: %v, want two sums", m)
		}
		netstat := &fstest.MapFile{Data: []byte("TcpExt: TCPRcvQDrop\nTcpExt: 1\n")}
		if m, err := readCounters(fstest.MapFS{"net/snmp": {Data: data}, "net/netstat": netstat}); err == nil {
			if len(m) > len(snmpNames) {
				t.Errorf("readCounters kept %d counters, more than it names", len(m))
			}
		}
	})
}

// FuzzTCOptions feeds the decoders of raw tc options arbitrary bytes: they
// never panic, and attributes stay inside their input.
func FuzzTCOptions(f *testing.F) {
	f.Add(cakeOptions(12_500_000, 4<<20))
	f.Add(cat(nla(hfscRSC, hfscCurve(0, 0, 6_250_000)), nla(hfscUSC, hfscCurve(1, 2, 10_000_000))))
	f.Add(u32(5000))
	f.Add([]byte{5, 0, 1, 0, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		if as, err := parseAttrs(data); err == nil {
			n := 0
			for _, a := range as {
				n += 4 + len(a.data)
			}
			if n > len(data) {
				t.Errorf("%d attributes of %d bytes from %d", len(as), n, len(data))
			}
		}
		for _, kind := range []string{"cake", "bfifo", "pfifo", "pfifo_head_drop", "tbf"} {
			q := Qdisc{Kind: kind}
			applyQdiscOptions(&q, data)
		}
		c := Qdisc{Kind: "hfsc", Class: true}
		applyClassOptions(&c, data)
	})
}
