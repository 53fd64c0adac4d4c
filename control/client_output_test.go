package control

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

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
