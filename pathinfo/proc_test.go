package pathinfo

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// testdata/proc holds files recorded from a Linux 6.18 host: net/snmp,
// net/netstat, net/snmp6 and net/softnet_stat, and some of sys/net.

func open(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestParseSNMPRecorded(t *testing.T) {
	snmp, err := ParseSNMP(open(t, "testdata/proc/net/snmp"))
	if err != nil {
		t.Fatal(err)
	}
	netstat, err := ParseSNMP(open(t, "testdata/proc/net/netstat"))
	if err != nil {
		t.Fatal(err)
	}
	snmp6, err := ParseSNMP6(open(t, "testdata/proc/net/snmp6"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		m    map[string]uint64
		key  string
		want uint64
	}{
		{snmp, "Ip.Forwarding", 2},
		{snmp, "IcmpMsg.OutType3", 151},
		{snmp, "Tcp.RetransSegs", 81319},
		{snmp, "Udp.InDatagrams", 236235409},
		{snmp, "Udp.RcvbufErrors", 67226074},
		{snmp, "Udp.InErrors", 67226074},
		{snmp, "UdpLite.RcvbufErrors", 0},
		{netstat, "TcpExt.TCPBacklogDrop", 0},
		{netstat, "IpExt.InOctets", 14947707636585},
		{snmp6, "Udp6.RcvbufErrors", 0},
		{snmp6, "Icmp6.OutType143", 122},
		{snmp6, "Ip6.InDiscards", 0},
	} {
		if got, ok := tc.m[tc.key]; !ok || got != tc.want {
			t.Errorf("%s = %d (present %v), want %d", tc.key, got, ok, tc.want)
		}
	}
	if v, ok := snmp["Tcp.MaxConn"]; ok {
		t.Errorf("Tcp.MaxConn = %d: -1 is a setting, not a counter, and should be left out", v)
	}
	if len(snmp) != 84-1 || len(netstat) != 229 || len(snmp6) != 90 {
		t.Errorf("%d, %d and %d counters, want 83, 229 and 90 (every one in the files, but Tcp.MaxConn)", len(snmp), len(netstat), len(snmp6))
	}
}

func TestParseSNMP(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[string]uint64
		err      string
	}{
		{"empty", "", map[string]uint64{}, ""},
		{"two tables", "Udp: InErrors RcvbufErrors\nUdp: 3 2\nTcp: MaxConn InSegs\nTcp: -1 18446744073709551615\n",
			map[string]uint64{"Udp.InErrors": 3, "Udp.RcvbufErrors": 2, "Tcp.InSegs": 1<<64 - 1}, ""},
		{"blank lines and no final newline", "\nIpExt: InNoRoutes\n\nIpExt: 7", map[string]uint64{"IpExt.InNoRoutes": 7}, ""},
		{"names only", "Udp: InErrors\n", nil, `table "Udp" has names but no values`},
		{"values of another table", "Udp: InErrors\nTcp: 1\n", nil, `line 2: values of table "Tcp" follow the names of "Udp"`},
		{"too few values", "Udp: InErrors RcvbufErrors\nUdp: 1\n", nil, `line 2: 1 values for the 2 names of "Udp"`},
		{"not a number", "Udp: InErrors\nUdp: x\n", nil, `line 2: Udp.InErrors: "x" is not a count`},
		{"too large", "Udp: InErrors\nUdp: 18446744073709551616\n", nil, `is not a count`},
		{"no colon", "Udp InErrors\n", nil, "line 1: no table name before a colon"},
		{"too long", "Udp: " + strings.Repeat("x ", maxProcFile), nil, "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSNMP(strings.NewReader(tc.in))
			checkParse(t, got, err, tc.want, tc.err)
		})
	}
}

func TestParseSNMP6(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[string]uint64
		err      string
	}{
		{"names", "Udp6RcvbufErrors \t 5\nUdpLite6InErrors 1\nIcmp6InType133 2\nIp6InDiscards 3\nodd 4\nX6 5\n6Y 6\n",
			map[string]uint64{"Udp6.RcvbufErrors": 5, "UdpLite6.InErrors": 1, "Icmp6.InType133": 2, "Ip6.InDiscards": 3,
				"odd": 4, "X6": 5, "6Y": 6}, ""},
		{"three fields", "Udp6InErrors 1 2\n", nil, "line 1: 3 fields, want a name and a value"},
		{"negative", "Udp6InErrors -1\n", nil, `line 1: Udp6InErrors: "-1" is not a count`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSNMP6(strings.NewReader(tc.in))
			checkParse(t, got, err, tc.want, tc.err)
		})
	}
}

func TestParseSoftnet(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[string]uint64
		err      string
	}{
		{"recorded", "", map[string]uint64{"Softnet.Dropped": 0, "Softnet.TimeSqueeze": 0x2b + 0x3e}, ""},
		{"summed", "00000001 00000002 00000003\nffffffff ffffffff ffffffff 0 0\n",
			map[string]uint64{"Softnet.Dropped": 2 + 0xffffffff, "Softnet.TimeSqueeze": 3 + 0xffffffff}, ""},
		{"short", "00000001 00000002\n", nil, "line 1: 2 columns, want at least 3"},
		{"not hex", "1 2 zz\n", nil, `line 1: column 3: "zz" is not a hexadecimal count`},
		{"over 32 bits", "1 100000000 0\n", nil, `column 2: "100000000" is not`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			if tc.name == "recorded" {
				b, err := os.ReadFile("testdata/proc/net/softnet_stat")
				if err != nil {
					t.Fatal(err)
				}
				in = string(b)
			}
			got, err := parseSoftnet(strings.NewReader(in))
			checkParse(t, got, err, tc.want, tc.err)
		})
	}
}

func checkParse(t *testing.T, got map[string]uint64, err error, want map[string]uint64, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %v, want one containing %q", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// A snapshot keeps the counters of SNMPNames the files have, and only them.
func TestReadCounters(t *testing.T) {
	got, err := readCounters(os.DirFS("testdata/proc"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, n := range SNMPNames() {
		names[n] = true
	}
	for k := range got {
		if !names[k] {
			t.Errorf("kept %s, which is not in SNMPNames", k)
		}
	}
	for k, want := range map[string]uint64{
		"Udp.RcvbufErrors": 67226074, "Udp6.RcvbufErrors": 0, "Tcp.RetransSegs": 81319,
		"TcpExt.TCPBacklogDrop": 0, "IpExt.InNoRoutes": 0, "IcmpMsg.OutType3": 151, "Softnet.TimeSqueeze": 105,
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %d (present %v), want %d", k, v, ok, want)
		}
	}
	// Recorded on 6.18, which has every counter of the list.
	for _, k := range SNMPNames() {
		if _, ok := got[k]; !ok {
			t.Errorf("%s is missing; is it misspelt?", k)
		}
	}
}

func TestReadCountersFiles(t *testing.T) {
	snmp := &fstest.MapFile{Data: []byte("Udp: RcvbufErrors\nUdp: 4\n")}
	netstat := &fstest.MapFile{Data: []byte("TcpExt: TCPRcvQDrop\nTcpExt: 2\n")}
	for _, tc := range []struct {
		name string
		fsys fstest.MapFS
		want map[string]uint64
		err  string
	}{
		{"IPv6 off, no softnet", fstest.MapFS{"net/snmp": snmp, "net/netstat": netstat},
			map[string]uint64{"Udp.RcvbufErrors": 4, "TcpExt.TCPRcvQDrop": 2}, ""},
		{"no netstat", fstest.MapFS{"net/snmp": snmp}, nil, "pathinfo: read counters: open net/netstat: file does not exist"},
		{"broken snmp6", fstest.MapFS{"net/snmp": snmp, "net/netstat": netstat, "net/snmp6": {Data: []byte("Udp6InErrors\n")}},
			nil, "pathinfo: read counters: net/snmp6: line 1: 1 fields, want a name and a value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readCounters(tc.fsys)
			checkParse(t, got, err, tc.want, tc.err)
			if tc.name == "no netstat" && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%v does not wrap fs.ErrNotExist", err)
			}
		})
	}
}

func TestReadSysctls(t *testing.T) {
	got := readSysctls(os.DirFS("testdata/proc"))
	want := map[string]string{
		"net.core.rmem_max":               "4194304",
		"net.core.wmem_max":               "4194304",
		"net.core.rmem_default":           "212992",
		"net.core.wmem_default":           "212992",
		"net.core.netdev_max_backlog":     "1000",
		"net.core.default_qdisc":          "pfifo_fast",
		"net.ipv4.tcp_rmem":               "4096 131072 33554432",
		"net.ipv4.tcp_wmem":               "4096 16384 4194304",
		"net.ipv4.tcp_congestion_control": "bbr",
		"net.ipv4.tcp_mtu_probing":        "0",
		"net.ipv4.udp_mem":                "575802 767736 1151604",
		"net.ipv4.ip_no_pmtu_disc":        "0",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
