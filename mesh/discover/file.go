package discover

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The bounds of a peers file.
const (
	maxLines   = 100_000
	maxLineLen = 1024
)

const lineHelp = "want NAME ADDRESS[:PORT]"

func readFile(path string, def int) ([]Peer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, final(fmt.Errorf("peers file: %w", err))
	}
	defer f.Close()
	return parseFile(path, f, def)
}

// parseFile reads a peers file called name from r; def is the data port
// of lines without one. Every error is final.
func parseFile(name string, r io.Reader, def int) ([]Peer, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLineLen+2) // + "\r\n"
	var (
		peers []Peer
		names = make(map[string]int) // name: line
		addrs = make(map[string]int) // data address: line
		n     int
	)
	lineErr := func(format string, a ...any) error {
		return final(fmt.Errorf("%s:%d: %s", name, n, fmt.Sprintf(format, a...)))
	}
	for sc.Scan() {
		n++
		if n > maxLines {
			return nil, final(fmt.Errorf("%s: more than %d lines", name, maxLines))
		}
		line := sc.Text()
		if len(line) > maxLineLen {
			return nil, lineErr("line longer than %d bytes", maxLineLen)
		}
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		switch len(f) {
		case 0:
			continue
		case 1:
			return nil, lineErr("%q has no address: %s", f[0], lineHelp)
		case 2:
		default:
			return nil, lineErr("%q: too many fields: %s", strings.Join(f, " "), lineHelp)
		}
		if !printable(f[0]) {
			return nil, lineErr("name %q is not printable UTF-8", f[0])
		}
		host, port, err := splitAddress(f[1], def)
		if err != nil {
			return nil, lineErr("%q: %v", f[0], err)
		}
		p := Peer{Name: f[0], Host: host, DataPort: port, ControlPort: controlPort(port)}
		if first, ok := names[p.Name]; ok {
			return nil, lineErr("%q again (first on line %d)", p.Name, first)
		}
		names[p.Name] = n
		if first, ok := addrs[p.DataAddr()]; ok {
			return nil, lineErr("%q has the address of the peer on line %d: %s", p.Name, first, p.DataAddr())
		}
		addrs[p.DataAddr()] = n
		peers = append(peers, p)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			n++
			return nil, lineErr("line longer than %d bytes", maxLineLen)
		}
		return nil, final(fmt.Errorf("%s: %w", name, err))
	}
	if len(peers) == 0 {
		return nil, final(fmt.Errorf("%s: no peers: %s, one a line", name, lineHelp))
	}
	return peers, nil
}

// splitAddress reads ADDRESS[:PORT] of a peers file: an IP address or a
// host name, IPv6 bare or in brackets, with an optional port (def if
// none). IP addresses come back in their canonical form.
func splitAddress(s string, def int) (host string, port int, err error) {
	const help = "want an IP address or a host name, then :PORT if any ([2001:2::1]:5201 for IPv6)"
	port = def
	hostPart, portPart, hasPort := s, "", false
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", 0, fmt.Errorf("bad address %q: no ]: %s", s, help)
		}
		hostPart = s[1:end]
		switch rest := s[end+1:]; {
		case rest == "":
		case strings.HasPrefix(rest, ":"):
			portPart, hasPort = rest[1:], true
		default:
			return "", 0, fmt.Errorf("bad address %q: %s", s, help)
		}
		a, err := netip.ParseAddr(hostPart)
		if err != nil || !a.Is6() {
			return "", 0, fmt.Errorf("bad address %q: not IPv6 in brackets: %s", s, help)
		}
		hostPart = a.String()
	case strings.Count(s, ":") > 1: // bare IPv6
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is6() {
			return "", 0, fmt.Errorf("bad address %q: %s", s, help)
		}
		hostPart = a.String()
	default:
		hostPart, portPart, hasPort = strings.Cut(s, ":")
		if a, err := netip.ParseAddr(hostPart); err == nil {
			hostPart = a.String()
		} else if !isHostName(hostPart) {
			return "", 0, fmt.Errorf("bad address %q: %s", s, help)
		}
	}
	if hasPort {
		port, err = parsePort(portPart)
		if err != nil {
			return "", 0, fmt.Errorf("bad port %q in %q: want 1 to 65534 (the control port is PORT+1)", portPart, s)
		}
	}
	return hostPart, port, nil
}

// parsePort reads a data port: decimal digits, 1 to 65534 (the control
// port is the next one).
func parsePort(s string) (int, error) {
	if s == "" || len(s) > 5 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, errors.New("not a port")
	}
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65534 {
		return 0, errors.New("not a port")
	}
	return p, nil
}

// isHostName reports whether s can be a host name: a domain name whose
// last label is not all digits (so 198.18.0.300 is not one).
func isHostName(s string) bool {
	if !isDomainName(s) {
		return false
	}
	s = strings.TrimSuffix(s, ".")
	last := s[strings.LastIndexByte(s, '.')+1:]
	return strings.TrimLeft(last, "0123456789") != ""
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}
