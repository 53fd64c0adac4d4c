package bpf_test

import (
	"net"
	"net/netip"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/blastnet/blast/bpf"
	"github.com/blastnet/blast/engine/afxdp"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

const port = 5001

var (
	macA = net.HardwareAddr{0x02, 0, 0, 0, 0, 1}
	macB = net.HardwareAddr{0x02, 0, 0, 0, 0, 2}
)

func udpFrame(t *testing.T, src, dst string) []byte {
	t.Helper()
	return udpFrameTemplate(t, src, dst, 64)
}

// udpFrameLen builds a UDP frame with payload bytes of payload, which
// may be shorter than the sequence header afxdp's template needs.
func udpFrameLen(t *testing.T, src, dst string, payload int) []byte {
	t.Helper()
	s, d := netip.MustParseAddrPort(src), netip.MustParseAddrPort(dst)
	eth := &layers.Ethernet{SrcMAC: macA, DstMAC: macB, EthernetType: layers.EthernetTypeIPv4}
	udp := &layers.UDP{SrcPort: layers.UDPPort(s.Port()), DstPort: layers.UDPPort(d.Port())}
	var ip gopacket.SerializableLayer
	if s.Addr().Is4() {
		ip4 := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: s.Addr().AsSlice(), DstIP: d.Addr().AsSlice()}
		udp.SetNetworkLayerForChecksum(ip4)
		ip = ip4
	} else {
		eth.EthernetType = layers.EthernetTypeIPv6
		ip6 := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP, SrcIP: s.Addr().AsSlice(), DstIP: d.Addr().AsSlice()}
		udp.SetNetworkLayerForChecksum(ip6)
		ip = ip6
	}
	buf := gopacket.NewSerializeBuffer()
	err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ip, udp, gopacket.Payload(make([]byte, payload)))
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func udpFrameTemplate(t *testing.T, src, dst string, payload int) []byte {
	t.Helper()
	tp, err := afxdp.NewTemplate(afxdp.TemplateConfig{SrcMAC: macA, DstMAC: macB,
		Src: netip.MustParseAddrPort(src), Dst: netip.MustParseAddrPort(dst), PayloadLen: payload})
	if err != nil {
		t.Fatal(err)
	}
	return tp.Frame
}

func arpFrame(t *testing.T) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true},
		&layers.Ethernet{SrcMAC: macA, DstMAC: layers.EthernetBroadcast, EthernetType: layers.EthernetTypeARP},
		&layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
			Operation: layers.ARPRequest, SourceHwAddress: macA, SourceProtAddress: []byte{198, 18, 0, 1},
			DstHwAddress: make([]byte, 6), DstProtAddress: []byte{198, 18, 0, 2}})
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestProgram runs the program through BPF_PROG_TEST_RUN on crafted
// frames. A redirect needs a bound AF_XDP socket in the map's slot, so
// one is bound to queue 0 of a lab interface (nothing is attached).
func TestProgram(t *testing.T) {
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	err := lab.A.Do(func() error {
		r, err := bpf.Load(port, 1)
		if err != nil {
			return err
		}
		defer r.Close()
		ifc, err := net.InterfaceByName(lab.A.Iface)
		if err != nil {
			return err
		}
		s, err := afxdp.Open(t.Context(), afxdp.SocketConfig{Ifindex: ifc.Index, Iface: lab.A.Iface, RX: true, RingSize: 64})
		if err != nil {
			return err
		}
		defer s.Close()
		if err := r.Register(0, s.FD()); err != nil {
			return err
		}
		v4 := udpFrame(t, "198.18.0.1:40000", "198.18.0.2:5001")
		ipOpts := append([]byte(nil), v4...)
		ipOpts[14] = 0x46 // a header with options
		frag := append([]byte(nil), v4...)
		frag[20] = 0x20 | 0x01 // more fragments, offset 256: a later fragment
		tests := []struct {
			name  string
			frame []byte
			want  uint32
		}{
			{"udp4 to port", v4, bpf.XDPRedirect},
			{"udp6 to port", udpFrame(t, "[2001:2::1]:40000", "[2001:2::2]:5001"), bpf.XDPRedirect},
			{"udp4 other port", udpFrame(t, "198.18.0.1:40000", "198.18.0.2:5002"), bpf.XDPPass},
			{"udp6 other port", udpFrame(t, "[2001:2::1]:5001", "[2001:2::2]:22"), bpf.XDPPass},
			{"udp4 from port", udpFrame(t, "198.18.0.1:5001", "198.18.0.2:40000"), bpf.XDPPass},
			{"arp", arpFrame(t), bpf.XDPPass},
			{"ip options", ipOpts, bpf.XDPPass},
			{"later fragment", frag, bpf.XDPPass},
			{"truncated udp4", v4[:40], bpf.XDPPass},
			{"truncated ethernet", v4[:14], bpf.XDPPass},
		}
		for _, tt := range tests {
			got, err := r.Prog.Run(&ebpf.RunOptions{Data: tt.frame})
			if err != nil {
				t.Errorf("%s: run: %v", tt.name, err)
				continue
			}
			if got != tt.want {
				t.Errorf("%s: action %d, want %d", tt.name, got, tt.want)
			}
		}
		// An empty slot (queue 1 has no socket) passes.
		r2, err := bpf.Load(port, 2)
		if err != nil {
			return err
		}
		defer r2.Close()
		got, err := r2.Prog.Run(&ebpf.RunOptions{Data: v4})
		if err != nil {
			return err
		}
		if got != bpf.XDPPass {
			t.Errorf("empty slot: action %d, want pass", got)
		}

		// Sentinels and the first datagram go to the stack, the rest to
		// the socket.
		r3, err := bpf.LoadConfig(bpf.Config{Port: port, Queues: 1, PassMax: 4, PassFirst: true})
		if err != nil {
			return err
		}
		defer r3.Close()
		if err := r3.Register(0, s.FD()); err != nil {
			return err
		}
		steps := []struct {
			name  string
			frame []byte
			want  uint32
		}{
			{"start sentinel", udpFrameLen(t, "198.18.0.1:40000", "198.18.0.2:5001", 4), bpf.XDPPass},
			{"first datagram", v4, bpf.XDPPass},
			{"second datagram", v4, bpf.XDPRedirect},
			{"5-byte datagram", udpFrameLen(t, "198.18.0.1:40000", "198.18.0.2:5001", 5), bpf.XDPRedirect},
			{"end sentinel v6", udpFrameLen(t, "[2001:2::1]:40000", "[2001:2::2]:5001", 4), bpf.XDPPass},
			{"third datagram v6", udpFrame(t, "[2001:2::1]:40000", "[2001:2::2]:5001"), bpf.XDPRedirect},
			{"other port", udpFrame(t, "198.18.0.1:40000", "198.18.0.2:5002"), bpf.XDPPass},
		}
		for _, st := range steps {
			got, err := r3.Prog.Run(&ebpf.RunOptions{Data: st.frame})
			if err != nil {
				t.Errorf("%s: run: %v", st.name, err)
				continue
			}
			if got != st.want {
				t.Errorf("%s: action %d, want %d", st.name, got, st.want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
