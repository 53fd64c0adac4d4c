// Package safetext makes text read from files, peers and captures safe to
// print on a terminal: what a terminal would act on (escape sequences,
// controls, bidirectional overrides, bytes that are not UTF-8) is written
// as Go or JSON escapes, and text that has none comes back unchanged.
package safetext

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Escape returns s with what a terminal would act on written as Go escapes
// (as strconv.Quote writes them, without the quotes): control characters
// except newline and tab ("\x1b", "\r"), DEL, the C1 controls ("\u009b",
// which some terminals take for ESC [) and the other characters that do not
// print (bidirectional overrides), and bytes that are not UTF-8 ("\xff").
// Everything read from a tree (names, attributes, a capture's JSON, error
// texts naming files) reaches the terminal through it, so a hostile capture
// cannot recolour, move the cursor or retitle the window.
func Escape(s string) string { return escape(s, true) }

// Line is Escape on one line: line breaks and tabs are escaped too,
// for an error message that quotes what it read.
func Line(s string) string { return escape(s, false) }

func escape(s string, keepLines bool) string {
	i := 0
	for i < len(s) {
		size, bad := scan(s[i:], keepLines)
		if bad {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLines && (r == '\n' || r == '\t') || strconv.IsPrint(r):
			b.WriteString(s[i : i+size])
		case r < utf8.RuneSelf:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
		i += size
	}
	return b.String()
}

// scan reports the size of the character s starts with, and whether
// Escape rewrites it.
func scan(s string, keepLines bool) (size int, bad bool) {
	if c := s[0]; c < utf8.RuneSelf {
		return 1, (c < 0x20 && !(keepLines && (c == '\n' || c == '\t'))) || c == 0x7f
	}
	r, size := utf8.DecodeRuneInString(s)
	return size, (r == utf8.RuneError && size == 1) || !strconv.IsPrint(r)
}

// Writer returns a writer that writes through Escape to w. Renderers of
// what was read from files or peers write through it; a character split across two writes is
// escaped byte by byte (they never split one).
func Writer(w io.Writer) io.Writer {
	if _, ok := w.(escaper); ok {
		return w
	}
	return escaper{w}
}

type escaper struct{ w io.Writer }

func (e escaper) Write(p []byte) (int, error) {
	s := Escape(string(p))
	if _, err := io.WriteString(e.w, s); err != nil {
		return 0, err
	}
	return len(p), nil
}

// JSON rewrites the characters of a JSON document that encoding/json
// leaves as they are and a terminal would act on (DEL, the C1 controls,
// other characters that do not print) as JSON escapes ("\u009b"); the
// document means the same. encoding/json already escapes the other control
// characters and replaces bytes that are not UTF-8.
func JSON(b []byte) []byte {
	var out []byte
	last := 0
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == '\n' || r == '\t' || r == '\r' || r == ' ' || (r != utf8.RuneError && strconv.IsPrint(r)) || (r == utf8.RuneError && size != 1) {
			i += size
			continue
		}
		out = append(out, b[last:i]...)
		if r == utf8.RuneError {
			out = append(out, `\ufffd`...)
		} else {
			for _, u := range utf16.Encode([]rune{r}) {
				out = fmt.Appendf(out, `\u%04x`, u)
			}
		}
		i += size
		last = i
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}
