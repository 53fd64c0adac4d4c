package pathinfo

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// nla lays out a netlink attribute as the kernel does: header, payload,
// padding to 4 bytes.
func nla(typ uint16, payload []byte) []byte {
	b := make([]byte, 4, 4+len(payload)+3)
	binary.NativeEndian.PutUint16(b, uint16(4+len(payload)))
	binary.NativeEndian.PutUint16(b[2:], typ)
	b = append(b, payload...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func u32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }
func u64(v uint64) []byte { return binary.NativeEndian.AppendUint64(nil, v) }

func cat(bs ...[]byte) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

// cakeOptions lays out TCA_OPTIONS as cake_dump writes them: the rate (a
// u64 after a pad attribute that aligns it), then u32 settings.
func cakeOptions(rate uint64, memory uint32) []byte {
	return cat(
		nla(1, nil), // TCA_CAKE_PAD
		nla(cakeBaseRate64, u64(rate)),
		nla(5, u32(3)),      // TCA_CAKE_FLOW_MODE: triple-isolate
		nla(7, u32(100000)), // TCA_CAKE_RTT
		nla(8, u32(5000)),   // TCA_CAKE_TARGET
		nla(9, u32(0)),      // TCA_CAKE_AUTORATE
		nla(cakeMemory, u32(memory)),
		nla(3, u32(1)), // TCA_CAKE_DIFFSERV_MODE
		nla(4, u32(0)), // TCA_CAKE_ATM
	)
}

// hfscCurve is a struct tc_service_curve.
func hfscCurve(m1, d, m2 uint32) []byte { return cat(u32(m1), u32(d), u32(m2)) }

func TestQdiscOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Qdisc
		opts []byte
		want Qdisc
		err  string
	}{
		{"cake bandwidth 100mbit", Qdisc{Kind: "cake"}, cakeOptions(12_500_000, 0),
			Qdisc{Kind: "cake", RateBps: 100_000_000}, ""},
		{"cake unlimited memlimit 4mb", Qdisc{Kind: "cake"}, cakeOptions(0, 4<<20),
			Qdisc{Kind: "cake", LimitBytes: 4 << 20}, ""},
		{"cake 40gbit", Qdisc{Kind: "cake"}, cakeOptions(5_000_000_000, 0),
			Qdisc{Kind: "cake", RateBps: 40_000_000_000}, ""},
		{"cake short rate ignored", Qdisc{Kind: "cake"}, nla(cakeBaseRate64, u32(7)), Qdisc{Kind: "cake"}, ""},
		{"cake truncated", Qdisc{Kind: "cake"}, cakeOptions(1, 0)[:10], Qdisc{Kind: "cake"},
			"cake options: attribute runs past the end: length 12 with 6 bytes left"},
		{"bfifo limit 5000", Qdisc{Kind: "bfifo"}, u32(5000), Qdisc{Kind: "bfifo", LimitBytes: 5000}, ""},
		{"pfifo limit 7", Qdisc{Kind: "pfifo"}, u32(7), Qdisc{Kind: "pfifo", LimitPackets: 7}, ""},
		{"pfifo_head_drop", Qdisc{Kind: "pfifo_head_drop"}, u32(9), Qdisc{Kind: "pfifo_head_drop", LimitPackets: 9}, ""},
		{"pfifo short", Qdisc{Kind: "pfifo"}, []byte{1}, Qdisc{Kind: "pfifo"}, "pfifo options: 1 bytes, want 4"},
		{"other kinds untouched", Qdisc{Kind: "noqueue"}, u32(7), Qdisc{Kind: "noqueue"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.in
			err := applyQdiscOptions(&got, tc.opts)
			checkErr(t, err, tc.err)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestClassOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Qdisc
		opts []byte
		want Qdisc
		err  string
	}{
		// tc class add ... hfsc sc rate 50mbit ul rate 80mbit
		{"sc and ul", Qdisc{Kind: "hfsc", Class: true},
			cat(nla(hfscRSC, hfscCurve(0, 0, 6_250_000)), nla(2, hfscCurve(0, 0, 6_250_000)), nla(hfscUSC, hfscCurve(0, 0, 10_000_000))),
			Qdisc{Kind: "hfsc", Class: true, RateBps: 50_000_000, CeilBps: 80_000_000}, ""},
		// ls only: a share of the parent, no rate.
		{"ls only", Qdisc{Kind: "hfsc", Class: true}, nla(2, hfscCurve(0, 0, 6_250_000)),
			Qdisc{Kind: "hfsc", Class: true}, ""},
		// 10 Gbit/s: more than 32 bits of bit/s.
		{"ul 10gbit", Qdisc{Kind: "hfsc", Class: true}, nla(hfscUSC, hfscCurve(0, 0, 1_250_000_000)),
			Qdisc{Kind: "hfsc", Class: true, CeilBps: 10_000_000_000}, ""},
		{"short curve ignored", Qdisc{Kind: "hfsc", Class: true}, nla(hfscUSC, u32(1)), Qdisc{Kind: "hfsc", Class: true}, ""},
		{"bad attribute", Qdisc{Kind: "hfsc", Class: true}, []byte{2, 0, 1, 0}, Qdisc{Kind: "hfsc", Class: true},
			"hfsc options: attribute runs past the end: length 2"},
		{"htb untouched", Qdisc{Kind: "htb", Class: true}, nla(hfscUSC, hfscCurve(0, 0, 1)), Qdisc{Kind: "htb", Class: true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.in
			err := applyClassOptions(&got, tc.opts)
			checkErr(t, err, tc.err)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("error %v", err)
	case want != "" && (err == nil || len(err.Error()) < len(want) || err.Error()[:len(want)] != want):
		t.Fatalf("error %v, want one starting %q", err, want)
	}
}

func TestParseAttrs(t *testing.T) {
	// Flags in the type are stripped; the last attribute may lack padding.
	in := cat(nla(0x8000|2, u32(1)), nla(0x4000|3, []byte{9}))[:13]
	got, err := parseAttrs(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []attr{{2, u32(1)}, {3, []byte{9}}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(attr{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, bad := range [][]byte{{3, 0, 1, 0}, {9, 0, 1, 0, 0}} {
		if _, err := parseAttrs(bad); !errors.Is(err, errTruncated) {
			t.Errorf("parseAttrs(%v): %v, want errTruncated", bad, err)
		}
	}
}
