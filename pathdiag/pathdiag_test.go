package pathdiag

import (
	"time"

	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/nicinfo"
	"github.com/blastnet/blast/pathinfo"
)

func ptr[T any](v T) *T { return &v }

// nic is an interface result with an MTU, a speed (0: virtual, veth's
// 10000 that means nothing) and counter deltas.
func nic(name string, index, peer, mtu, speed int, counters map[string]uint64) *nicinfo.Result {
	ifc := &nicinfo.Interface{Name: name, Index: index, MTU: ptr(mtu), Virtual: speed == 0}
	if peer > 0 {
		ifc.PeerIndex = ptr(peer)
	}
	if speed > 0 {
		ifc.Link.SpeedMbps = ptr(speed)
	} else {
		ifc.Link.SpeedMbps = ptr(10000)
	}
	return &nicinfo.Result{Interface: ifc, Delta: &nicinfo.Deltas{Name: name, Counters: counters}}
}

func end(name string, n *nicinfo.Result, path *pathinfo.Delta) *End {
	return &End{Name: name, NIC: n, Path: path, CPUPct: 30, Streams: 1}
}

// rules lists the rule, severity and summary of each finding.
func rulesOf(fs []finding.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Severity.String()+" "+string(f.Rule))
	}
	return out
}

func TestRules(t *testing.T) {
	vethA := func(c map[string]uint64) *nicinfo.Result { return nic("veth-a", 5, 6, 1500, 0, c) }
	vethB := func(c map[string]uint64) *nicinfo.Result { return nic("veth-b", 6, 5, 1500, 0, c) }
	tbf := &pathinfo.Delta{Iface: "veth-a", Qdiscs: []pathinfo.Qdisc{{Kind: "tbf", Handle: "8001:", Parent: "root", RateBps: 100e6, LimitBytes: 30000, Overlimits: 5000}}}
	healthyTCP := Direction{Seconds: 3, Goodput: 20e9, SentBytes: 7.5e9, ReceivedBytes: 7.5e9, Retransmits: 0,
		MaxCwnd: 4 << 20, MaxWnd: 3 << 20, RTTus: 80, MSS: 1448, PMTU: 1500,
		Sender:   end("local", vethA(map[string]uint64{"tx_bytes": 7.6e9}), &pathinfo.Delta{Iface: "veth-a"}),
		Receiver: end("remote", vethB(map[string]uint64{"rx_bytes": 7.6e9}), &pathinfo.Delta{Iface: "veth-b"})}
	for _, tc := range []struct {
		name     string
		d        func() Direction
		want     []string
		evidence []string // in the first finding's evidence
	}{
		{"healthy veth", func() Direction { return healthyTCP }, nil, nil},
		{"healthy CPU-bound sender is INFO", func() Direction {
			d := healthyTCP
			d.Sender = end("local", vethA(nil), nil)
			d.Sender.CPUPct = 99
			return d
		}, []string{"INFO D22"}, []string{"99% of a core per stream"}},
		{"shaper at its rate", func() Direction {
			d := healthyTCP
			d.Goodput, d.Sender = 94.1e6, end("local", vethA(nil), tbf)
			return d
		}, []string{"WARN D14"}, []string{"tbf 8001: on veth-a shapes to 100 Mbit/s; goodput 94.1 Mbit/s (94% of it)", "5000 over its limit"}},
		{"shaper above the sender's own -b", func() Direction {
			d := healthyTCP
			d.Goodput, d.Rate, d.Sender = 50e6, 50e6, end("local", vethA(nil), tbf)
			return d
		}, []string{"INFO D14"}, nil},
		{"ingress policer on the receiver", func() Direction {
			d := healthyTCP
			d.Goodput = 9.5e6
			d.Receiver = end("remote", vethB(nil), &pathinfo.Delta{Iface: "veth-b", Policers: []pathinfo.Policer{{Direction: "ingress", RateBps: 10e6, Overlimits: 800}}})
			return d
		}, []string{"WARN D14"}, []string{"an ingress policer on veth-b shapes to 10.0 Mbit/s"}},
		{"window-limited", func() Direction {
			d := healthyTCP
			// 64 KiB over 19.9 ms is 26.3 Mbit/s.
			d.Goodput, d.RTTus, d.MinRTTus, d.MaxWnd, d.MaxCwnd = 25e6, 20000, 19900, 64<<10, 200<<10
			d.BusyUs, d.RwndLimitedUs, d.SndbufLimitedUs = 3e6, 1.2e6, 0.3e6
			d.Receiver = end("remote", vethB(nil), nil)
			d.Receiver.RcvBuf, d.Receiver.BufAsked = 128<<10, 64<<10
			d.Receiver.Sysctls = map[string]string{"net.core.rmem_max": "212992"}
			return d
		}, []string{"WARN D15"}, []string{"window 64 KiB / RTT 19.9 ms (the path's smallest; smoothed 20.0 ms) = 26.3 Mbit/s",
			"could send no more for 40% of the time because the receiver's window was full and 10% because its own send buffer was",
			"receiver SO_RCVBUF 128 KiB", "remote net.core.rmem_max=212992"}},
		{"window-limited on a busy host: the window still named (D28 a note)", func() Direction {
			d := healthyTCP
			d.Goodput, d.RTTus, d.MinRTTus, d.MaxWnd, d.MaxCwnd = 25e6, 20000, 19900, 64<<10, 200<<10
			d.BusyUs, d.RwndLimitedUs, d.SndbufLimitedUs = 3e6, 1.2e6, 0.3e6
			d.Receiver = end("remote", vethB(nil), &pathinfo.Delta{Iface: "veth-b", Host: &pathinfo.HostCPU{CPUs: 2, IdlePct: 1}})
			d.Receiver.Thread = &Thread{CPUPct: 20, RunWaitPct: 40}
			d.Receiver.RcvBuf, d.Receiver.BufAsked = 128<<10, 64<<10
			return d
		}, []string{"WARN D15", "INFO D28"}, []string{"window 64 KiB / RTT 19.9 ms"}},
		// Recorded in make test on a busy host (doctor's MTU lab, veth):
		// goodput 84% of the window over a smoothed RTT of 91 µs, but
		// the path's own RTT is 3 µs: the queue is the host's CPU.
		{"a window over an RTT the host's CPU inflated is not window-limited", func() Direction {
			d := healthyTCP
			d.Goodput, d.RTTus, d.MinRTTus, d.MaxWnd, d.MaxCwnd = 14.39e9, 91, 3, 190<<10, 1<<20
			return d
		}, nil, nil},
		{"no path RTT: no claim", func() Direction {
			d := healthyTCP
			d.Goodput, d.RTTus, d.MinRTTus, d.MaxWnd, d.MaxCwnd = 25e6, 20000, 0, 64<<10, 200<<10
			return d
		}, nil, nil},
		// Recorded in make test on a busy host: a healthy routed lab's
		// download, its mean RTT inflated by late ACKs.
		{"a goodput above the window's bound is not window-limited", func() Direction {
			d := healthyTCP
			d.Goodput, d.RTTus, d.MinRTTus, d.MaxWnd, d.MaxCwnd = 13.77e9, 101, 80, 133<<10, 200<<10
			return d
		}, nil, nil},
		{"cwnd-limited is not window-limited", func() Direction {
			d := healthyTCP
			d.Goodput, d.RTTus, d.MinRTTus, d.MaxWnd, d.MaxCwnd = 25e6, 20000, 20000, 64<<10, 60<<10
			return d
		}, nil, nil},
		{"UDP datagrams over the receiver's MTU", func() Direction {
			return Direction{UDP: true, Seconds: 3, Datagram: 8972, Sent: 2000, Lost: 2000,
				Sender:   end("local", nic("veth-a", 5, 6, 9000, 0, map[string]uint64{"tx_dropped": 2000}), nil),
				Receiver: end("remote", vethB(nil), nil)}
		}, []string{"ERROR D16"}, []string{"8972-byte datagrams make 9000-byte packets; MTU sender 9000, receiver 1500; 2000 of 2000 datagrams lost (100%); sender tx_dropped +2000"}},
		{"UDP datagrams over the receiver's MTU that a veth let through", func() Direction {
			return Direction{UDP: true, Seconds: 3, Datagram: 8972, Sent: 2000, Lost: 0,
				Sender:   end("local", nic("veth-a", 5, 6, 9000, 0, nil), nil),
				Receiver: end("remote", vethB(nil), nil)}
		}, []string{"WARN D16"}, []string{"8972-byte datagrams make 9000-byte packets; MTU sender 9000, receiver 1500; 0 of 2000 datagrams lost (0%)"}},
		{"MTU mismatch on a veth pair, TCP", func() Direction {
			d := healthyTCP
			d.Sender = end("local", nic("veth-a", 5, 6, 9000, 0, nil), nil)
			return d
		}, []string{"WARN D16"}, []string{"MTU 9000 on the sender's veth-a, 1500 on the receiver's veth-b"}},
		{"black hole", func() Direction {
			return Direction{Seconds: 3, Goodput: 130e3, SentBytes: 4 << 20, ReceivedBytes: 48 << 10, Retransmits: 14, MSS: 8948, PMTU: 9000, Failed: true,
				Sender: &End{Name: "local", CPUPct: -1, Path: &pathinfo.Delta{Iface: "veth-a", SNMP: map[string]uint64{"TcpExt.TCPTimeouts": 6}},
					Sysctls: map[string]string{"net.ipv4.tcp_mtu_probing": "0"}}}
		}, []string{"ERROR D17"}, []string{"the connection was made, then 49152 bytes arrived in 3.0 s with 14 retransmissions; segments of 8948 bytes (path MTU 9000 as this host knows it); 6 retransmission timeouts"}},
		{"UDP receive buffer overflow", func() Direction {
			return Direction{UDP: true, Seconds: 3, Goodput: 400e6, Datagram: 1400, Sent: 300000, Lost: 145000,
				Sender: end("local", vethA(nil), nil),
				Receiver: &End{Name: "remote", CPUPct: 40, NIC: vethB(nil), RcvBuf: 8192, Sysctls: map[string]string{"net.core.rmem_max": "212992"},
					Path: &pathinfo.Delta{Iface: "veth-b", SNMP: map[string]uint64{"Udp.RcvbufErrors": 145000}}}}
		}, []string{"WARN D18"}, []string{"145000 datagrams dropped in full receive buffers on the receiver (RcvbufErrors; with GRO one can be many), 145000 lost of 300000 sent; SO_RCVBUF 8192 bytes; net.core.rmem_max=212992"}},
		{"shallow queue in front of a shaper", func() Direction {
			d := healthyTCP
			d.Goodput, d.SentBytes, d.Retransmits = 60e6, 22.5e6, 1900
			d.Sender = end("local", vethA(map[string]uint64{"tx_bytes": 23e6}), &pathinfo.Delta{Iface: "veth-a", Qdiscs: []pathinfo.Qdisc{{Kind: "tbf", Handle: "8001:", RateBps: 100e6, LimitBytes: 3000, Drops: 1900, Overlimits: 9000, SentPackets: 15000}}})
			d.Receiver = end("remote", vethB(map[string]uint64{"rx_bytes": 22.9e6}), nil)
			return d
		}, []string{"WARN D19", "INFO D14"}, []string{"1900 packets dropped by the sender's qdiscs on veth-a (11.24% of what they handled): tbf 8001: 1900 (queue limit 3000 bytes); 1900 retransmissions"}},
		// 7.5e9 bytes of 1448 are about 5.18M segments: 1% is 51.8k.
		{"loss on the path", func() Direction {
			d := healthyTCP
			d.Retransmits = 80000
			return d
		}, []string{"WARN D20"}, []string{"80000 retransmissions for about 5179558 segments sent (1.54%)"}},
		// A 1 s drop of everything between the hosts: TCP's timer fired
		// at 0.2, 0.6 and 1.4 s; the retransmits are the outage's, not
		// loss on the path (D20).
		{"outage", func() Direction {
			d := healthyTCP
			d.Retransmits, d.RTOs, d.RTOTimeMs = 80000, 3, 1420
			d.Stall = Stall{Start: 2.1, Seconds: 1.4}
			d.Sender = end("local", vethA(nil), nil)
			d.Sender.NIC.Delta.CarrierChanges = ptr[uint64](0)
			return d
		}, []string{"WARN D27"}, []string{"no byte moved from 2.1 s to 3.5 s into the test (1.4 s); the sender's retransmission timer fired 3 times, 1420 ms spent recovering (tcpi_total_rto, tcpi_total_rto_time); no carrier change on local veth-a"}},
		{"a stall without a retransmission timeout is the host's, no outage", func() Direction {
			d := healthyTCP
			d.Stall = Stall{Start: 2.1, Seconds: 1.4}
			return d
		}, nil, nil},
		{"a stall under a second is no outage", func() Direction {
			d := healthyTCP
			d.RTOs, d.Stall = 1, Stall{Start: 2.1, Seconds: 0.9}
			return d
		}, nil, nil},
		{"a stall with the carrier lost is D10's", func() Direction {
			d := healthyTCP
			d.RTOs, d.Stall = 3, Stall{Start: 2.1, Seconds: 1.4}
			d.Receiver = end("remote", vethB(nil), nil)
			d.Receiver.NIC.Delta.CarrierChanges = ptr[uint64](2)
			return d
		}, nil, nil},
		{"UDP paced too slow to tell", func() Direction {
			d := healthyTCP
			d.UDP, d.Rate, d.Datagram, d.Stall = true, 64e3, 1400, Stall{Start: 1, Seconds: 1.2}
			return d
		}, nil, nil},
		{"UDP outage", func() Direction {
			d := healthyTCP
			d.UDP, d.Rate, d.Datagram, d.Stall = true, 100e6, 1400, Stall{Start: 1, Seconds: 1.2}
			return d
		}, []string{"WARN D27"}, []string{"no byte moved from 1.0 s to 2.2 s into the test (1.2 s)"}},
		// Counters of a doctor download on a busy host's veth pair:
		// IpOutRequests at the sender equalled IpInReceives at the
		// receiver, and 1510 of 1756 retransmissions came back D-SACKed.
		// Scaled to this test's segments.
		{"retransmissions the receiver already had", func() Direction {
			d := healthyTCP
			d.Retransmits = 80000
			d.Sender = end("local", vethA(map[string]uint64{"tx_bytes": 7.6e9}), &pathinfo.Delta{Iface: "veth-a",
				SNMP: map[string]uint64{"TcpExt.TCPDSACKRecvSegs": 68800, "TcpExt.TCPSACKReorder": 2400, "TcpExt.TCPTSReorder": 180}})
			return d
		}, []string{"INFO D20"}, []string{"80000 retransmissions for about 5179558 segments sent (1.54%); the receiver already had 68800 of them (D-SACK on the sender's host), so about 11200 were lost (0.22%); TCP saw reordering 2580 times"}},
		{"loss on the path beside spurious retransmissions", func() Direction {
			d := healthyTCP
			d.Retransmits = 80000
			d.Sender = end("local", vethA(map[string]uint64{"tx_bytes": 7.6e9}), &pathinfo.Delta{Iface: "veth-a",
				SNMP: map[string]uint64{"TcpExt.TCPDSACKRecvSegs": 10000}})
			return d
		}, []string{"WARN D20"}, []string{"the receiver already had 10000 of them (D-SACK on the sender's host), so about 70000 were lost (1.35%)"}},
		{"a few spurious retransmissions say nothing", func() Direction {
			d := healthyTCP
			d.Retransmits = 20000
			d.Sender = end("local", vethA(map[string]uint64{"tx_bytes": 7.6e9}), &pathinfo.Delta{Iface: "veth-a",
				SNMP: map[string]uint64{"TcpExt.TCPDSACKRecvSegs": 20000}})
			return d
		}, nil, nil},
		{"reader-limited", func() Direction {
			d := healthyTCP
			d.Goodput = 2e9
			d.Receiver = &End{Name: "local", CPUPct: 99, Streams: 1, BufLen: 1024, NIC: vethB(nil),
				IO: engine.Sample{Bytes: 750e6, Calls: 732422}}
			return d
		}, []string{"WARN D21", "INFO D22"}, []string{"732422 reads of 1024 bytes on average into a 1024-byte buffer, receiver CPU 99% of a core per stream"}},
		{"starved reader", func() Direction {
			d := healthyTCP
			d.Goodput = 5e6
			d.Receiver = &End{Name: "local", CPUPct: 2, Streams: 1, BufLen: 128 << 10, NIC: vethB(nil),
				IO: engine.Sample{Bytes: 1.9e6, Calls: 1300}}
			return d
		}, []string{"INFO D21"}, []string{"1300 reads of 1462 bytes on average into a 131072-byte buffer"}},
		{"a receiver's core in softirq", func() Direction {
			d := healthyTCP
			d.Receiver = end("remote", vethB(nil), &pathinfo.Delta{Iface: "veth-b", SoftirqPct: []float64{12, 97.5}})
			return d
		}, []string{"INFO D22"}, []string{"cpu1 spent 98% of the test in softirq on the receiver (remote)"}},
		{"below line rate on a real link", func() Direction {
			d := healthyTCP
			d.Goodput = 300e6
			d.Sender = end("local", nic("eth0", 2, 0, 1500, 1000, nil), nil)
			d.Receiver = end("remote", nic("eth0", 2, 0, 1500, 1000, nil), nil)
			return d
		}, []string{"INFO D23"}, []string{"goodput 300 Mbit/s is 32% of the 1.00 Gbit/s link's TCP line rate (940 Mbit/s)"}},
		{"far below line rate with the NIC to blame: D9", func() Direction {
			d := healthyTCP
			d.Goodput = 300e6
			d.Sender = end("local", nic("eth0", 2, 0, 1500, 1000, nil), nil)
			d.Sender.NIC.Interface.Carrier = ptr(true)
			return d
		}, []string{"WARN D9"}, []string{"300 Mbit/s is 32% of the 940 Mbit/s a 1G link carries"}},
		{"far below a 10G link's rate: D9 in Gbit/s (was '9.4e+03 Mbit/s')", func() Direction {
			d := healthyTCP
			d.Goodput = 3e9
			d.Sender = end("local", nic("eth0", 2, 0, 1500, 10000, nil), nil)
			d.Sender.NIC.Interface.Carrier = ptr(true)
			return d
		}, []string{"WARN D9"}, []string{"3.00 Gbit/s is 32% of the 9.40 Gbit/s a 10G link carries"}},
		{"far below line rate behind a shaper: no D9", func() Direction {
			d := healthyTCP
			d.Goodput = 94e6
			d.Sender = end("local", nic("eth0", 2, 0, 1500, 1000, nil), tbf)
			d.Sender.NIC.Interface.Carrier = ptr(true)
			return d
		}, []string{"WARN D14", "INFO D23"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Diagnose(tc.d())
			if diff := cmp.Diff(tc.want, rulesOf(got)); diff != "" {
				t.Fatalf("findings (-want +got):\n%s\n%v", diff, got)
			}
			for _, ev := range tc.evidence {
				if !strings.Contains(got[0].Evidence, ev) {
					t.Errorf("evidence %q lacks %q", got[0].Evidence, ev)
				}
			}
			for _, f := range got {
				if f.Fix == "" || f.Summary == "" || f.Evidence == "" {
					t.Errorf("%s: a finding needs a summary, evidence and a fix: %+v", f.Rule, f)
				}
			}
		})
	}
}

// The window rule's fix names the buffer a long path needs.
func TestWindowFix(t *testing.T) {
	d := Direction{Seconds: 3, Goodput: 25e6, RTTus: 20000, MinRTTus: 20000, MaxWnd: 64 << 10, MaxCwnd: 200 << 10,
		Sender:   &End{Name: "local", CPUPct: -1, NIC: nic("eth0", 2, 0, 1500, 1000, nil)},
		Receiver: &End{Name: "remote", CPUPct: -1, BufAsked: 64 << 10}}
	fs := Diagnose(d)
	if len(fs) == 0 || fs[0].Rule != "D15" {
		t.Fatalf("got %v, want D15 first", fs)
	}
	// 0.94 Gbit/s over 20 ms: 2.35 MB.
	for _, want := range []string{"the bandwidth-delay product at the link's line rate (940 Mbit/s) is 2.2 MiB"} {
		if !strings.Contains(fs[0].Evidence, want) {
			t.Errorf("evidence %q lacks %q", fs[0].Evidence, want)
		}
	}
	if want := "a window of at least 2.2 MiB: -w 3M (it was asked smaller), raise net.core.rmem_max and net.core.wmem_max to 4700000"; !strings.HasPrefix(fs[0].Fix, want) {
		t.Errorf("fix %q, want it to start %q", fs[0].Fix, want)
	}
}

// Ranking: the most serious first, then causes before symptoms; a link
// rule's finding before a path rule's at the same severity.
func TestRank(t *testing.T) {
	fs := []finding.Finding{
		{Rule: "D22", Severity: finding.Info},
		{Rule: "D20", Severity: finding.Warn},
		{Rule: "D7", Severity: finding.Warn},
		{Rule: "D14", Severity: finding.Warn},
		{Rule: "D6", Severity: finding.Warn},
		{Rule: "D17", Severity: finding.Error},
	}
	Rank(fs)
	if diff := cmp.Diff([]string{"ERROR D17", "WARN D6", "WARN D14", "WARN D7", "WARN D20", "INFO D22"}, rulesOf(fs)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// What a stronger finding explains is dropped from a merge: the
// asymmetry a shaper makes, the loss a black hole makes.
func TestMergeExplained(t *testing.T) {
	fs := Merge(
		[]finding.Finding{{Rule: "D14", Severity: finding.Warn, Iface: "a", Summary: "s"}},
		[]finding.Finding{{Rule: "D7", Severity: finding.Warn, Summary: "one direction"}, {Rule: "D14", Severity: finding.Warn, Iface: "a", Summary: "s"}},
	)
	if diff := cmp.Diff([]string{"WARN D14"}, rulesOf(fs)); diff != "" {
		t.Errorf("shaper and asymmetry (-want +got):\n%s", diff)
	}
	fs = Merge([]finding.Finding{{Rule: "D17", Severity: finding.Error}, {Rule: "D20", Severity: finding.Warn}, {Rule: "D7", Severity: finding.Error}})
	if diff := cmp.Diff([]string{"ERROR D17", "ERROR D7"}, rulesOf(fs)); diff != "" {
		t.Errorf("black hole (-want +got):\n%s", diff)
	}
}

// UDP at twice a 50 Mbit/s tbf on the sender's interface: the tbf's drops
// that the sender was told of (ENOBUFS) and sent again are no loss (INFO),
// the rest are (WARN from 1%), up to what the receiver lost.
func TestD19Resent(t *testing.T) {
	udp := func(drops uint64, resent, lost int64) Direction {
		return Direction{UDP: true, Seconds: 2, Goodput: 48e6, Rate: 100e6, Datagram: 1400, Sent: 8900, Lost: lost,
			Resent: resent, ResentWait: 5400 * time.Millisecond,
			Sender: end("local", nic("veth-a", 5, 6, 1500, 0, nil), &pathinfo.Delta{Iface: "veth-a", Qdiscs: []pathinfo.Qdisc{
				{Kind: "tbf", Handle: "8001:", RateBps: 50e6, LimitBytes: 377000, Drops: drops, SentPackets: 8900 - drops + uint64(resent)}}})}
	}
	for _, tc := range []struct {
		name     string
		d        Direction
		sev      finding.Severity
		evidence string
	}{
		{"every drop resent", udp(300, 300, 0), finding.Info,
			"300 packets refused by the sender's qdiscs on veth-a: tbf 8001: 300 (queue limit 368 KiB); the sender had 300 sends refused (ENOBUFS), sent each again and waited 5.4s in all"},
		{"more dropped than resent", udp(1300, 300, 1000), finding.Warn,
			"1300 packets dropped by the sender's qdiscs on veth-a, which refused 300 sends to the sender (ENOBUFS) that it sent again: 1000 lost there (10.87% of what they handled)"},
		// Recorded: -P 4 with GSO trains through a 50 Mbit/s tbf; a
		// refused train is one refusal and many drops.
		{"no more lost there than the receiver lost", udp(690, 312, 99), finding.Warn,
			"690 packets dropped by the sender's qdiscs on veth-a, which refused 312 sends to the sender (ENOBUFS) that it sent again: 99 lost there (1.07% of what they handled)"},
		{"a sender that resent nothing", udp(300, 0, 300), finding.Warn,
			"300 packets dropped by the sender's qdiscs on veth-a (3.37% of what they handled)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := D19(tc.d)
			if len(fs) != 1 || fs[0].Severity != tc.sev || !strings.Contains(fs[0].Evidence, tc.evidence) {
				t.Errorf("got %v, want one %s D19 with %q", fs, tc.sev, tc.evidence)
			}
		})
	}
}
