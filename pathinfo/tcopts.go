package pathinfo

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The options of the schedulers vishvananda/netlink v1.3.1 does not decode
// (it returns them as GenericQdisc or, for hfsc, computes the rates in 32
// bits, so that rates over 4.29 Gbit/s wrap). These read TCA_OPTIONS as the
// kernel dumps it, in the kernel's byte order.

// Attribute numbers from include/uapi/linux/pkt_sched.h.
const (
	cakeBaseRate64 = 2  // TCA_CAKE_BASE_RATE64: u64 bytes/s, 0 unlimited
	cakeMemory     = 10 // TCA_CAKE_MEMORY: u32 bytes, 0 automatic
	hfscRSC        = 1  // TCA_HFSC_RSC: real-time (guaranteed) curve
	hfscUSC        = 3  // TCA_HFSC_USC: upper-limit curve
)

// attr is one netlink attribute.
type attr struct {
	typ  uint16
	data []byte
}

var errTruncated = errors.New("attribute runs past the end")

// parseAttrs splits b into netlink attributes (struct nlattr, each padded
// to 4 bytes), the nested and byte-order flags stripped from the type.
func parseAttrs(b []byte) ([]attr, error) {
	var out []attr
	for len(b) >= 4 {
		n := int(binary.NativeEndian.Uint16(b))
		typ := binary.NativeEndian.Uint16(b[2:]) & 0x3fff // NLA_TYPE_MASK
		if n < 4 || n > len(b) {
			return nil, fmt.Errorf("%w: length %d with %d bytes left", errTruncated, n, len(b))
		}
		out = append(out, attr{typ, b[4:n]})
		n = (n + 3) &^ 3
		if n > len(b) {
			n = len(b)
		}
		b = b[n:]
	}
	return out, nil
}

// applyQdiscOptions fills what q's kind keeps in opts (TCA_OPTIONS) for the
// kinds the netlink library leaves undecoded: cake, bfifo, pfifo,
// pfifo_head_drop.
//
// Cake is untested against a kernel here: the test kernel has no sch_cake
// (CONFIG_NET_SCH_CAKE is off), so its tests use attributes built by hand
// in the layout of cake_dump.
func applyQdiscOptions(q *Qdisc, opts []byte) error {
	switch q.Kind {
	case "cake":
		as, err := parseAttrs(opts)
		if err != nil {
			return fmt.Errorf("cake options: %w", err)
		}
		for _, a := range as {
			switch {
			case a.typ == cakeBaseRate64 && len(a.data) >= 8:
				q.RateBps = bitRate(binary.NativeEndian.Uint64(a.data))
			case a.typ == cakeMemory && len(a.data) >= 4:
				q.LimitBytes = uint64(binary.NativeEndian.Uint32(a.data))
			}
		}
	case "bfifo", "pfifo", "pfifo_head_drop":
		// struct tc_fifo_qopt { __u32 limit; }, bytes for bfifo.
		if len(opts) < 4 {
			return fmt.Errorf("%s options: %d bytes, want 4", q.Kind, len(opts))
		}
		limit := uint64(binary.NativeEndian.Uint32(opts))
		if q.Kind == "bfifo" {
			q.LimitBytes = limit
		} else {
			q.LimitPackets = limit
		}
	}
	return nil
}

// applyClassOptions fills the rates of an hfsc class from its service
// curves (struct tc_service_curve { __u32 m1, d, m2; }, m in bytes/s):
// RateBps from the real-time curve (the guaranteed rate, like an htb
// class's rate), CeilBps from the upper limit; the link-sharing curve is a
// share of the parent, no rate. Only m2, the long-term slope, counts.
// Untested against a kernel here: the test kernel has no sch_hfsc.
func applyClassOptions(q *Qdisc, opts []byte) error {
	if q.Kind != "hfsc" {
		return nil
	}
	as, err := parseAttrs(opts)
	if err != nil {
		return fmt.Errorf("hfsc options: %w", err)
	}
	for _, a := range as {
		if len(a.data) < 12 {
			continue
		}
		m2 := bitRate(uint64(binary.NativeEndian.Uint32(a.data[8:])))
		switch a.typ {
		case hfscRSC:
			q.RateBps = m2
		case hfscUSC:
			q.CeilBps = m2
		}
	}
	return nil
}
