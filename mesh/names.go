package mesh

import (
	"net/netip"
	"unicode/utf8"
)

// MaxName is the longest name, in characters, ShortNames leaves.
const MaxName = 16

// ShortNames shortens node names for a matrix's labels, the same way for
// all: names up to MaxName characters (and IP addresses) stay as they
// are; else a prefix and a suffix all names share, cut at a '-', '.' or
// '_', are dropped (blast-agent-x7k2p.ec2.internal is x7k2p), and a name
// still too long keeps its start and end around a "…". If shortening
// would make two names the same, the names stay whole. dropped says what
// was cut off for a note ("blast-agent-…", "….ec2.internal").
func ShortNames(names []string) (short []string, dropped string) {
	long := false
	for _, n := range names {
		if _, err := netip.ParseAddr(n); err != nil && utf8.RuneCountInString(n) > MaxName {
			long = true
		}
	}
	if !long {
		return names, ""
	}
	pre, suf := commonCut(names, false), commonCut(names, true)
	short = make([]string, len(names))
	for i, n := range names {
		if len(pre)+len(suf) < len(n) {
			n = n[len(pre) : len(n)-len(suf)]
		}
		if r := []rune(n); len(r) > MaxName {
			n = string(r[:MaxName/2-1]) + "…" + string(r[len(r)-MaxName/2:])
		}
		short[i] = n
	}
	seen := map[string]bool{}
	for _, s := range short {
		if seen[s] || s == "" {
			return names, ""
		}
		seen[s] = true
	}
	switch {
	case pre != "" && suf != "":
		dropped = pre + "…" + suf
	case pre != "":
		dropped = pre + "…"
	case suf != "":
		dropped = "…" + suf
	}
	return short, dropped
}

// commonCut is the longest prefix (or suffix) of every name that ends
// (starts) with a separator and leaves something of each name.
func commonCut(names []string, suffix bool) string {
	if len(names) < 2 {
		return ""
	}
	common := names[0]
	for _, n := range names[1:] {
		k := 0
		for k < len(common) && k < len(n) {
			a, b := common[k], n[k]
			if suffix {
				a, b = common[len(common)-1-k], n[len(n)-1-k]
			}
			if a != b {
				break
			}
			k++
		}
		if suffix {
			common = common[len(common)-k:]
		} else {
			common = common[:k]
		}
	}
	sep := func(b byte) bool { return b == '-' || b == '.' || b == '_' }
	if suffix {
		for len(common) > 0 && !sep(common[0]) {
			common = common[1:]
		}
	} else {
		for len(common) > 0 && !sep(common[len(common)-1]) {
			common = common[:len(common)-1]
		}
	}
	for _, n := range names {
		if len(common) >= len(n) {
			return ""
		}
	}
	return common
}
