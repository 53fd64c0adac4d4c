package verifytest

import (
	"net"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"

	"github.com/blastnet/blast/netlab"
)

// Protocols Corrupt knows: IP protocol numbers.
const (
	TCP = 6
	UDP = 17
)

// PayloadOffset is where in a packet's TCP or UDP payload the flipped
// byte is: a packet with a shorter payload is left alone (UDP sentinels,
// pure ACKs). The byte is XORed with 0xff.
const PayloadOffset = 100

// Plant says which packets Corrupt damages.
type Plant struct {
	// Proto is TCP or UDP.
	Proto int
	// Every: about one packet in Every, chosen at random, is damaged (a
	// power of two; 1: all of them).
	Every uint32
	// Port, when not 0, limits the plant to packets from or to this TCP
	// or UDP port (to spare a control connection, say).
	Port int
}

// Corrupt attaches to the egress of h's lab interface a program that
// flips the byte at PayloadOffset of the payload of IPv4 packets as p
// says, in packets that carry that much (IP fragments are left alone),
// and fixes their checksum. It returns how many packets it corrupted so
// far. The program is removed when tb ends. It needs root; the caller has
// made the lab.
func Corrupt(tb testing.TB, h *netlab.Host, p Plant) (count func() uint64) {
	tb.Helper()
	if p.Every == 0 || p.Every&(p.Every-1) != 0 {
		tb.Fatalf("verifytest.Corrupt: every %d is not a power of two", p.Every)
	}
	if p.Proto != TCP && p.Proto != UDP {
		tb.Fatalf("verifytest.Corrupt: protocol %d: TCP (6) or UDP (17)", p.Proto)
	}
	if p.Port < 0 || p.Port > 65535 {
		tb.Fatalf("verifytest.Corrupt: port %d", p.Port)
	}
	counter, err := ebpf.NewMap(&ebpf.MapSpec{Name: "corrupted", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		tb.Fatalf("verifytest: counter map: %v", err)
	}
	tb.Cleanup(func() { counter.Close() })
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "corrupt", Type: ebpf.SchedCLS, License: "GPL",
		Instructions: program(p, counter.FD())})
	if err != nil {
		tb.Fatalf("verifytest: load the corrupting program: %v", err)
	}
	tb.Cleanup(func() { prog.Close() })
	var l link.Link
	err = h.Do(func() error {
		ifc, err := net.InterfaceByName(h.Iface)
		if err != nil {
			return err
		}
		l, err = link.AttachTCX(link.TCXOptions{Interface: ifc.Index, Program: prog, Attach: ebpf.AttachTCXEgress})
		return err
	})
	if err != nil {
		tb.Fatalf("verifytest: attach to %s in %s: %v", h.Iface, h.Name, err)
	}
	tb.Cleanup(func() { l.Close() })
	return func() uint64 {
		var n uint64
		if err := counter.Lookup(uint32(0), &n); err != nil {
			tb.Errorf("verifytest: read the count: %v", err)
		}
		return n
	}
}

// BPF_F_MARK_MANGLED_0: a UDP checksum that comes out 0 is written as
// 0xffff (0 means "none").
const markMangled0 = 1 << 5

// program is the tc program: IPv4, the protocol, not a fragment, the
// port, a payload of more than PayloadOffset+2 bytes, one chance in
// Every; then flip the byte, fix the L4 checksum, count.
func program(p Plant, counter int) asm.Instructions {
	const (
		ethLen = 14
		out    = "out"
	)
	l4hdr := asm.Instructions{asm.Mov.Imm(asm.R9, 8)} // UDP
	csumOff, flags := int32(6), int64(2|markMangled0)
	if p.Proto == TCP {
		l4hdr = asm.Instructions{
			asm.LoadInd(asm.R0, asm.R7, ethLen+12, asm.Byte), // data offset
			asm.RSh.Imm(asm.R0, 4),
			asm.LSh.Imm(asm.R0, 2),
			asm.Mov.Reg(asm.R9, asm.R0),
		}
		csumOff, flags = 16, 2
	}
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1), // the skb, for LD_ABS and the helpers
		asm.LoadAbs(12, asm.Half),
		asm.JNE.Imm(asm.R0, 0x0800, out),
		asm.LoadAbs(ethLen+9, asm.Byte),
		asm.JNE.Imm(asm.R0, int32(p.Proto), out),
		asm.LoadAbs(ethLen+6, asm.Half), // a fragment has no L4 header where we look
		asm.And.Imm(asm.R0, 0x3fff),
		asm.JNE.Imm(asm.R0, 0, out),
		asm.LoadAbs(ethLen, asm.Byte),
		asm.And.Imm(asm.R0, 0x0f),
		asm.LSh.Imm(asm.R0, 2),
		asm.Mov.Reg(asm.R7, asm.R0), // IP header length
		asm.LoadAbs(ethLen+2, asm.Half),
		asm.Mov.Reg(asm.R8, asm.R0), // IP total length
	}
	if p.Port != 0 {
		insns = append(insns,
			asm.LoadInd(asm.R0, asm.R7, ethLen, asm.Half), // source port
			asm.JEq.Imm(asm.R0, int32(p.Port), "port"),
			asm.LoadInd(asm.R0, asm.R7, ethLen+2, asm.Half), // destination port
			asm.JNE.Imm(asm.R0, int32(p.Port), out),
			asm.Mov.Imm(asm.R0, 0).WithSymbol("port"),
		)
	}
	insns = append(insns, l4hdr...)
	insns = append(insns,
		asm.Add.Reg(asm.R9, asm.R7), // payload start, from the IP header
		asm.Mov.Reg(asm.R1, asm.R9),
		asm.Add.Imm(asm.R1, PayloadOffset+2),
		asm.JGT.Reg(asm.R1, asm.R8, out),
		asm.FnGetPrandomU32.Call(),
		asm.And.Imm(asm.R0, int32(p.Every-1)),
		asm.JNE.Imm(asm.R0, 0, out),
		asm.Add.Imm(asm.R9, ethLen+PayloadOffset), // the flipped word, from the frame's start
		// old word -> fp-8
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Reg(asm.R2, asm.R9),
		asm.Mov.Reg(asm.R3, asm.R10),
		asm.Add.Imm(asm.R3, -8),
		asm.Mov.Imm(asm.R4, 2),
		asm.FnSkbLoadBytes.Call(),
		asm.JNE.Imm(asm.R0, 0, out),
		asm.LoadMem(asm.R8, asm.R10, -8, asm.Half),
		// new word (first byte flipped) -> fp-16, and into the packet
		asm.Mov.Reg(asm.R0, asm.R8),
		asm.Xor.Imm(asm.R0, 0xff),
		asm.StoreMem(asm.R10, -16, asm.R0, asm.Half),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Reg(asm.R2, asm.R9),
		asm.Mov.Reg(asm.R3, asm.R10),
		asm.Add.Imm(asm.R3, -16),
		asm.Mov.Imm(asm.R4, 2),
		asm.Mov.Imm(asm.R5, 0),
		asm.FnSkbStoreBytes.Call(),
		asm.JNE.Imm(asm.R0, 0, out),
		// the checksum
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, ethLen+csumOff),
		asm.Mov.Reg(asm.R3, asm.R8),
		asm.LoadMem(asm.R4, asm.R10, -16, asm.Half),
		asm.Mov.Imm(asm.R5, int32(flags)),
		asm.FnL4CsumReplace.Call(),
		// count
		asm.StoreImm(asm.R10, -4, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, counter),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, out),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol(out), // TC_ACT_OK
		asm.Return(),
	)
	return insns
}
