package pathinfo

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// What the netlink library decodes, as pathinfo reports it. The kernel of
// the lab tests has no fq, netem, fq_codel, sfq or police action, so these
// start from the library's types as its own decoders fill them.

func qstats(bytes uint64, pkts, drops, overlimits, requeues, backlog, qlen uint32) *netlink.ClassStatistics {
	return &netlink.ClassStatistics{
		Basic: &netlink.GnetStatsBasic{Bytes: bytes, Packets: pkts},
		Queue: &netlink.GnetStatsQueue{Drops: drops, Overlimits: overlimits, Requeues: requeues, Backlog: backlog, Qlen: qlen},
	}
}

func TestFromQdisc(t *testing.T) {
	root := netlink.QdiscAttrs{Handle: 0x10000, Parent: netlink.HANDLE_ROOT,
		Statistics: (*netlink.QdiscStatistics)(qstats(5000, 50, 3, 2, 1, 300, 2))}
	counted := Qdisc{Handle: "1:", Parent: "root", SentBytes: 5000, SentPackets: 50, Drops: 3, Overlimits: 2, Requeues: 1, Backlog: 300, Qlen: 2}
	with := func(q Qdisc, f func(*Qdisc)) Qdisc { f(&q); return q }
	for _, tc := range []struct {
		name string
		q    netlink.Qdisc
		opts []byte
		want Qdisc
	}{
		{"tbf rate 100mbit burst 32kb limit 30000",
			&netlink.Tbf{QdiscAttrs: root, Rate: 12_500_000, Limit: 30000, Buffer: 40960},
			nil, with(counted, func(q *Qdisc) { q.Kind, q.RateBps, q.LimitBytes, q.BurstBytes = "tbf", 1e8, 30000, 32768 })},
		{"fq maxrate 10mbit limit 500", &netlink.Fq{QdiscAttrs: root, FlowMaxRate: 1_250_000, PacketLimit: 500},
			nil, with(counted, func(q *Qdisc) { q.Kind, q.RateBps, q.LimitPackets = "fq", 1e7, 500 })},
		{"fq without maxrate", &netlink.Fq{QdiscAttrs: root, FlowMaxRate: ^uint32(0), PacketLimit: 10000},
			nil, with(counted, func(q *Qdisc) { q.Kind, q.LimitPackets = "fq", 10000 })},
		{"netem rate 20mbit limit 1000", &netlink.Netem{QdiscAttrs: root, Rate64: 2_500_000, Limit: 1000},
			nil, with(counted, func(q *Qdisc) { q.Kind, q.RateBps, q.LimitPackets = "netem", 2e7, 1000 })},
		{"fq_codel", &netlink.FqCodel{QdiscAttrs: root, Limit: 10240},
			nil, with(counted, func(q *Qdisc) { q.Kind, q.LimitPackets = "fq_codel", 10240 })},
		{"sfq", &netlink.Sfq{QdiscAttrs: root, Limit: 127},
			nil, with(counted, func(q *Qdisc) { q.Kind, q.LimitPackets = "sfq", 127 })},
		{"cake, from its raw options", &netlink.GenericQdisc{QdiscAttrs: root, QdiscType: "cake"},
			cakeOptions(12_500_000, 0), with(counted, func(q *Qdisc) { q.Kind, q.RateBps = "cake", 1e8 })},
		{"cake without options", &netlink.GenericQdisc{QdiscAttrs: root, QdiscType: "cake"},
			nil, with(counted, func(q *Qdisc) { q.Kind = "cake" })},
		{"clsact, no statistics", &netlink.Clsact{QdiscAttrs: netlink.QdiscAttrs{Handle: 0xffff0000, Parent: netlink.HANDLE_INGRESS}},
			nil, Qdisc{Kind: "clsact", Handle: "ffff:", Parent: "ffff:fff1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fromQdisc(tc.q, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := fromQdisc(&netlink.GenericQdisc{QdiscAttrs: root, QdiscType: "pfifo"}, []byte{1}); err == nil ||
		err.Error() != "qdisc pfifo 1: root: pfifo options: 1 bytes, want 4" {
		t.Errorf("short pfifo options: %v", err)
	}
}

func TestFromClass(t *testing.T) {
	attrs := netlink.ClassAttrs{Handle: 0x10010, Parent: 0x10001, Statistics: qstats(100, 1, 0, 4, 0, 0, 0)}
	for _, tc := range []struct {
		name string
		c    netlink.Class
		opts []byte
		want Qdisc
	}{
		{"htb rate 50mbit ceil 80mbit", &netlink.HtbClass{ClassAttrs: attrs, Rate: 6_250_000, Ceil: 10_000_000, Buffer: 4000},
			nil, Qdisc{Kind: "htb", Handle: "1:10", Parent: "1:1", Class: true, RateBps: 5e7, CeilBps: 8e7, BurstBytes: 1600,
				SentBytes: 100, SentPackets: 1, Overlimits: 4}},
		{"hfsc, from its raw options", &netlink.GenericClass{ClassAttrs: attrs, ClassType: "hfsc"},
			nla(hfscUSC, hfscCurve(0, 0, 1_250_000_000)), Qdisc{Kind: "hfsc", Handle: "1:10", Parent: "1:1", Class: true,
				CeilBps: 1e10, SentBytes: 100, SentPackets: 1, Overlimits: 4}},
		{"mq", &netlink.GenericClass{ClassAttrs: netlink.ClassAttrs{Handle: 1, Parent: netlink.HANDLE_ROOT}, ClassType: "mq"},
			nil, Qdisc{Kind: "mq", Handle: ":1", Parent: "root", Class: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fromClass(tc.c, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// police rate 10mbit burst 100k drop, as the library decodes it.
func police10mbit(index int) *netlink.PoliceAction {
	p := netlink.NewPoliceAction()
	p.Index = index
	p.Rate = 1_250_000
	p.Burst = 102400
	p.ExceedAction = netlink.TC_POLICE_SHOT
	p.NotExceedAction = netlink.TC_POLICE_OK
	p.Statistics = (*netlink.ActionStatistic)(qstats(2_000_000, 2000, 1900, 1900, 0, 0, 0))
	return p
}

func TestFromPolice(t *testing.T) {
	got := fromPolice(police10mbit(3), "ingress", "ffff:fff2", "matchall")
	want := Policer{Direction: "ingress", Parent: "ffff:fff2", Filter: "matchall", Index: 3, RateBps: 1e7,
		BurstBytes: 102400, Action: "drop", Drops: 1900, Overlimits: 1900, Packets: 2000, Bytes: 2_000_000}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// Over 34 Gbit/s the kernel's 32-bit field holds its ceiling.
	fast := netlink.NewPoliceAction()
	fast.Rate, fast.ExceedAction = ^uint32(0), netlink.TC_POLICE_RECLASSIFY
	if got := fromPolice(fast, "egress", "1:", "u32"); got.RateBps != 8*(1<<32-1) || got.Action != "reclassify" {
		t.Errorf("a 40 Gbit/s policer: %+v", got)
	}
}

func TestPoliceActions(t *testing.T) {
	mirred := netlink.NewMirredAction(1)
	for _, tc := range []struct {
		name string
		f    netlink.Filter
		want []int // indexes
	}{
		{"u32, old style and action", &netlink.U32{Police: police10mbit(1), Actions: []netlink.Action{mirred, police10mbit(2)}}, []int{1, 2}},
		{"fw", &netlink.FwFilter{Police: police10mbit(3)}, []int{3}},
		{"matchall", &netlink.MatchAll{Actions: []netlink.Action{police10mbit(4), police10mbit(5)}}, []int{4, 5}},
		{"flower", &netlink.Flower{Actions: []netlink.Action{police10mbit(6)}}, []int{6}},
		{"no police", &netlink.U32{Actions: []netlink.Action{mirred}}, nil},
		{"generic", &netlink.GenericFilter{FilterType: "basic"}, nil},
	} {
		var got []int
		for _, p := range policeActions(tc.f) {
			got = append(got, p.Index)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// tcMessage lays out a dump message: a struct tcmsg and attributes.
func tcMessage(ifindex int32, handle, parent uint32, attrs ...[]byte) []byte {
	m := (&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: ifindex, Handle: handle, Parent: parent}).Serialize()
	return append(m, cat(attrs...)...)
}

func TestTCOptions(t *testing.T) {
	kind := func(s string) []byte { return nla(unix.TCA_KIND, append([]byte(s), 0)) }
	stats2 := nla(7|0x8000, nla(1, make([]byte, 16))) // TCA_STATS2 { TCA_STATS_BASIC }
	msgs := [][]byte{
		tcMessage(2, 0x10000, netlink.HANDLE_ROOT, kind("cake"), nla(unix.TCA_OPTIONS|0x8000, cakeOptions(12_500_000, 0)), stats2),
		tcMessage(2, 0x100000, 0x10010, kind("bfifo"), nla(unix.TCA_OPTIONS, u32(5000))),
		tcMessage(3, 0x10000, netlink.HANDLE_ROOT, kind("pfifo"), nla(unix.TCA_OPTIONS, u32(7))), // another link
		tcMessage(2, 0, 0xffff0001, kind("noqueue")),
	}
	got, err := tcOptions(msgs, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := map[tcKey][]byte{
		{0x10000, netlink.HANDLE_ROOT}: cakeOptions(12_500_000, 0),
		{0x100000, 0x10010}:            u32(5000),
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(tcKey{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := tcOptions([][]byte{make([]byte, 10)}, 2); err == nil {
		t.Error("a message shorter than a tcmsg passed")
	}
	bad := tcMessage(2, 0x10000, 0, []byte{200, 0, 1, 0})
	if _, err := tcOptions([][]byte{bad}, 2); err == nil {
		t.Error("a broken attribute passed")
	}
}
