package engine

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"unicode"
)

// OptionKind is the type of a backend option's value.
type OptionKind int

// The kinds of backend options.
const (
	// Flag is an option without a value ("gso").
	Flag OptionKind = iota
	// Count is a whole number of at least 1 ("batch=64").
	Count
	// Text is any text, commas included ("file=/tmp/a,b.dat"); a comma
	// starts the next option only when a known option's name follows it.
	Text
	// MAC is an Ethernet address ("dstmac=02:00:00:00:00:01").
	MAC
)

// Option declares one option of a backend.
type Option struct {
	Name string
	Kind OptionKind
	// Default is what the backend does when the option is not given, in
	// words for `blast backends`.
	Default string
	Help    string
}

// Usage renders the option as `blast backends` lists it.
func (o Option) Usage() string {
	switch o.Kind {
	case Count:
		return o.Name + "=N"
	case Text:
		return o.Name + "=PATH"
	case MAC:
		return o.Name + "=MAC"
	}
	return o.Name
}

// Options are backend options parsed and validated against a backend's
// declarations. The zero value sets nothing.
type Options struct {
	decls []Option
	vals  map[string]string // name -> value ("" for a flag)
}

// ParseOptions reads options written as comma-separated words,
// "batch=64,gso,gro" or "file=/tmp/a,b.dat", against the backend's
// declarations. backend names the backend in errors. A comma inside a Text
// value may also be written as "\,", and a backslash as "\\" (as one that
// ends a value must be, when an option follows).
func ParseOptions(backend string, decls []Option, s string) (Options, error) {
	o := Options{decls: decls}
	known := func(w string) (Option, bool) {
		name, _, _ := strings.Cut(w, "=")
		for _, d := range decls {
			if d.Name == name {
				return d, true
			}
		}
		return Option{}, false
	}
	var words []string
	for _, w := range splitEscaped(s) {
		// A word that names no option continues the Text value before it.
		if n := len(words); n > 0 {
			if d, ok := known(words[n-1]); ok && d.Kind == Text {
				if _, isOpt := known(strings.TrimSpace(w)); !isOpt {
					words[n-1] += "," + w
					continue
				}
			}
		}
		words = append(words, w)
	}
	for _, w := range words {
		if strings.TrimSpace(w) == "" {
			continue
		}
		w = strings.TrimLeft(w, " ")
		d, ok := known(w)
		if !ok {
			if len(decls) == 0 {
				return Options{}, fmt.Errorf("backend %s takes no options (given: %s)", backend, printable(w))
			}
			return Options{}, fmt.Errorf("backend %s has no option %q: it takes %s (see 'blast backends')", backend, w, usages(decls))
		}
		_, v, hasV := strings.Cut(w, "=")
		if err := d.check(v, hasV); err != nil {
			return Options{}, fmt.Errorf("backend %s option %q: %w", backend, w, err)
		}
		if d.Kind == MAC {
			mac, _ := net.ParseMAC(v)
			v = mac.String()
		}
		if o.vals == nil {
			o.vals = map[string]string{}
		}
		o.vals[d.Name] = v
	}
	return o, nil
}

// splitEscaped splits s at commas that are not written as "\,"; "\\" is
// one backslash (any other backslash is itself).
func splitEscaped(s string) []string {
	var out []string
	var cur strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && (s[i+1] == ',' || s[i+1] == '\\'):
			cur.WriteByte(s[i+1])
			i++
		case s[i] == ',':
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(s[i])
		}
	}
	return append(out, cur.String())
}

func (d Option) check(v string, hasV bool) error {
	switch d.Kind {
	case Flag:
		if hasV {
			return fmt.Errorf("%s takes no value", d.Name)
		}
	case Count:
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1<<20 {
			return fmt.Errorf("%s takes a count from 1 to %d", d.Name, 1<<20)
		}
	case Text:
		if v == "" {
			return fmt.Errorf("%s takes a path", d.Name)
		}
		// Control characters would reach the errors that name the
		// value (a file that is not there) and break them over lines.
		if strings.ContainsFunc(v, unicode.IsControl) {
			return fmt.Errorf("%s takes a path without control characters", d.Name)
		}
	case MAC:
		mac, err := net.ParseMAC(v)
		if err != nil || len(mac) != 6 {
			return fmt.Errorf("%s takes an Ethernet address such as 02:00:00:00:00:01", d.Name)
		}
	}
	return nil
}

// printable is s, quoted if it holds anything that does not print as
// itself (a newline would break an error over lines).
func printable(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

func usages(decls []Option) string {
	u := make([]string, len(decls))
	for i, d := range decls {
		u[i] = d.Usage()
	}
	return strings.Join(u, ", ")
}

// IsZero reports whether o sets nothing.
func (o Options) IsZero() bool { return len(o.vals) == 0 }

// Has reports whether the option called name was given.
func (o Options) Has(name string) bool { _, ok := o.vals[name]; return ok }

// Flag reports whether the flag called name was given.
func (o Options) Flag(name string) bool { return o.Has(name) }

// Count returns the count called name, or def when it was not given.
func (o Options) Count(name string, def int) int {
	if v, ok := o.vals[name]; ok {
		n, _ := strconv.Atoi(v) // checked by ParseOptions
		return n
	}
	return def
}

// Text returns the text option called name ("" when not given).
func (o Options) Text(name string) string { return o.vals[name] }

// String renders o in the form ParseOptions reads, in declaration order,
// commas and backslashes in values escaped.
func (o Options) String() string {
	var s []string
	for _, d := range o.decls {
		v, ok := o.vals[d.Name]
		switch {
		case !ok:
		case d.Kind == Flag:
			s = append(s, d.Name)
		default:
			s = append(s, d.Name+"="+optEscaper.Replace(v))
		}
	}
	return strings.Join(s, ",")
}

// optEscaper writes a value so that splitEscaped reads it back.
var optEscaper = strings.NewReplacer(`\`, `\\`, ",", `\,`)

// Configurable is a Backend with options.
type Configurable interface {
	Backend
	// Options declares the backend's options.
	Options() []Option
	// Configure returns a copy of the backend that applies o (parsed
	// against Options), or an error naming what it cannot honour.
	Configure(o Options) (Backend, error)
}

// OptionsOf returns b's declared options (none for a plain Backend).
func OptionsOf(b Backend) []Option {
	if c, ok := b.(Configurable); ok {
		return c.Options()
	}
	return nil
}

// Configure parses s against b's options and returns b configured with
// them: b itself when s is empty.
func Configure(b Backend, s string) (Backend, Options, error) {
	o, err := ParseOptions(b.Name(), OptionsOf(b), s)
	if err != nil {
		return nil, Options{}, err
	}
	if o.IsZero() {
		return b, o, nil
	}
	c := b.(Configurable) // ParseOptions accepts options only from one
	cb, err := c.Configure(o)
	if err != nil {
		return nil, Options{}, err
	}
	return cb, o, nil
}

// Open returns the backend called name, usable here and configured with
// the options s ("" for none): the one call a mode needs. Its errors name
// the cause and the fix.
func Open(name, s string) (Backend, Options, error) {
	b, err := Usable(name)
	if err != nil {
		return nil, Options{}, err
	}
	return Configure(b, s)
}

// Spelled renders a backend with its options as --backend takes them
// ("mmsg:batch=64,gso"), or just the name.
func Spelled(name string, o Options) string {
	if o.IsZero() {
		return name
	}
	return name + ":" + o.String()
}
