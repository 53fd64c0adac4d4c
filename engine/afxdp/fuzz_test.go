package afxdp

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// FuzzParseUDP: the frames a receiver takes from its RX ring. Whatever a
// frame holds, ParseUDP never reads past it, and a frame it takes for
// UDP is one gopacket decodes the same way: an Ethernet frame of a whole
// (unfragmented) IPv4 or IPv6 datagram with that UDP payload and port.
func FuzzParseUDP(f *testing.F) {
	for _, c := range []struct {
		src, dst string
		n        int
	}{
		{"198.18.0.1:40000", "198.18.0.2:5001", 12},
		{"198.18.0.1:40000", "198.18.0.2:5001", 100},
		{"[2001:2::1]:40000", "[2001:2::2]:5001", 64},
		{"[2001:2::1]:40000", "[2001:2::2]:5001", 3},
	} {
		tp, err := NewTemplate(TemplateConfig{SrcMAC: macA, DstMAC: macB,
			Src: netip.MustParseAddrPort(c.src), Dst: netip.MustParseAddrPort(c.dst), PayloadLen: max(c.n, HeaderLen)})
		if err != nil {
			f.Fatal(err)
		}
		frame := append([]byte(nil), tp.Frame...)
		tp.Patch(frame, 7, 1, 2)
		f.Add(frame)
		f.Add(frame[:len(frame)-1])
	}
	// An IPv4 header of 4 bytes (IHL 1) and a later fragment: neither
	// carries a UDP header where ParseUDP would look.
	short := []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0,
		0x41, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 198, 18, 0, 1, 198, 18, 0, 2, 0x9c, 0x40, 0x13, 0x89, 0, 8, 0, 0}
	f.Add(short)
	frag := []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0,
		0x45, 0, 0, 28, 0, 0, 0, 0x10, 64, 17, 0, 0, 198, 18, 0, 1, 198, 18, 0, 2, 0x9c, 0x40, 0x13, 0x89, 0, 8, 0, 0}
	f.Add(frag)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, frame []byte) {
		in := append([]byte(nil), frame...)
		p, ok := ParseUDP(frame)
		if !bytes.Equal(in, frame) {
			t.Fatal("ParseUDP wrote to the frame")
		}
		var s Seq
		s.Add(p.Seq)
		if s.Lost() != 0 || s.Received != 1 {
			t.Fatalf("one sequence number counted as %+v", s)
		}
		if !ok {
			if p.Payload != nil || p.Seq != 0 || p.DstPort != 0 {
				t.Fatalf("a refused frame parsed as %+v", p)
			}
			return
		}
		// gopacket decodes the frame down to UDP and no further: its
		// decoder for what a UDP port suggests (DHCP for port 68, say)
		// would mark a frame truncated for a payload that is not DHCP,
		// which says nothing of the frame.
		var (
			eth     layers.Ethernet
			ip4     layers.IPv4
			ip6     layers.IPv6
			udp     layers.UDP
			decoded []gopacket.LayerType
		)
		// ParseUDP skips IPv4 options by the header's length and reads
		// none of them (the sender never sends any); gopacket checks
		// them, so it is shown them as no-operation options.
		seen := append([]byte(nil), frame...)
		if len(seen) >= 14+20 && binary.BigEndian.Uint16(seen[12:]) == 0x0800 {
			for i := 14 + 20; i < min(14+int(seen[14]&0xf)*4, len(seen)); i++ {
				seen[i] = 1
			}
		}
		parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &ip4, &ip6, &udp)
		err := parser.DecodeLayers(seen, &decoded)
		if len(decoded) == 0 || decoded[len(decoded)-1] != layers.LayerTypeUDP {
			t.Fatalf("ParseUDP took %x for UDP to port %d; gopacket finds no UDP in it (layers %v: %v)", frame, p.DstPort, decoded, err)
		}
		if uint16(udp.DstPort) != p.DstPort || !bytes.Equal(udp.Payload, p.Payload) {
			t.Fatalf("ParseUDP: port %d, payload %x; gopacket: port %d, payload %x", p.DstPort, p.Payload, udp.DstPort, udp.Payload)
		}
		if parser.Truncated {
			t.Fatalf("ParseUDP took %x, which gopacket finds truncated", frame)
		}
		var want uint32
		if len(p.Payload) >= HeaderLen {
			want = binary.BigEndian.Uint32(p.Payload[8:])
		}
		if p.Seq != want {
			t.Fatalf("sequence number %d, want %d", p.Seq, want)
		}
	})
}

// FuzzTemplate: the frames a sender builds, for any addresses, ports,
// payload length and header, parse back as what they were built from,
// with IPv4 and UDP checksums that check.
func FuzzTemplate(f *testing.F) {
	f.Add([]byte{198, 18, 0, 1}, []byte{198, 18, 0, 2}, uint16(40000), uint16(5001), uint16(18), uint32(1), uint32(2), uint32(3))
	f.Add(netip.MustParseAddr("2001:2::1").AsSlice(), netip.MustParseAddr("2001:2::2").AsSlice(), uint16(1), uint16(65535), uint16(1001), uint32(0xffffffff), uint32(0), uint32(999999))
	f.Add([]byte{0, 0, 0, 0}, []byte{255, 255, 255, 255}, uint16(0), uint16(0), uint16(12), uint32(0), uint32(0xffffffff), uint32(0xffffffff))
	f.Fuzz(func(t *testing.T, srcIP, dstIP []byte, sport, dport, n uint16, seq, sec, usec uint32) {
		src, ok1 := netip.AddrFromSlice(srcIP)
		dst, ok2 := netip.AddrFromSlice(dstIP)
		if !ok1 || !ok2 {
			return
		}
		n = n % 9000
		tp, err := NewTemplate(TemplateConfig{SrcMAC: macA, DstMAC: macB,
			Src: netip.AddrPortFrom(src, sport), Dst: netip.AddrPortFrom(dst, dport), PayloadLen: int(n)})
		if err != nil {
			if int(n) >= HeaderLen && src.Unmap().Is4() == dst.Unmap().Is4() {
				t.Fatalf("%v -> %v, %d bytes: %v", src, dst, n, err)
			}
			return
		}
		frame := append([]byte(nil), tp.Frame...)
		tp.Patch(frame, seq, sec, usec)
		p, ok := ParseUDP(frame)
		if !ok || p.DstPort != dport || p.Seq != seq || len(p.Payload) != int(n) {
			t.Fatalf("%v -> %v:%d, %d bytes, seq %d: parsed as %+v, %v", src, dst, dport, n, seq, p, ok)
		}
		if binary.BigEndian.Uint32(p.Payload) != sec || binary.BigEndian.Uint32(p.Payload[4:]) != usec {
			t.Fatalf("header %x, want sec %d usec %d", p.Payload[:HeaderLen], sec, usec)
		}
		// The UDP checksum over the pseudo header checks to 0.
		var ph []byte
		if src.Unmap().Is4() {
			if c := Checksum(frame[14:34]); c != 0 {
				t.Fatalf("IPv4 header checksum does not check: %#x", c)
			}
			ph = append(ph, frame[26:34]...)
		} else {
			ph = append(ph, frame[22:54]...)
		}
		seg := frame[tp.UDPOff : tp.PayloadOff+int(n)]
		ph = append(ph, 0, 17, byte(len(seg)>>8), byte(len(seg)))
		if c := Checksum(append(ph, seg...)); c != 0 {
			t.Fatalf("UDP checksum does not check: %#x", c)
		}
	})
}
