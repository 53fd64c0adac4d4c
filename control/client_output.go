package control

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// LineWriter writes a client's text output the way iperf3's iperf_printf
// does: each line starts with the time in the --timestamps format, then
// -T's title and two spaces. Writes from several goroutines (the
// interval reporter, the test) are serialized; each Write reaches W in
// one call, so a Write of whole lines is never split.
type LineWriter struct {
	W io.Writer
	// Title is -T's prefix ("" for none).
	Title string
	// Timestamps is the strftime format of --timestamps ("" for none).
	Timestamps string
	// Now tells the time of a line (nil: time.Now, in local time).
	Now func() time.Time

	mu  sync.Mutex
	mid bool // the last Write ended inside a line
	buf bytes.Buffer
}

// Write implements io.Writer.
func (l *LineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Reset()
	rest := p
	for len(rest) > 0 {
		if !l.mid {
			l.prefix()
		}
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			l.buf.Write(rest)
			l.mid = true
			break
		}
		l.buf.Write(rest[:i+1])
		rest = rest[i+1:]
		l.mid = false
	}
	if _, err := l.W.Write(l.buf.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (l *LineWriter) prefix() {
	if l.Timestamps != "" {
		now := time.Now
		if l.Now != nil {
			now = l.Now
		}
		l.buf.WriteString(Strftime(l.Timestamps, now()))
	}
	if l.Title != "" {
		l.buf.WriteString(l.Title)
		l.buf.WriteString(":  ")
	}
}

// DefaultTimestampFormat is --timestamps' format when none is given
// (iperf3's TIMESTAMP_FORMAT): the C locale's date and time, a space.
const DefaultTimestampFormat = "%c "

// Strftime formats t as C's strftime(3) does in the C locale, for
// --timestamps: every conversion of C99 and POSIX (%a %A %b %B %c %C %d
// %D %e %F %g %G %h %H %I %j %k %l %m %M %n %p %r %R %s %S %t %T %u %U %V
// %w %W %x %X %y %Y %z %Z %%), with the E and O modifiers ignored. An
// unknown conversion is written as it stands.
func Strftime(format string, t time.Time) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		if (format[i] == 'E' || format[i] == 'O') && i+1 < len(format) {
			i++
		}
		if !strftimeConv(&b, format[i], t) {
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}

func strftimeConv(b *strings.Builder, c byte, t time.Time) bool {
	if f, ok := strftimeComposite[c]; ok {
		b.WriteString(Strftime(f, t))
		return true
	}
	if f, ok := strftimeConvs[c]; ok {
		b.WriteString(f(t))
		return true
	}
	return false
}

// strftimeComposite are the conversions that stand for a format of others.
var strftimeComposite = map[byte]string{
	'c': "%a %b %e %H:%M:%S %Y", 'D': "%m/%d/%y", 'x': "%m/%d/%y",
	'r': "%I:%M:%S %p", 'R': "%H:%M", 'T': "%H:%M:%S", 'X': "%H:%M:%S",
}

// strftimeConvs are the other conversions, as the C locale writes them.
var strftimeConvs = map[byte]func(t time.Time) string{
	'a': layout("Mon"), 'A': layout("Monday"), 'b': layout("Jan"), 'h': layout("Jan"), 'B': layout("January"),
	'z': layout("-0700"), 'Z': layout("MST"),
	'C': func(t time.Time) string { return pad2(t.Year() / 100) },
	'd': func(t time.Time) string { return pad2(t.Day()) },
	'e': func(t time.Time) string { return fmt.Sprintf("%2d", t.Day()) },
	'F': func(t time.Time) string { return fmt.Sprintf("%04d-%02d-%02d", t.Year(), t.Month(), t.Day()) },
	'g': func(t time.Time) string { y, _ := t.ISOWeek(); return pad2(y % 100) },
	'G': func(t time.Time) string { y, _ := t.ISOWeek(); return strconv.Itoa(y) },
	'H': func(t time.Time) string { return pad2(t.Hour()) },
	'I': func(t time.Time) string { return pad2(hour12(t)) },
	'j': func(t time.Time) string { return fmt.Sprintf("%03d", t.YearDay()) },
	'k': func(t time.Time) string { return fmt.Sprintf("%2d", t.Hour()) },
	'l': func(t time.Time) string { return fmt.Sprintf("%2d", hour12(t)) },
	'm': func(t time.Time) string { return pad2(int(t.Month())) },
	'M': func(t time.Time) string { return pad2(t.Minute()) },
	'n': func(time.Time) string { return "\n" },
	'p': func(t time.Time) string {
		if t.Hour() < 12 {
			return "AM"
		}
		return "PM"
	},
	's': func(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) },
	'S': func(t time.Time) string { return pad2(t.Second()) },
	't': func(time.Time) string { return "\t" },
	'u': func(t time.Time) string {
		if wd := int(t.Weekday()); wd != 0 {
			return strconv.Itoa(wd)
		}
		return "7"
	},
	'U': func(t time.Time) string { return pad2((t.YearDay() - 1 + 7 - int(t.Weekday())) / 7) },
	'V': func(t time.Time) string { _, w := t.ISOWeek(); return pad2(w) },
	'w': func(t time.Time) string { return strconv.Itoa(int(t.Weekday())) },
	'W': func(t time.Time) string { return pad2((t.YearDay() - 1 + 7 - (int(t.Weekday())+6)%7) / 7) },
	'y': func(t time.Time) string { return pad2(t.Year() % 100) },
	'Y': func(t time.Time) string { return strconv.Itoa(t.Year()) },
	'%': func(time.Time) string { return "%" },
}

// layout is a conversion that is one of Go's layouts.
func layout(l string) func(time.Time) string { return func(t time.Time) string { return t.Format(l) } }

func pad2(n int) string { return fmt.Sprintf("%02d", n) }

// hour12 is t's hour on a 12-hour clock (12 for 0).
func hour12(t time.Time) int {
	if h := t.Hour() % 12; h != 0 {
		return h
	}
	return 12
}
