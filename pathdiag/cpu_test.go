package pathdiag

import (
	"slices"
	"strings"
	"testing"

	"github.com/blastnet/blast/finding"
	"github.com/blastnet/blast/pathinfo"
)

// TestD28 judges recorded figures: a blast server in a cgroup with
// cpu.max "5000 100000" (the receiver of a veth lab: its thread used 5%
// of a core and waited 93% of the test, on a host 70% idle), the same lab
// with a busy loop per CPU, and the idle fast path.
func TestD28(t *testing.T) {
	host := func(idle, steal float64, snmp map[string]uint64) *pathinfo.Delta {
		return &pathinfo.Delta{Iface: "veth-b", SNMP: snmp, Host: &pathinfo.HostCPU{CPUs: 2, IdlePct: idle, StealPct: steal}}
	}
	endOf := func(name string, path *pathinfo.Delta, cpu, wait float64) *End {
		if path != nil {
			path.Iface = "veth-" + name
		}
		e := &End{Name: name, Path: path, CPUPct: -1, Streams: 1}
		if cpu >= 0 {
			e.Thread = &Thread{CPUPct: cpu, RunWaitPct: wait}
		}
		return e
	}
	tcp := func(snd, rcv *End) Direction {
		return Direction{Seconds: 1, Goodput: 12e6, SentBytes: 1.5e6, ReceivedBytes: 1.5e6, Retransmits: 0,
			MaxCwnd: 1 << 20, MaxWnd: 64 << 10, RTTus: 900, MinRTTus: 30, MSS: 1448, PMTU: 1500,
			BusyUs: 1e6, RwndLimitedUs: 8e5, Sender: snd, Receiver: rcv}
	}
	udp := func(snd, rcv *End, rate float64, sent, lost int64) Direction {
		return Direction{UDP: true, Seconds: 1, Rate: rate, Goodput: rate * float64(sent-lost) / float64(sent),
			SentBytes: sent * 1472, ReceivedBytes: (sent - lost) * 1472, Datagram: 1472, Sent: sent, Lost: lost,
			Retransmits: -1, Sender: snd, Receiver: rcv}
	}
	idleHost := func() *pathinfo.Delta { return host(70, 0, nil) }
	quota := func(d *pathinfo.Delta, periods, throttled uint64) *pathinfo.Delta {
		d.Quota = &pathinfo.CPUQuota{Cgroup: "/blast/srv", CPUs: 0.05, Periods: periods, Throttled: throttled, ThrottledSeconds: 0.9}
		return d
	}
	for _, tc := range []struct {
		name    string
		d       Direction
		want    []string // severity, rule and summary's start of each finding
		noWarn  bool     // nothing else at WARN or above
		explain bool     // the first finding explains the receiver's symptoms
	}{
		{name: "receiver in a 5% CPU quota, tcp",
			d:    tcp(endOf("local", idleHost(), 20, 1), endOf("remote", host(70, 0, map[string]uint64{"TcpExt.TCPRcvQDrop": 40}), 5, 93)),
			want: []string{"WARN D28 CPU-bound at the receiver (remote), not the network: its data thread waited for a CPU while the host had CPU to spare"}, noWarn: true, explain: true},
		// TestLabOutage's download while make test ran: a host 20%
		// idle whose load came and went, the receiver's thread waiting
		// 34% of the test and the sender's 31%: no cause at WARN, but
		// the receiver's window is its CPU's (INFO that explains it).
		{name: "a thread that waited a third of the test on a host whose load came and went, tcp",
			d:       tcp(endOf("remote", host(20, 0, nil), 37, 31), endOf("local", host(20, 0, nil), 42, 34)),
			want:    []string{"INFO D28 the receiver's data thread waited for a CPU 34% of the test (other work on its cores), and it fell short there; it explains", "INFO D28 the sender's data thread waited for a CPU at times (other work on its cores), and nothing fell short for it"},
			noWarn:  true,
			explain: true},
		{name: "receiver in a 5% CPU quota on a busy host, tcp",
			d:    tcp(endOf("local", host(0, 0, nil), 6, 16), endOf("remote", quota(host(0, 0, nil), 10, 10), 4, 93)),
			want: []string{"WARN D28 CPU-bound at the receiver (remote), not the network: a cgroup quota holds its blast to 0.05 CPU, and throttled it most of the test", "INFO D28 the local host was busy"}, noWarn: true, explain: true},
		{name: "sender on a busy host with steal: its thread waited 89% (TestLabDoctorHealthy under two busy loops)",
			d: func() Direction {
				d := tcp(endOf("remote", host(0, 12, nil), 9, 89), endOf("local", host(0, 12, nil), 5, 10))
				d.Goodput, d.RwndLimitedUs = 3e9, 0
				return d
			}(),
			want: []string{"INFO D28 the local host had CPU stolen by its hypervisor", "INFO D28 the remote host had CPU stolen by its hypervisor"}, noWarn: true},
		{name: "a thread that waited 30% on a host with CPU to spare, nothing short",
			d: func() Direction {
				d := tcp(endOf("local", idleHost(), 30, 1), endOf("remote", idleHost(), 20, 30))
				d.RwndLimitedUs = 0
				return d
			}(),
			want: []string{"INFO D28 the receiver's data thread waited for a CPU at times"}, noWarn: true},
		{name: "receiver sharing its core with a busy loop: waited 50%",
			d: func() Direction {
				d := tcp(endOf("local", idleHost(), 30, 1), endOf("remote", host(40, 0, nil), 45, 52))
				d.RwndLimitedUs = 0
				return d
			}(),
			want: []string{"WARN D28 CPU-bound at the receiver (remote), not the network: its data thread waited for a CPU while the host had CPU to spare"}, noWarn: true, explain: true},
		{name: "receiver's core in softirq, udp lost",
			d: func() Direction {
				r := endOf("remote", host(40, 0, map[string]uint64{"Udp.RcvbufErrors": 900}), 60, 3)
				r.Path.SoftirqPct = []float64{12, 97}
				return udp(endOf("local", idleHost(), 40, 0), r, 500e6, 42000, 900)
			}(),
			want: []string{"WARN D28 CPU-bound at the receiver (remote), not the network: a core spent the test in softirq moving its packets"}, noWarn: true, explain: true},
		{name: "a core in softirq, nothing short: D22's alone",
			d: func() Direction {
				r := endOf("remote", idleHost(), 60, 3)
				r.Path.SoftirqPct = []float64{12, 97}
				d := tcp(endOf("local", idleHost(), 40, 0), r)
				d.RwndLimitedUs = 0
				return d
			}(),
			want: nil},
		{name: "a quota that seldom throttled, idle host",
			d: func() Direction {
				d := tcp(endOf("local", idleHost(), 30, 1), endOf("remote", quota(idleHost(), 10, 2), 20, 3))
				d.RwndLimitedUs = 0
				return d
			}(),
			want: nil},
		{name: "receiver in a 5% CPU quota, udp loses 60%",
			d:    udp(endOf("local", idleHost(), 30, 0), endOf("remote", host(72, 0, map[string]uint64{"Udp.RcvbufErrors": 6000, "Udp.InErrors": 6000}), 4, 95), 100e6, 10000, 6000),
			want: []string{"WARN D28 CPU-bound at the receiver (remote)"}, noWarn: true, explain: true},
		{name: "sender in a 5% CPU quota, udp short of -b",
			d: func() Direction {
				d := udp(endOf("remote", idleHost(), 5, 94), endOf("local", idleHost(), 3, 0), 100e6, 1000, 0)
				return d
			}(),
			want: []string{"WARN D28 CPU-bound at the sender (remote)"}, noWarn: true},
		{name: "receiver at a full core loses udp on an idle host",
			d:    udp(endOf("local", idleHost(), 40, 0), endOf("remote", host(45, 0, map[string]uint64{"Udp.RcvbufErrors": 900}), 99, 3), 500e6, 42000, 900),
			want: []string{"WARN D28 CPU-bound at the receiver (remote), not the network: its data thread used a full core and could not keep up"}, noWarn: true, explain: true},
		{name: "fast veth path: the sender at a full core, nothing short",
			d: func() Direction {
				d := tcp(endOf("local", host(35, 0, nil), 99, 2), endOf("remote", host(35, 0, nil), 60, 1))
				d.Goodput, d.RwndLimitedUs = 20e9, 0
				return d
			}(),
			want: []string{"INFO D28 the path is faster than this host: CPU-bound at the sender (local) at 20.0 Gbit/s"}, noWarn: true},
		{name: "both CPUs loaded: busy hosts, info only",
			d: func() Direction {
				d := tcp(endOf("local", host(1, 0, nil), 45, 52), endOf("remote", host(1, 0, nil), 25, 74))
				d.Goodput, d.RwndLimitedUs = 6e9, 0
				return d
			}(),
			want: []string{"INFO D28 the remote host was busy", "INFO D28 the local host was busy"}, noWarn: true},
		{name: "both CPUs loaded: doctor's udp overflows the receiver, info only",
			d:    udp(endOf("local", host(2, 0, nil), 30, 40), endOf("remote", host(2, 0, map[string]uint64{"Udp.RcvbufErrors": 2000}), 45, 50), 500e6, 42000, 2000),
			want: []string{"INFO D28 the remote host was busy", "INFO D28 the local host was busy"}, noWarn: true, explain: true},
		{name: "hypervisor steal",
			d: func() Direction {
				d := tcp(endOf("local", host(40, 30, nil), 30, 5), endOf("remote", idleHost(), 20, 1))
				d.RwndLimitedUs = 0
				return d
			}(),
			want: []string{"INFO D28 the local host had CPU stolen by its hypervisor"}, noWarn: true},
		{name: "idle healthy path",
			d: func() Direction {
				d := tcp(endOf("local", idleHost(), 60, 2), endOf("remote", idleHost(), 40, 1))
				d.RwndLimitedUs = 0
				return d
			}(),
			want: nil},
		{name: "no thread figures (iperf3 peer)",
			d: func() Direction {
				d := tcp(endOf("local", idleHost(), -1, 0), endOf("remote", nil, -1, 0))
				d.RwndLimitedUs = 0
				return d
			}(),
			want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := Diagnose(tc.d)
			var got []string
			for _, f := range fs {
				if f.Rule == "D28" {
					got = append(got, f.Severity.String()+" "+string(f.Rule)+" "+f.Summary)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("D28 findings %q, want %d starting %q (all: %v)", got, len(tc.want), tc.want, fs)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("finding %d: %q, want it to start %q", i, got[i], tc.want[i])
				}
			}
			if len(tc.want) > 0 && fs[0].Rule != "D28" {
				t.Errorf("first finding %s, want D28", fs[0])
			}
			for _, f := range fs {
				if tc.noWarn && f.Rule != "D28" && f.Severity >= finding.Warn {
					t.Errorf("a network cause beside D28: %s", f)
				}
			}
			if len(fs) > 0 && cpuExplains(fs[0]) != tc.explain {
				t.Errorf("explains the receiver's symptoms: %v, want %v (%s)", cpuExplains(fs[0]), tc.explain, fs[0])
			}
		})
	}
}

// A busy receiver (INFO) explains its own full socket buffer, not loss
// the path dealt; a receiver held back (WARN) explains both. A direction
// slower for an end short of CPU is no asymmetry of the path; the other
// direction's busy end says nothing of it.
func TestCPUExplains(t *testing.T) {
	busyEnd := func(name string, snmp map[string]uint64, cpu, wait float64) *End {
		return &End{Name: name, CPUPct: -1, Streams: 1, Thread: &Thread{CPUPct: cpu, RunWaitPct: wait},
			Path: &pathinfo.Delta{Iface: "veth-" + name, SNMP: snmp, Host: &pathinfo.HostCPU{CPUs: 2, IdlePct: 1}}}
	}
	udp := Direction{UDP: true, Seconds: 1, Rate: 500e6, Goodput: 450e6, SentBytes: 42000 * 1472, ReceivedBytes: 38000 * 1472,
		Datagram: 1472, Sent: 42000, Lost: 4000, Retransmits: -1,
		Sender: busyEnd("local", nil, 60, 30), Receiver: busyEnd("remote", nil, 50, 40)}
	if got := rulesOf(Diagnose(udp)); !slices.Contains(got, "WARN D20") {
		t.Errorf("loss on the path beside a busy receiver: %v, want WARN D20 kept", got)
	}
	udp.Receiver = busyEnd("remote", map[string]uint64{"Udp.RcvbufErrors": 4000}, 50, 40)
	for _, f := range Diagnose(udp) {
		if f.Severity >= finding.Warn {
			t.Errorf("a busy receiver's full buffer at WARN: %s", f)
		}
	}

	// Doctor's 500 Mbit/s on a loaded receiver whose thread neither
	// waited long nor used a core: the busy host still explains D18.
	udp.Receiver = busyEnd("remote", map[string]uint64{"Udp.RcvbufErrors": 4000}, 20, 10)
	for _, f := range Diagnose(udp) {
		if f.Severity >= finding.Warn {
			t.Errorf("a busy receiver's full buffer at WARN: %s", f)
		}
	}
	if !ReceiverCPUBound(udp) {
		t.Error("doctor would not lower its rate for a busy receiver that overflowed")
	}
	// The same with -w 8K on the receiver, its thread waiting 34%
	// (TestLabUDPReceiveBuffer under two busy loops): the buffer asked is
	// the cause, D18 stays.
	udp.Receiver.BufAsked = 8 << 10
	udp.Receiver.Thread.RunWaitPct = 34
	if got := rulesOf(Diagnose(udp)); !slices.Contains(got, "WARN D18") {
		t.Errorf("-w 8K on a busy receiver: %v, want WARN D18 kept", got)
	}

	d7 := []finding.Finding{{Rule: "D7", Severity: finding.Warn, Summary: "asymmetric path"}}
	quota := &pathinfo.CPUQuota{Cgroup: "/c", CPUs: 0.02, Periods: 10, Throttled: 10}
	starvedEnd := busyEnd("remote", nil, 2, 90)
	starvedEnd.Path.Quota = quota
	slow := Direction{Seconds: 1, Goodput: 650e6, Retransmits: 0, Sender: busyEnd("local", nil, 5, 1), Receiver: starvedEnd}
	fast := Direction{Seconds: 1, Goodput: 1.3e9, Retransmits: 0, Sender: busyEnd("remote", nil, 5, 1), Receiver: busyEnd("local", nil, 5, 1)}
	if got := WithoutCPUAsymmetry(d7, &slow, &fast); len(got) != 0 {
		t.Errorf("the slow direction's receiver in a quota: %v kept", got)
	}
	if got := WithoutCPUAsymmetry(d7, &fast, &fast); len(got) != 1 {
		t.Error("D7 dropped with no end short of CPU")
	}
	slow.Receiver, fast.Receiver = busyEnd("local", nil, 5, 1), starvedEnd
	if got := WithoutCPUAsymmetry(d7, &slow, &fast); len(got) != 1 {
		t.Error("D7 dropped for the fast direction's end short of CPU")
	}
}
