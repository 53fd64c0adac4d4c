package pathinfo

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
)

// snmpNames are the counters a snapshot keeps: those that tell where in the
// host a datagram or segment was lost, queued or retransmitted, and the
// totals to weigh them against. The kernel's tables hold hundreds more.
var snmpNames = []string{
	"Ip.InReceives", "Ip.InHdrErrors", "Ip.InAddrErrors", "Ip.InDiscards", "Ip.InDelivers",
	"Ip.OutRequests", "Ip.OutDiscards", "Ip.OutNoRoutes", "Ip.ReasmFails", "Ip.FragFails", "Ip.FragCreates",
	"IpExt.InNoRoutes", "IpExt.InTruncatedPkts", "IpExt.InCsumErrors", "IpExt.InOctets", "IpExt.OutOctets",
	"IpExt.InECT0Pkts", "IpExt.InECT1Pkts", "IpExt.InCEPkts",
	"Icmp.InErrors", "Icmp.OutErrors", "Icmp.InDestUnreachs", "Icmp.OutDestUnreachs",
	"Icmp.OutRateLimitGlobal", "Icmp.OutRateLimitHost",
	"IcmpMsg.InType3", "IcmpMsg.OutType3",
	"Tcp.ActiveOpens", "Tcp.PassiveOpens", "Tcp.AttemptFails", "Tcp.EstabResets",
	"Tcp.InSegs", "Tcp.OutSegs", "Tcp.RetransSegs", "Tcp.InErrs", "Tcp.OutRsts", "Tcp.InCsumErrors",
	"TcpExt.PruneCalled", "TcpExt.RcvPruned", "TcpExt.OfoPruned", "TcpExt.ListenOverflows", "TcpExt.ListenDrops",
	"TcpExt.TCPLostRetransmit", "TcpExt.TCPFastRetrans", "TcpExt.TCPSlowStartRetrans", "TcpExt.TCPTimeouts",
	"TcpExt.TCPLossProbes", "TcpExt.TCPLossProbeRecovery", "TcpExt.TCPSpuriousRTOs", "TcpExt.TCPSynRetrans",
	"TcpExt.TCPRetransFail", "TcpExt.TCPSpuriousRtxHostQueues", "TcpExt.TCPRcvCollapsed",
	"TcpExt.TCPBacklogDrop", "TcpExt.PFMemallocDrop", "TcpExt.TCPReqQFullDrop", "TcpExt.TCPRcvQDrop",
	"TcpExt.TCPZeroWindowDrop", "TcpExt.TCPOFOQueue", "TcpExt.TCPOFODrop",
	"TcpExt.TCPSACKReorder", "TcpExt.TCPTSReorder", "TcpExt.TCPRenoReorder", "TcpExt.TCPDSACKRecv",
	"TcpExt.TCPDSACKRecvSegs",
	"TcpExt.TCPAbortOnMemory", "TcpExt.TCPMemoryPressures", "TcpExt.TCPWqueueTooBig",
	"TcpExt.TCPToZeroWindowAdv", "TcpExt.TCPWantZeroWindowAdv",
	"TcpExt.TCPMTUPFail", "TcpExt.TCPMTUPSuccess",
	"TcpExt.TCPOrigDataSent", "TcpExt.TCPDelivered", "TcpExt.TCPDeliveredCE",
	"Udp.InDatagrams", "Udp.NoPorts", "Udp.InErrors", "Udp.OutDatagrams", "Udp.RcvbufErrors",
	"Udp.SndbufErrors", "Udp.InCsumErrors", "Udp.MemErrors",
	"Ip6.InReceives", "Ip6.InHdrErrors", "Ip6.InTooBigErrors", "Ip6.InNoRoutes", "Ip6.InAddrErrors",
	"Ip6.InTruncatedPkts", "Ip6.InDiscards", "Ip6.OutRequests", "Ip6.OutDiscards", "Ip6.OutNoRoutes",
	"Ip6.ReasmFails", "Ip6.FragFails", "Ip6.InCEPkts",
	"Icmp6.InErrors", "Icmp6.OutErrors", "Icmp6.InDestUnreachs", "Icmp6.OutDestUnreachs",
	"Icmp6.InPktTooBigs", "Icmp6.OutPktTooBigs",
	"Udp6.InDatagrams", "Udp6.NoPorts", "Udp6.InErrors", "Udp6.OutDatagrams", "Udp6.RcvbufErrors",
	"Udp6.SndbufErrors", "Udp6.InCsumErrors", "Udp6.MemErrors",
	"Softnet.Dropped", "Softnet.TimeSqueeze",
}

// SNMPNames returns the names of the counters a Snapshot keeps, from
// /proc/net/snmp, /proc/net/netstat and /proc/net/snmp6 of the namespace,
// and two from /proc/net/softnet_stat summed over the host's CPUs:
// Softnet.Dropped (packets a CPU's backlog had no room for,
// net.core.netdev_max_backlog) and Softnet.TimeSqueeze (times the receive
// softirq ran out of budget).
func SNMPNames() []string { return append([]string(nil), snmpNames...) }

// sysctlNames are the settings a snapshot reads: the socket buffer limits
// and defaults, TCP's and UDP's memory and buffer ranges, the receive
// backlog, and what decides path MTU discovery and congestion control.
var sysctlNames = []string{
	"net.core.rmem_max", "net.core.wmem_max", "net.core.rmem_default", "net.core.wmem_default",
	"net.core.optmem_max", "net.core.netdev_max_backlog", "net.core.netdev_budget",
	"net.core.netdev_budget_usecs", "net.core.default_qdisc",
	"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_mem", "net.ipv4.tcp_moderate_rcvbuf",
	"net.ipv4.tcp_adv_win_scale", "net.ipv4.tcp_window_scaling", "net.ipv4.tcp_sack",
	"net.ipv4.tcp_timestamps", "net.ipv4.tcp_ecn", "net.ipv4.tcp_congestion_control",
	"net.ipv4.tcp_mtu_probing", "net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat",
	"net.ipv4.tcp_limit_output_bytes",
	"net.ipv4.udp_mem", "net.ipv4.udp_rmem_min", "net.ipv4.udp_wmem_min",
	"net.ipv4.ip_no_pmtu_disc",
}

// SysctlNames returns the names of the sysctls a Snapshot reads.
func SysctlNames() []string { return append([]string(nil), sysctlNames...) }

// maxProcFile bounds what a parser reads: /proc/net/netstat, the largest,
// is some 5 KiB.
const maxProcFile = 1 << 20

// lines calls fn with each line of r, numbered from 1, and fails when r
// holds more than maxProcFile bytes.
func lines(r io.Reader, fn func(n int, line string) error) error {
	lr := &io.LimitedReader{R: r, N: maxProcFile + 1}
	sc := bufio.NewScanner(lr)
	sc.Buffer(make([]byte, 0, 4096), maxProcFile)
	n := 0
	for sc.Scan() {
		n++
		if err := fn(n, sc.Text()); err != nil {
			return err
		}
	}
	if lr.N <= 0 || errors.Is(sc.Err(), bufio.ErrTooLong) {
		return fmt.Errorf("longer than %d bytes; not a /proc/net counter file", maxProcFile)
	}
	return sc.Err()
}

// ParseSNMP reads counters in the layout of /proc/net/snmp and
// /proc/net/netstat, a line of names and a line of values per table:
//
//	Udp: InDatagrams NoPorts InErrors ...
//	Udp: 236235409 151 67226074 ...
//
// and returns them as "Udp.InDatagrams". Negative values (Tcp.MaxConn is
// -1) are not counters and are left out.
func ParseSNMP(r io.Reader) (map[string]uint64, error) {
	m := map[string]uint64{}
	var table string
	var names []string
	err := lines(r, func(n int, line string) error {
		if strings.TrimSpace(line) == "" {
			return nil
		}
		t, rest, ok := strings.Cut(line, ":")
		if !ok || t == "" || strings.ContainsAny(t, " \t") {
			return fmt.Errorf("line %d: no table name before a colon", n)
		}
		fields := strings.Fields(rest)
		if names == nil {
			table, names = t, fields
			return nil
		}
		if t != table {
			return fmt.Errorf("line %d: values of table %.40q follow the names of %.40q", n, t, table)
		}
		if len(fields) != len(names) {
			return fmt.Errorf("line %d: %d values for the %d names of %.40q", n, len(fields), len(names), table)
		}
		for i, f := range fields {
			v, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				if _, ierr := strconv.ParseInt(f, 10, 64); ierr == nil {
					continue // signed: a setting, not a counter
				}
				return fmt.Errorf("line %d: %s.%.40s: %.40q is not a count", n, table, names[i], f)
			}
			m[table+"."+names[i]] = v
		}
		names = nil
		return nil
	})
	if err == nil && names != nil {
		err = fmt.Errorf("table %.40q has names but no values", table)
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// ParseSNMP6 reads counters in the layout of /proc/net/snmp6, a name and a
// value per line ("Udp6RcvbufErrors 0"), and names them like ParseSNMP:
// "Udp6.RcvbufErrors", "Icmp6.InPktTooBigs", "Ip6.InDiscards".
func ParseSNMP6(r io.Reader) (map[string]uint64, error) {
	m := map[string]uint64{}
	err := lines(r, func(n int, line string) error {
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
			return nil
		case len(f) != 2:
			return fmt.Errorf("line %d: %d fields, want a name and a value", n, len(f))
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return fmt.Errorf("line %d: %.40s: %.40q is not a count", n, f[0], f[1])
		}
		m[snmp6Name(f[0])] = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// snmp6Name splits the table off a snmp6 name: the table ends with its
// first 6 ("Ip6", "Icmp6", "Udp6", "UdpLite6").
func snmp6Name(s string) string {
	i := strings.IndexByte(s, '6')
	if i <= 0 || i == len(s)-1 {
		return s
	}
	return s[:i+1] + "." + s[i+1:]
}

// parseSoftnet reads /proc/net/softnet_stat, a line of hexadecimal
// counters per CPU, and sums the second (dropped) and third (time squeeze)
// columns.
func parseSoftnet(r io.Reader) (map[string]uint64, error) {
	var dropped, squeezed uint64
	err := lines(r, func(n int, line string) error {
		f := strings.Fields(line)
		if len(f) == 0 {
			return nil
		}
		if len(f) < 3 {
			return fmt.Errorf("line %d: %d columns, want at least 3", n, len(f))
		}
		var v [2]uint64
		for i := range v {
			x, err := strconv.ParseUint(f[i+1], 16, 32)
			if err != nil {
				return fmt.Errorf("line %d: column %d: %.40q is not a hexadecimal count", n, i+2, f[i+1])
			}
			v[i] = x
		}
		dropped += v[0]
		squeezed += v[1]
		return nil
	})
	if err != nil {
		return nil, err
	}
	return map[string]uint64{"Softnet.Dropped": dropped, "Softnet.TimeSqueeze": squeezed}, nil
}

// readCounters reads the counters of snmpNames from a /proc-like tree: the
// files net/snmp and net/netstat must be there, net/snmp6 (gone when IPv6
// is off) and net/softnet_stat may not.
func readCounters(proc fs.FS) (map[string]uint64, error) {
	all := map[string]uint64{}
	for _, f := range []struct {
		name     string
		parse    func(io.Reader) (map[string]uint64, error)
		optional bool
	}{
		{"net/snmp", ParseSNMP, false},
		{"net/netstat", ParseSNMP, false},
		{"net/snmp6", ParseSNMP6, true},
		{"net/softnet_stat", parseSoftnet, true},
	} {
		file, err := proc.Open(f.name)
		if errors.Is(err, fs.ErrNotExist) && f.optional {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("pathinfo: read counters: %w", err)
		}
		m, err := f.parse(file)
		file.Close()
		if err != nil {
			return nil, fmt.Errorf("pathinfo: read counters: %s: %w", f.name, err)
		}
		for k, v := range m {
			all[k] = v
		}
	}
	out := make(map[string]uint64, len(snmpNames))
	for _, k := range snmpNames {
		if v, ok := all[k]; ok {
			out[k] = v
		}
	}
	return out, nil
}

// readSysctls reads the settings of sysctlNames from a /proc-like tree
// (sys/net/core/rmem_max). One the kernel does not have is left out.
func readSysctls(proc fs.FS) map[string]string {
	m := make(map[string]string, len(sysctlNames))
	for _, name := range sysctlNames {
		f, err := proc.Open("sys/" + strings.ReplaceAll(name, ".", "/"))
		if err != nil {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(f, 4096))
		f.Close()
		if err != nil {
			continue
		}
		m[name] = strings.Join(strings.Fields(string(b)), " ")
	}
	return m
}
