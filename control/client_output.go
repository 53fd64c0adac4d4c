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
	pad2 := func(n int) { fmt.Fprintf(b, "%02d", n) }
	hour12 := t.Hour() % 12
	if hour12 == 0 {
		hour12 = 12
	}
	switch c {
	case 'a':
		b.WriteString(t.Format("Mon"))
	case 'A':
		b.WriteString(t.Format("Monday"))
	case 'b', 'h':
		b.WriteString(t.Format("Jan"))
	case 'B':
		b.WriteString(t.Format("January"))
	case 'c':
		b.WriteString(Strftime("%a %b %e %H:%M:%S %Y", t))
	case 'C':
		pad2(t.Year() / 100)
	case 'd':
		pad2(t.Day())
	case 'D', 'x':
		b.WriteString(Strftime("%m/%d/%y", t))
	case 'e':
		fmt.Fprintf(b, "%2d", t.Day())
	case 'F':
		fmt.Fprintf(b, "%04d-%02d-%02d", t.Year(), t.Month(), t.Day())
	case 'g':
		y, _ := t.ISOWeek()
		pad2(y % 100)
	case 'G':
		y, _ := t.ISOWeek()
		fmt.Fprintf(b, "%d", y)
	case 'H':
		pad2(t.Hour())
	case 'I':
		pad2(hour12)
	case 'j':
		fmt.Fprintf(b, "%03d", t.YearDay())
	case 'k':
		fmt.Fprintf(b, "%2d", t.Hour())
	case 'l':
		fmt.Fprintf(b, "%2d", hour12)
	case 'm':
		pad2(int(t.Month()))
	case 'M':
		pad2(t.Minute())
	case 'n':
		b.WriteByte('\n')
	case 'p':
		if t.Hour() < 12 {
			b.WriteString("AM")
		} else {
			b.WriteString("PM")
		}
	case 'r':
		b.WriteString(Strftime("%I:%M:%S %p", t))
	case 'R':
		b.WriteString(Strftime("%H:%M", t))
	case 's':
		b.WriteString(strconv.FormatInt(t.Unix(), 10))
	case 'S':
		pad2(t.Second())
	case 't':
		b.WriteByte('\t')
	case 'T', 'X':
		b.WriteString(Strftime("%H:%M:%S", t))
	case 'u':
		wd := int(t.Weekday())
		if wd == 0 {
			wd = 7
		}
		fmt.Fprintf(b, "%d", wd)
	case 'U':
		pad2((t.YearDay() - 1 + 7 - int(t.Weekday())) / 7)
	case 'V':
		_, w := t.ISOWeek()
		pad2(w)
	case 'w':
		fmt.Fprintf(b, "%d", int(t.Weekday()))
	case 'W':
		pad2((t.YearDay() - 1 + 7 - (int(t.Weekday())+6)%7) / 7)
	case 'y':
		pad2(t.Year() % 100)
	case 'Y':
		fmt.Fprintf(b, "%d", t.Year())
	case 'z':
		b.WriteString(t.Format("-0700"))
	case 'Z':
		b.WriteString(t.Format("MST"))
	case '%':
		b.WriteByte('%')
	default:
		return false
	}
	return true
}
