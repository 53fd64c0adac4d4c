package afxdp

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

var (
	macA = net.HardwareAddr{0x02, 0, 0, 0, 0, 1}
	macB = net.HardwareAddr{0x02, 0, 0, 0, 0, 2}
)

func TestTemplateDecodes(t *testing.T) {
	tests := []struct {
		name     string
		src, dst string
		payload  int
	}{
		{"ipv4 min", "198.18.0.1:40000", "198.18.0.2:5001", 18},
		{"ipv4 short padded", "198.18.0.1:40000", "198.18.0.2:5001", 12},
		{"ipv4 1472", "198.18.0.1:40000", "198.18.0.2:5001", 1472},
		{"ipv4 odd", "198.18.0.1:40000", "198.18.0.2:5001", 101},
		{"ipv6", "[2001:2::1]:40000", "[2001:2::2]:5001", 64},
		{"ipv6 odd", "[2001:2::1]:40000", "[2001:2::2]:5001", 1001},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, dst := netip.MustParseAddrPort(tt.src), netip.MustParseAddrPort(tt.dst)
			tp, err := NewTemplate(TemplateConfig{SrcMAC: macA, DstMAC: macB, Src: src, Dst: dst, PayloadLen: tt.payload})
			if err != nil {
				t.Fatal(err)
			}
			if tp.Len() < minFrame {
				t.Errorf("frame of %d bytes, want at least %d", tp.Len(), minFrame)
			}
			frame := append([]byte(nil), tp.Frame...)
			for _, seq := range []uint32{1, 2, 0xffff, 0x12345678, 0xffffffff} {
				tp.Patch(frame, seq, 1700000000, 999999)
				pkt := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
				if el := pkt.ErrorLayer(); el != nil {
					t.Fatalf("decode: %v", el.Error())
				}
				eth := pkt.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
				udp, _ := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP)
				if udp == nil {
					t.Fatal("no UDP layer")
				}
				if diff := cmp.Diff(macB.String(), eth.DstMAC.String()); diff != "" {
					t.Errorf("dst MAC (-want +got):\n%s", diff)
				}
				if udp.SrcPort != layers.UDPPort(src.Port()) || udp.DstPort != layers.UDPPort(dst.Port()) {
					t.Errorf("ports %d -> %d", udp.SrcPort, udp.DstPort)
				}
				if len(udp.Payload) != tt.payload {
					t.Errorf("payload %d bytes, want %d", len(udp.Payload), tt.payload)
				}
				hdr := udp.Payload[:HeaderLen]
				if got := binary.BigEndian.Uint32(hdr[8:]); got != seq {
					t.Errorf("seq %d, want %d", got, seq)
				}
				if got := binary.BigEndian.Uint32(hdr[0:]); got != 1700000000 {
					t.Errorf("sec %d", got)
				}
				// The checksum gopacket computes for the same packet.
				var ip gopacket.NetworkLayer
				if l4, ok := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4); ok {
					ip = l4
					if c := Checksum(frame[14:34]); c != 0 {
						t.Errorf("IPv4 header checksum does not check: %#x", c)
					}
					if int(l4.Length) != 20+8+tt.payload {
						t.Errorf("IPv4 length %d", l4.Length)
					}
				} else {
					ip = pkt.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
				}
				want := udp.Checksum
				u2 := *udp
				u2.SetNetworkLayerForChecksum(ip)
				buf := gopacket.NewSerializeBuffer()
				if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{ComputeChecksums: true}, &u2, gopacket.Payload(udp.Payload)); err != nil {
					t.Fatal(err)
				}
				got := binary.BigEndian.Uint16(buf.Bytes()[6:])
				if got == 0 {
					got = 0xffff
				}
				if got != want {
					t.Errorf("seq %d: UDP checksum %#04x, gopacket computes %#04x", seq, want, got)
				}
				p, ok := ParseUDP(frame)
				if !ok || p.Seq != seq || p.DstPort != dst.Port() || len(p.Payload) != tt.payload {
					t.Errorf("ParseUDP = %+v %v", p, ok)
				}
			}
		})
	}
}

func TestChecksum(t *testing.T) {
	// RFC 1071's example: the sum of these words is 0xddf2, the checksum
	// its complement.
	b := []byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}
	if got := Checksum(b); got != ^uint16(0xddf2) {
		t.Errorf("Checksum = %#04x, want %#04x", got, ^uint16(0xddf2))
	}
	// A header with its checksum in place checks to zero.
	h := []byte{0x45, 0, 0, 0x73, 0, 0, 0x40, 0, 0x40, 0x11, 0, 0, 0xc0, 0xa8, 0, 1, 0xc0, 0xa8, 0, 0xc7}
	binary.BigEndian.PutUint16(h[10:], Checksum(h))
	if binary.BigEndian.Uint16(h[10:]) != 0xb861 {
		t.Errorf("IPv4 checksum %#04x, want 0xb861", binary.BigEndian.Uint16(h[10:]))
	}
	if Checksum(h) != 0 {
		t.Error("header with checksum does not check to 0")
	}
}

func TestTemplateErrors(t *testing.T) {
	a4, a6 := netip.MustParseAddrPort("198.18.0.1:1"), netip.MustParseAddrPort("[2001:2::2]:2")
	for _, c := range []TemplateConfig{
		{SrcMAC: macA, DstMAC: macB, Src: a4, Dst: a4, PayloadLen: 4},
		{SrcMAC: macA, Src: a4, Dst: a4, PayloadLen: 64},
		{SrcMAC: macA, DstMAC: macB, Src: a4, Dst: a6, PayloadLen: 64},
	} {
		if _, err := NewTemplate(c); err == nil {
			t.Errorf("NewTemplate(%+v) succeeded", c)
		}
	}
}

func TestSeq(t *testing.T) {
	var a, b Seq
	for _, s := range []uint32{1, 2, 4, 3, 6} {
		a.Add(s)
	}
	for _, s := range []uint32{7, 9} {
		b.Add(s)
	}
	m := Merge(a, b)
	got := []int64{m.Received, m.Lost(), m.Reordered}
	if diff := cmp.Diff([]int64{7, 2, 1}, got); diff != "" {
		t.Errorf("received, lost, reordered (-want +got):\n%s", diff)
	}
}
