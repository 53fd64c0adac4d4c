package afxdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/blastnet/blast/engine"
)

// HeaderLen is the length of iperf3's UDP payload header that every frame
// carries first: seconds, microseconds (the send time) and the sequence
// number, each a big-endian uint32 (iperf3 without --udp-counters-64bit).
// Sequence numbers start at 1, as iperf3's do.
const HeaderLen = 12

// minFrame is the shortest Ethernet frame without its FCS; shorter
// templates are padded to it (the IP length says where the data ends).
const minFrame = 60

// TemplateConfig says what frames to build.
type TemplateConfig struct {
	SrcMAC, DstMAC net.HardwareAddr
	Src, Dst       netip.AddrPort
	// PayloadLen is the UDP payload length, at least HeaderLen.
	PayloadLen int
}

// Template is one Ethernet/IP/UDP frame built once with gopacket. A sender
// copies it into every TX frame at start and then, per datagram, patches
// only the iperf3 header and the UDP checksum (Patch).
type Template struct {
	Frame []byte
	// UDPOff and PayloadOff locate the UDP header and its payload.
	UDPOff, PayloadOff int
	// sum is the ones' complement sum the UDP checksum covers (pseudo
	// header, UDP header with a zero checksum, payload with a zero iperf3
	// header), not yet folded.
	sum uint32
}

// NewTemplate builds the frame c describes. The IPv4 header checksum is
// computed once (no field of it changes per datagram); the UDP checksum is
// computed for every datagram, incrementally (RFC 1624), also on IPv4.
func NewTemplate(c TemplateConfig) (*Template, error) {
	if c.PayloadLen < HeaderLen {
		return nil, fmt.Errorf("afxdp: datagrams of %d bytes: at least %d are needed for the sequence header", c.PayloadLen, HeaderLen)
	}
	if len(c.SrcMAC) != 6 || len(c.DstMAC) != 6 {
		return nil, errors.New("afxdp: frame template: source and destination MAC addresses needed")
	}
	src, dst := c.Src.Addr().Unmap(), c.Dst.Addr().Unmap()
	if src.Is4() != dst.Is4() {
		return nil, fmt.Errorf("afxdp: frame template: %v and %v are of different families", src, dst)
	}
	payload := make([]byte, c.PayloadLen)
	engine.Pattern(payload[HeaderLen:])
	eth := &layers.Ethernet{SrcMAC: c.SrcMAC, DstMAC: c.DstMAC}
	udp := &layers.UDP{SrcPort: layers.UDPPort(c.Src.Port()), DstPort: layers.UDPPort(c.Dst.Port())}
	var ip gopacket.SerializableLayer
	if src.Is4() {
		eth.EthernetType = layers.EthernetTypeIPv4
		ip4 := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP,
			Flags: layers.IPv4DontFragment, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
		udp.SetNetworkLayerForChecksum(ip4)
		ip = ip4
	} else {
		eth.EthernetType = layers.EthernetTypeIPv6
		ip6 := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP,
			SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
		udp.SetNetworkLayerForChecksum(ip6)
		ip = ip6
	}
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, eth, ip, udp, gopacket.Payload(payload)); err != nil {
		return nil, fmt.Errorf("afxdp: build frame template: %w", err)
	}
	b := buf.Bytes()
	t := &Template{UDPOff: 14 + 20}
	if !src.Is4() {
		t.UDPOff = 14 + 40
	}
	t.PayloadOff = t.UDPOff + 8
	frame := make([]byte, max(len(b), minFrame))
	copy(frame, b)
	t.Frame = frame

	// The checksum's sum: pseudo header, then the UDP header and payload
	// as built, with the checksum field taken out.
	udpLen := 8 + c.PayloadLen
	s := sum16(src.AsSlice(), 0)
	s = sum16(dst.AsSlice(), s)
	s += uint32(udpLen) + unix17
	seg := append([]byte(nil), b[t.UDPOff:t.UDPOff+udpLen]...)
	seg[6], seg[7] = 0, 0
	t.sum = sum16(seg, s)
	return t, nil
}

const unix17 = 17 // IPPROTO_UDP in the pseudo header

// Len is the frame length to put in a TX descriptor.
func (t *Template) Len() int { return len(t.Frame) }

// Patch writes the iperf3 header (sec, usec, seq) into frame, a copy of
// t.Frame, and the UDP checksum that goes with it.
func (t *Template) Patch(frame []byte, seq, sec, usec uint32) {
	h := frame[t.PayloadOff : t.PayloadOff+HeaderLen]
	binary.BigEndian.PutUint32(h[0:], sec)
	binary.BigEndian.PutUint32(h[4:], usec)
	binary.BigEndian.PutUint32(h[8:], seq)
	s := t.sum + sec>>16 + sec&0xffff + usec>>16 + usec&0xffff + seq>>16 + seq&0xffff
	c := ^fold(s)
	if c == 0 {
		c = 0xffff // 0 means "no checksum" in UDP
	}
	binary.BigEndian.PutUint16(frame[t.UDPOff+6:], c)
}

// sum16 adds b as big-endian 16-bit words to s (an odd last byte is
// padded with a zero).
func sum16(b []byte, s uint32) uint32 {
	for len(b) >= 2 {
		s += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	return s
}

// fold folds a 32-bit ones' complement sum to 16 bits.
func fold(s uint32) uint16 {
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// Checksum is the Internet checksum of b (RFC 1071): a header that carries
// a correct one checks to 0.
func Checksum(b []byte) uint16 { return ^fold(sum16(b, 0)) }

// Parsed is what a receiver reads from one frame.
type Parsed struct {
	Payload []byte
	Seq     uint32
	DstPort uint16
}

// ParseUDP finds the UDP payload of an Ethernet/IPv4 or IPv6 frame and the
// iperf3 sequence number in it (0 when the payload is shorter than the
// header). ok is false for anything else: another protocol, a fragment,
// a header or a datagram that does not fit the lengths it claims.
func ParseUDP(f []byte) (p Parsed, ok bool) {
	if len(f) < 14 {
		return p, false
	}
	var udp, end int // where the UDP header starts and the IP datagram ends
	switch binary.BigEndian.Uint16(f[12:]) {
	case 0x0800:
		// A header of at least its 5 words; neither more fragments to come
		// (MF) nor a fragment offset: a fragment is not a whole datagram.
		if len(f) < 14+20 || f[14]>>4 != 4 || f[14]&0xf < 5 || f[23] != unix17 ||
			binary.BigEndian.Uint16(f[20:])&0x3fff != 0 {
			return p, false
		}
		udp = 14 + int(f[14]&0xf)*4
		end = 14 + int(binary.BigEndian.Uint16(f[16:]))
	case 0x86dd:
		if len(f) < 14+40 || f[14]>>4 != 6 || f[20] != unix17 {
			return p, false
		}
		udp = 14 + 40
		end = udp + int(binary.BigEndian.Uint16(f[18:]))
	default:
		return p, false
	}
	// The IP length bounds the datagram; what follows it in the frame is
	// padding (a short frame is padded to 60 bytes).
	if end > len(f) || udp+8 > end {
		return p, false
	}
	n := int(binary.BigEndian.Uint16(f[udp+4:])) - 8
	if n < 0 || udp+8+n > end {
		return p, false
	}
	p.DstPort = binary.BigEndian.Uint16(f[udp+2:])
	p.Payload = f[udp+8 : udp+8+n]
	if n >= HeaderLen {
		p.Seq = binary.BigEndian.Uint32(p.Payload[8:])
	}
	return p, true
}
