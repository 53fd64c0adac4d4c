package hostload

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Read samples the host now: /proc/stat, and the packet counters of iface
// in /sys/class/net (iface "": none).
func Read(iface string) (Sample, error) {
	s := Sample{At: time.Now(), Iface: iface}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s, err
	}
	if err := parseStat(b, &s); err != nil {
		return s, err
	}
	if iface != "" {
		s.RxPackets, err = readCounter(iface, "rx_packets")
		if err == nil {
			s.TxPackets, err = readCounter(iface, "tx_packets")
		}
		if err != nil {
			return s, err
		}
	}
	return s, nil
}

// parseStat reads the cpu, intr and ctxt lines of /proc/stat.
func parseStat(b []byte, s *Sample) error {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20) // the intr line is long
	seen := 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "cpu":
			// user nice system idle iowait irq softirq steal guest guest_nice
			var v [10]uint64
			for i := 1; i < len(f) && i <= len(v); i++ {
				n, err := strconv.ParseUint(f[i], 10, 64)
				if err != nil {
					return fmt.Errorf("/proc/stat cpu line: %q", f[i])
				}
				v[i-1] = n
			}
			// guest time is counted in user already.
			s.User = v[0] + v[1]
			s.System = v[2] + v[5] + v[6]
			s.Idle = v[3] + v[4]
			s.Steal = v[7]
			seen++
		case "intr", "ctxt":
			n, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return fmt.Errorf("/proc/stat %s line: %q", f[0], f[1])
			}
			if f[0] == "intr" {
				s.Interrupts = n
			} else {
				s.ContextSwitches = n
			}
			seen++
		}
	}
	if seen < 3 {
		return fmt.Errorf("/proc/stat: no cpu, intr or ctxt line")
	}
	return sc.Err()
}

func readCounter(iface, name string) (uint64, error) {
	if strings.ContainsAny(iface, "/") || iface == "." || iface == ".." {
		return 0, fmt.Errorf("interface name %q", iface)
	}
	b, err := os.ReadFile("/sys/class/net/" + iface + "/statistics/" + name)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}
