package report

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/golden"
)

func TestTTCPHeader(t *testing.T) {
	for _, tc := range []struct {
		h    TTCPHeader
		want string
	}{
		{TTCPHeader{Prefix: "ttcp-t", Transmit: true, BufLen: 8192, NBuf: 2048, Align: 16384, Port: 5001, Host: "198.18.0.2"},
			"ttcp-t: buflen=8192, nbuf=2048, align=16384/0, port=5001  tcp  -> 198.18.0.2"},
		{TTCPHeader{Prefix: "ttcp-r", BufLen: 8192, NBuf: 2048, Align: 16384, Port: 5001},
			"ttcp-r: buflen=8192, nbuf=2048, align=16384/0, port=5001  tcp"},
		{TTCPHeader{Prefix: "blast-t", Transmit: true, BufLen: 1400, NBuf: 100, Align: 4096, Offset: 8, Port: 5555, SockBuf: 65536, UDP: true, Host: "2001:2::2"},
			"blast-t: buflen=1400, nbuf=100, align=4096/8, port=5555, sockbufsize=65536  udp  -> 2001:2::2"},
		{TTCPHeader{Prefix: "blast-r", BufLen: 8192, NBuf: 2048, Align: 16384, Port: 5001, SockBuf: 1 << 20, UDP: true},
			"blast-r: buflen=8192, nbuf=2048, align=16384/0, port=5001, sockbufsize=1048576  udp"},
	} {
		if got := tc.h.Line(); got != tc.want {
			t.Errorf("header:\n got %q\nwant %q", got, tc.want)
		}
	}
}

// result is a fixed run: 16 MiB in 1.44 s.
func result(prefix string, format byte, transmit, udp, verbose bool) TTCPResult {
	return TTCPResult{
		Prefix: prefix, Transmit: transmit, Format: format, Verbose: verbose, UDP: udp,
		Bytes: 16777216, Real: 1440 * time.Millisecond, Calls: 2049,
		Rusage: Rusage{User: 30 * time.Millisecond, Sys: 310 * time.Millisecond, MaxRSS: 5812,
			MajFlt: 0, MinFlt: 2, NVCSw: 1834, NIVCSw: 3},
		Data:    engine.Sample{Bytes: 16777216, Datagrams: 2048, Calls: 2049, Idle: 1, MinIO: 1448, MaxIO: 8192},
		Backend: "readwrite",
	}
}

func TestTTCPSummaryGolden(t *testing.T) {
	var b strings.Builder
	for _, prog := range []string{"ttcp", "blast"} {
		for _, side := range []string{"-t", "-r"} {
			for _, f := range []byte("kKmMgG") {
				r := result(prog+side, f, side == "-t", false, false)
				b.WriteString(strings.Join(r.Lines(), "\n") + "\n")
			}
		}
	}
	golden.Check(t, "testdata/ttcp-formats.golden", b.String())

	b.Reset()
	b.WriteString(strings.Join(result("blast-r", 'm', false, true, true).Lines(), "\n") + "\n")
	r := result("ttcp-t", 'K', true, true, true)
	r.Notes = []string{"a note"}
	b.WriteString(strings.Join(r.Lines(), "\n") + "\n")
	golden.Check(t, "testdata/ttcp-udp-verbose.golden", b.String())
}

func TestTTCPClassicLines(t *testing.T) {
	// The classic ttcp lines, character for character.
	lines := result("ttcp-r", 'K', false, false, false).Lines()
	want := []string{
		"ttcp-r: 16777216 bytes in 1.44 real seconds = 11377.78 KB/sec +++",
		"ttcp-r: 2049 I/O calls, msec/call = 0.72, calls/sec = 1422.92",
		"ttcp-r: 0.0user 0.3sys 0:01real 23% 0i+0d 5812maxrss 0+2pf 1834+3csw",
		"ttcp-r: bytes per read: avg 8192.0, min 1448, max 8192 over 2048 reads",
		"ttcp-r: 93.21 Mbit/s (backend readwrite)",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
}

func TestRusageFormat(t *testing.T) {
	for _, tc := range []struct {
		u    Rusage
		real time.Duration
		want string
	}{
		{Rusage{}, 0, "0.0user 0.0sys 0:00real 0% 0i+0d 0maxrss 0+0pf 0+0csw"},
		{Rusage{User: 1990 * time.Millisecond, Sys: 500 * time.Millisecond, MaxRSS: 9000, MajFlt: 1, MinFlt: 300, NVCSw: 7, NIVCSw: 9},
			75 * time.Second, "1.9user 0.5sys 1:15real 3% 0i+0d 9000maxrss 1+300pf 7+9csw"},
		{Rusage{Sys: 3723 * time.Second}, 3723 * time.Second, "0.0user 3723.0sys 1:02:03real 100% 0i+0d 0maxrss 0+0pf 0+0csw"},
	} {
		if got := tc.u.Format(tc.real); got != tc.want {
			t.Errorf("rusage:\n got %q\nwant %q", got, tc.want)
		}
	}
}
