package control

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/golden"
)

// The client's renderings: iperf3's default text (no CPU, congestion or
// blast lines), -V, -f, the -F file lines, --json-stream events and the
// -J document of a test that never connected. The fixtures are
// render_golden_test.go's.

// withFile is r with the -F file of its streams.
func withFile(r *Result, name string, size int64) *Result {
	r.File = &DiskFile{Name: name, Size: size}
	return r
}

// connectRefused is a client test whose server refused the connection.
func connectRefused() *Result {
	r := ErrorResult("198.18.0.2", errors.New("connect to 198.18.0.2:5201: connection refused"))
	r.SystemInfo = "Linux lab-a 6.12.0 #1 SMP x86_64"
	return r
}

// withServerOutput is r with a server report it did not ask for.
func withServerOutput(r *Result) *Result {
	r.ServerOutputText = "Accepted connection from 198.18.0.1, port 50430\n"
	return r
}

var clientTextGoldens = []struct {
	name string
	text Text
	r    func() *Result
}{
	{"client-p1-default", Text{}, clientP1},
	{"client-p1-verbose", Text{Verbose: true}, clientP1},
	{"client-p1-format-k", Text{Format: 'k'}, clientP1},
	{"client-p3-format-M", Text{Format: 'M'}, clientP3},
	{"client-reverse-verbose", Text{Verbose: true}, clientReverse},
	{"client-bidir-verbose", Text{Verbose: true}, clientBidir},
	{"client-failed-verbose", Text{Verbose: true}, clientFailed},
	{"client-bytes-verbose", Text{Verbose: true}, clientNoIntervals},
	{"client-server-output-unasked", Text{}, func() *Result { return withServerOutput(clientP1()) }},
	{"udp-client-p1-verbose", Text{Verbose: true}, func() *Result { r := udpClientP1(); r.BlockLenAuto = true; return r }},
	{"udp-client-p2-format-g", Text{Format: 'g'}, udpClientP2Loss},
	{"udp-client-p2-pace-behind", Text{}, func() *Result {
		// The first stream's thread was held up for longer than its
		// pacer made up: 136 ms at 400 Mbit/s are 6.8 MB short.
		r := udpClientP2Loss()
		r.Streams[0].Facts.Counts = map[string]int64{engine.FactPaceBehind: int64(136 * time.Millisecond)}
		return r
	}},
	{"client-file-send", Text{}, func() *Result { return withFile(clientNoIntervals(), "/srv/big.iso", 1<<30) }},
	{"client-file-receive", Text{}, func() *Result { return withFile(clientReverse(), "copy.bin", 2357444608) }},
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
		r    func() *Result
	}{
		{"client-file-send", func() *Result { return withFile(clientNoIntervals(), "/srv/big.iso", 1<<30) }},
		{"client-server-output-unasked", func() *Result { return withServerOutput(clientP1()) }},
		{"client-extra-data", func() *Result {
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
		r    func() *Result
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
			if r.connected() {
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

// TestStrftime checks --timestamps' formats against C's strftime in the C
// locale, conversion by conversion, on a date that exercises padding,
// the week numbers and the 12-hour clock.
func TestStrftime(t *testing.T) {
	at := time.Date(2026, 1, 4, 7, 5, 9, 0, time.UTC) // a Sunday
	for _, tc := range []struct{ f, want string }{
		{"%c ", "Sun Jan  4 07:05:09 2026 "},
		{"%a %A %b %B %h", "Sun Sunday Jan January Jan"},
		{"%C %d %D %e %F", "20 04 01/04/26  4 2026-01-04"},
		{"%g %G %V", "26 2026 01"},
		{"%H %I %j %k %l %m %M", "07 07 004  7  7 01 05"},
		{"%p %r %R %s %S %T", "AM 07:05:09 AM 07:05 1767510309 09 07:05:09"},
		{"%u %U %w %W", "7 01 0 00"},
		{"%x %X %y %Y %z %Z", "01/04/26 07:05:09 26 2026 +0000 UTC"},
		{"%Ey %Od %%|%n|%t|%J|%", "26 04 %|\n|\t|%J|%"},
	} {
		if got := Strftime(tc.f, at); got != tc.want {
			t.Errorf("Strftime(%q) = %q, want %q", tc.f, got, tc.want)
		}
	}
	pm := time.Date(2025, 12, 29, 23, 0, 0, 0, time.UTC) // ISO week 1 of 2026
	if got, want := Strftime("%I%p %G-W%V %U %W", pm), "11PM 2026-W01 52 52"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

// TestLineWriter: the time, then the title, at the start of every line,
// across writes that split lines.
func TestLineWriter(t *testing.T) {
	var b strings.Builder
	at := time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)
	w := &LineWriter{W: &b, Title: "lab", Timestamps: "%H:%M:%S ", Now: func() time.Time { return at }}
	for _, s := range []string{"one\ntw", "o\n", "\nthree\n"} {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	want := "09:26:53 lab:  one\n09:26:53 lab:  two\n09:26:53 lab:  \n09:26:53 lab:  three\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
