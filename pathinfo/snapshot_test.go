package pathinfo

import (
	"encoding/json"
	"math"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestClassID(t *testing.T) {
	for _, tc := range []struct {
		h          uint32
		qdisc, cls string
	}{
		{0xffffffff, "ffff:", "root"},
		{0, "0:", "none"},
		{0x10000, "1:", "1:"},
		{0x10010, "1:", "1:10"},
		{0x0001, "0:", ":1"},
		{0xfffffff1, "ffff:", "ffff:fff1"},
		{0x80010000, "8001:", "8001:"},
	} {
		if got := qdiscHandle(tc.h); got != tc.qdisc {
			t.Errorf("qdiscHandle(%#x) = %q, want %q", tc.h, got, tc.qdisc)
		}
		if got := classID(tc.h); got != tc.cls {
			t.Errorf("classID(%#x) = %q, want %q", tc.h, got, tc.cls)
		}
	}
}

// Buckets come back to the bytes tc was given: it turned them into
// microseconds and then 64 ns ticks, rounding down.
func TestBucketBytes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rate  uint64 // bytes/s
		ticks uint32
		want  uint64
	}{
		{"tbf 100mbit burst 32kb", 12_500_000, 40960, 32768}, // 2621.44 us
		{"htb 50mbit burst 1600", 6_250_000, 4000, 1600},     // 256 us
		{"htb 80mbit cburst 1600", 10_000_000, 2500, 1600},   // 160 us
		{"no rate", 0, 40960, 0},
		{"no bucket", 12_500_000, 0, 0},
		{"400 Gbit/s, the largest bucket", 50e9, math.MaxUint32, 13743895344000},
		{"more than 2^64 bytes", math.MaxUint64, math.MaxUint32, math.MaxUint64},
	} {
		if got := bucketBytes(tc.rate, tc.ticks); got != tc.want {
			t.Errorf("%s: bucketBytes(%d, %d) = %d, want %d", tc.name, tc.rate, tc.ticks, got, tc.want)
		}
	}
	if got := bitRate(math.MaxUint64 / 4); got != math.MaxUint64 {
		t.Errorf("bitRate does not saturate: %d", got)
	}
}

func TestActionName(t *testing.T) {
	for a, want := range map[int32]string{
		-1: "continue", 0: "pass", 1: "reclassify", 2: "drop", 3: "pipe", 8: "trap", 42: "action 42",
		0x20000000 | 5: "goto chain 5", 0x10000000 | 2: "jump 2",
	} {
		if got := actionName(a); got != want {
			t.Errorf("actionName(%#x) = %q, want %q", a, got, want)
		}
	}
}

func TestDiff(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tbf := Qdisc{Kind: "tbf", Handle: "1:", Parent: "root", RateBps: 1e8, Drops: 10, Overlimits: 5, SentBytes: 1000, SentPackets: 10, Backlog: 300, Qlen: 2}
	class := Qdisc{Kind: "htb", Handle: "1:10", Parent: "1:1", Class: true, RateBps: 5e7, Drops: 1, SentPackets: 7}
	// Two qdiscs with handle 0:, told apart by parent (the children of mq).
	mq1 := Qdisc{Kind: "fq_codel", Handle: "0:", Parent: ":1", Drops: 3}
	mq2 := Qdisc{Kind: "fq_codel", Handle: "0:", Parent: ":2", Drops: 4}
	pol := Policer{Direction: "ingress", Parent: "ffff:fff2", Filter: "matchall", Index: 1, RateBps: 1e7, Action: "drop", Drops: 2, Overlimits: 2, Packets: 100, Bytes: 10000}
	before := &Snapshot{Iface: "eth0", Time: t0, MTU: 1500,
		Qdiscs:   []Qdisc{tbf, class, mq1, mq2},
		Policers: []Policer{pol},
		SNMP:     map[string]uint64{"Udp.RcvbufErrors": 5, "Udp.InDatagrams": 100, "Softnet.Dropped": 50, "Udp.MemErrors": 0},
	}
	with := func(q Qdisc, f func(*Qdisc)) Qdisc { f(&q); return q }
	withP := func(p Policer, f func(*Policer)) Policer { f(&p); return p }

	for _, tc := range []struct {
		name  string
		after *Snapshot
		want  *Delta
	}{{
		name: "counters move",
		after: &Snapshot{Iface: "eth0", Time: t0.Add(1500 * time.Millisecond), MTU: 1500,
			Qdiscs: []Qdisc{
				with(tbf, func(q *Qdisc) {
					q.Drops, q.Overlimits, q.SentBytes, q.SentPackets, q.Backlog, q.Qlen = 25, 5, 4000, 40, 0, 0
				}),
				with(class, func(q *Qdisc) { q.SentPackets = 9 }),
				mq1, with(mq2, func(q *Qdisc) { q.Drops = 6 }),
			},
			Policers: []Policer{withP(pol, func(p *Policer) { p.Drops, p.Overlimits, p.Packets, p.Bytes = 12, 12, 300, 30000 })},
			SNMP:     map[string]uint64{"Udp.RcvbufErrors": 9, "Udp.InDatagrams": 100, "Softnet.Dropped": 50, "Udp.MemErrors": 0, "Udp6.InErrors": 3},
		},
		want: &Delta{Iface: "eth0", Seconds: 1.5,
			// Udp6.InErrors was not in before: unknown, left out.
			SNMP: map[string]uint64{"Udp.RcvbufErrors": 4, "Udp.InDatagrams": 0, "Softnet.Dropped": 0, "Udp.MemErrors": 0},
			Qdiscs: []Qdisc{
				with(tbf, func(q *Qdisc) {
					q.Drops, q.Overlimits, q.SentBytes, q.SentPackets, q.Backlog, q.Qlen = 15, 0, 3000, 30, 0, 0
				}),
				with(class, func(q *Qdisc) { q.Drops, q.SentPackets = 0, 2 }),
				with(mq1, func(q *Qdisc) { q.Drops = 0 }), with(mq2, func(q *Qdisc) { q.Drops = 2 }),
			},
			Policers: []Policer{withP(pol, func(p *Policer) { p.Drops, p.Overlimits, p.Packets, p.Bytes = 10, 10, 200, 20000 })},
		},
	}, {
		name: "replaced, restarted, gone and new",
		after: &Snapshot{Iface: "eth0", Time: t0.Add(time.Second),
			Qdiscs: []Qdisc{
				// tbf replaced by a netem of the same handle.
				{Kind: "netem", Handle: "1:", Parent: "root", Drops: 1},
				// class recreated: its counters restarted.
				with(class, func(q *Qdisc) { q.Drops, q.SentPackets = 0, 3 }),
				mq1,
				// mq2 gone; a new qdisc came.
				{Kind: "pfifo", Handle: "10:", Parent: "1:10", Drops: 8},
			},
			Policers: []Policer{withP(pol, func(p *Policer) { p.Index = 2 })},
			SNMP:     map[string]uint64{"Udp.RcvbufErrors": 1, "Udp.InDatagrams": 150, "Softnet.Dropped": 20},
		},
		want: &Delta{Iface: "eth0", Seconds: 1,
			SNMP: map[string]uint64{"Udp.InDatagrams": 50},
			Qdiscs: []Qdisc{
				{Kind: "netem", Handle: "1:", Parent: "root", Drops: 1},
				with(class, func(q *Qdisc) { q.Drops, q.SentPackets = 0, 3 }),
				with(mq1, func(q *Qdisc) { q.Drops = 0 }),
				{Kind: "pfifo", Handle: "10:", Parent: "1:10", Drops: 8},
			},
			Policers: []Policer{withP(pol, func(p *Policer) { p.Index = 2 })},
			Resets: []string{"Softnet.Dropped", "Udp.RcvbufErrors",
				"qdisc netem 1: root", "class htb 1:10 parent 1:1", "qdisc fq_codel 0: parent :2 gone",
				"police ingress ffff:fff2 index 1 gone"},
		},
	}, {
		name: "another interface",
		after: &Snapshot{Iface: "eth1", Time: t0,
			Qdiscs: []Qdisc{tbf},
			SNMP:   map[string]uint64{"Udp.RcvbufErrors": 5},
		},
		want: &Delta{Iface: "eth1",
			SNMP:   map[string]uint64{"Udp.RcvbufErrors": 0},
			Qdiscs: []Qdisc{tbf},
			Resets: []string{"qdisc tbf 1: root gone", "class htb 1:10 parent 1:1 gone", "qdisc fq_codel 0: parent :1 gone",
				"qdisc fq_codel 0: parent :2 gone", "police ingress ffff:fff2 index 1 gone"},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := Diff(before, tc.after)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Diff (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeltaHelpers(t *testing.T) {
	s := &Snapshot{
		Qdiscs: []Qdisc{
			{Kind: "htb", Handle: "1:", Parent: "root"},
			{Kind: "htb", Handle: "1:10", Parent: "1:", Class: true, CeilBps: 8e7},
			{Kind: "fq_codel", Handle: "10:", Parent: "1:10", LimitPackets: 10240},
			{Kind: "cake", Handle: "20:", Parent: "1:20", RateBps: 1e8},
		},
		Sysctls: map[string]string{"net.core.rmem_max": "212992"},
	}
	if diff := cmp.Diff([]Qdisc{s.Qdiscs[1], s.Qdiscs[3]}, s.Shapers()); diff != "" {
		t.Errorf("Shapers (-want +got):\n%s", diff)
	}
	if got := s.Sysctl("net.core.rmem_max"); got != "212992" {
		t.Errorf("Sysctl(net.core.rmem_max) = %q", got)
	}
	if got := s.Sysctl("net.core.wmem_max"); got != "" {
		t.Errorf("Sysctl of one not read = %q, want empty", got)
	}
	d := &Delta{SNMP: map[string]uint64{"Udp.RcvbufErrors": 7}, Qdiscs: s.Qdiscs}
	if d.Get("Udp.RcvbufErrors") != 7 || d.Get("Udp6.RcvbufErrors") != 0 {
		t.Errorf("Get: %d, %d, want 7, 0", d.Get("Udp.RcvbufErrors"), d.Get("Udp6.RcvbufErrors"))
	}
	if len(d.Shapers()) != 2 {
		t.Errorf("Delta.Shapers: %v", d.Shapers())
	}
}

// Every field of every type crosses to the peer under a snake_case name,
// and comes back the same.
func TestJSON(t *testing.T) {
	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*(,omitempty)?$`)
	for _, v := range []any{Snapshot{}, Qdisc{}, Policer{}, Delta{}} {
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			f := rt.Field(i)
			if tag := f.Tag.Get("json"); !snake.MatchString(tag) {
				t.Errorf("%s.%s: json tag %q is not snake_case", rt.Name(), f.Name, tag)
			}
		}
	}
	s := &Snapshot{Iface: "eth0", Time: time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC), MTU: 9000,
		Qdiscs:   []Qdisc{{Kind: "tbf", Handle: "1:", Parent: "root", RateBps: 1e8, LimitBytes: 30000, BurstBytes: 32768, Drops: 3, Backlog: 1, Qlen: 2}},
		Policers: []Policer{{Direction: "egress", Parent: "ffff:fff3", Filter: "u32", Index: 4, RateBps: 1e6, BurstBytes: 10000, Action: "drop", Drops: 1}},
		SNMP:     map[string]uint64{"Udp.RcvbufErrors": math.MaxUint64},
		Sysctls:  map[string]string{"net.ipv4.tcp_rmem": "4096 131072 6291456"},
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Snapshot
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, &back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s\n%s", diff, b)
	}
}
