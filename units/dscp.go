package units

import (
	"fmt"
	"strconv"
	"strings"
)

// dscpNames are the DiffServ code point names iperf3's --dscp accepts.
var dscpNames = map[string]int{
	"cs0": 0, "cs1": 8, "cs2": 16, "cs3": 24, "cs4": 32, "cs5": 40, "cs6": 48, "cs7": 56,
	"af11": 10, "af12": 12, "af13": 14, "af21": 18, "af22": 20, "af23": 22,
	"af31": 26, "af32": 28, "af33": 30, "af41": 34, "af42": 36, "af43": 38,
	"ef": 46, "va": 44, "le": 1,
}

// ParseDSCP reads a DSCP as a number (0-63, decimal, 0x hex or 0 octal)
// or a name (EF, AF11, CS1, ...) and returns the TOS byte (dscp << 2).
func ParseDSCP(s string) (int, error) {
	if v, ok := dscpNames[strings.ToLower(s)]; ok {
		return v << 2, nil
	}
	v, err := strconv.ParseInt(s, 0, 32)
	if err != nil || v < 0 || v > 63 {
		return 0, fmt.Errorf("DSCP %q: want 0 to 63 or a name such as EF, AF11, CS1", s)
	}
	return int(v) << 2, nil
}

// ParseTOS reads a TOS byte as iperf3's -S does (strtol base 0: decimal,
// 0x hex, 0 octal).
func ParseTOS(s string) (int, error) {
	v, err := strconv.ParseInt(s, 0, 32)
	if err != nil || v < 0 || v > 255 {
		return 0, fmt.Errorf("TOS %q: want 0 to 255 (decimal, 0x hex or 0 octal)", s)
	}
	return int(v), nil
}
