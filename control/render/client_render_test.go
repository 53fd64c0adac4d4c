package render

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/golden"
)

// The client's renderings: iperf3's default text (no CPU, congestion or
// blast lines), -V, -f, the -F file lines, --json-stream events and the
// -J document of a test that never connected. The fixtures are
// render_golden_test.go's.

// withFile is r with the -F file of its streams.
func withFile(r *result.Result, name string, size int64) *result.Result {
	r.File = &result.DiskFile{Name: name, Size: size}
	return r
}

// connectRefused is a client test whose server refused the connection.
func connectRefused() *result.Result {
	// As control.ErrorResult makes it, on a fixed system.
	return &result.Result{Role: "client", Version: result.Version, SystemInfo: "Linux lab-a 6.12.0 #1 SMP x86_64",
		Host: "198.18.0.2", Err: errors.New("connect to 198.18.0.2:5201: connection refused")}
}

// withServerOutput is r with a server report it did not ask for.
func withServerOutput(r *result.Result) *result.Result {
	r.ServerOutputText = "Accepted connection from 198.18.0.1, port 50430\n"
	return r
}

var clientTextGoldens = []struct {
	name string
	text Text
	r    func() *result.Result
}{
	{"client-p1-default", Text{}, clientP1},
	{"client-p1-verbose", Text{Verbose: true}, clientP1},
	{"client-p1-format-k", Text{Format: 'k'}, clientP1},
	{"client-p3-format-M", Text{Format: 'M'}, clientP3},
	{"client-reverse-verbose", Text{Verbose: true}, clientReverse},
	{"client-bidir-verbose", Text{Verbose: true}, clientBidir},
	{"client-failed-verbose", Text{Verbose: true}, clientFailed},
	{"client-bytes-verbose", Text{Verbose: true}, clientNoIntervals},
	{"client-server-output-unasked", Text{}, func() *result.Result { return withServerOutput(clientP1()) }},
	{"udp-client-p1-verbose", Text{Verbose: true}, func() *result.Result { r := udpClientP1(); r.BlockLenAuto = true; return r }},
	{"udp-client-p2-format-g", Text{Format: 'g'}, udpClientP2Loss},
	{"udp-client-p2-pace-behind", Text{}, func() *result.Result {
		// The first stream's thread was held up for longer than its
		// pacer made up: 136 ms at 400 Mbit/s are 6.8 MB short.
		r := udpClientP2Loss()
		r.Streams[0].Facts.Counts = map[string]int64{engine.FactPaceBehind: int64(136 * time.Millisecond)}
		return r
	}},
	{"client-file-send", Text{}, func() *result.Result { return withFile(clientNoIntervals(), "/srv/big.iso", 1<<30) }},
	{"client-file-receive", Text{}, func() *result.Result { return withFile(clientReverse(), "copy.bin", 2357444608) }},
}

func TestClientTextGolden(t *testing.T) {
	for _, tc := range clientTextGoldens {
		t.Run(tc.name, func(t *testing.T) {
			golden.Check(t, "testdata/golden/"+tc.name+".txt", tc.text.String(tc.r()))
		})
	}
}

func TestClientJSONGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    func() *result.Result
	}{
		{"client-file-send", func() *result.Result { return withFile(clientNoIntervals(), "/srv/big.iso", 1<<30) }},
		{"client-server-output-unasked", func() *result.Result { return withServerOutput(clientP1()) }},
		{"client-extra-data", func() *result.Result {
			r := clientP1()
			r.Params.ExtraData = "run 7, rack b"
			return r
		}},
		{"client-connect-refused", connectRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := EncodeJSON(&b, tc.r()); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "testdata/golden/"+tc.name+".json", b.String())
		})
	}
}

// TestJSONStreamGolden: --json-stream's events, one JSON object a line.
func TestJSONStreamGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    func() *result.Result
	}{
		{"client-p1", clientP1},
		{"udp-client-reverse-iperf3", udpClientReverse},
		{"client-failed", clientFailed},
		{"client-connect-refused", connectRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			s := &JSONStream{W: &b}
			r := tc.r()
			if r.Connected() {
				if err := s.Start(r); err != nil {
					t.Fatal(err)
				}
				for _, iv := range r.Intervals {
					if err := s.Interval(r, iv); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := s.End(r); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "testdata/golden/"+tc.name+".jsonstream", b.String())
		})
	}
}

// TestUnitFormat: the text takes -f's unit (units.Iperf, tested
// against iperf3's unit_snprintf in package units).
func TestUnitFormat(t *testing.T) {
	if got := (Text{Format: 'm'}).bits(12.5e3); got != "0.10 Mbit" {
		t.Errorf("0.1 Mbit/s in m: %q", got)
	}
	if got, want := (Text{}).bits(1234567890.0), "9.88 Gbit"; got != want {
		t.Errorf("adaptive: %q, want %q", got, want)
	}
}
