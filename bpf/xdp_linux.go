package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Offsets into struct xdp_md, the program's context.
const (
	mdData         = 0
	mdDataEnd      = 4
	mdRxQueueIndex = 16
)

// Offsets into the frame.
const (
	ethType   = 12 // EtherType
	ethLen    = 14
	ip4VerIHL = ethLen + 0 // version 4, header length 5 words: 0x45
	ip4Frag   = ethLen + 6 // flags and fragment offset
	ip4Proto  = ethLen + 9
	ip4DPort  = ethLen + 20 + 2 // UDP destination port behind a 20-byte header
	ip4ULen   = ethLen + 20 + 4 // UDP length
	ip4Min    = ethLen + 20 + 8
	ip6Next   = ethLen + 6 // next header
	ip6DPort  = ethLen + 40 + 2
	ip6ULen   = ethLen + 40 + 4
	ip6Min    = ethLen + 40 + 8
)

// be16 is the value a 16-bit load of the big-endian (network order) v
// yields on this machine: BPF loads in host byte order.
func be16(v uint16) int32 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return int32(binary.NativeEndian.Uint16(b[:]))
}

// Config says which datagrams the program steers.
type Config struct {
	// Port is the UDP destination port of the test's flow.
	Port uint16
	// Queues is the number of XSKMAP slots, one per receive queue.
	Queues int
	// PassMax passes datagrams of the flow with at most this many bytes
	// of payload to the kernel's stack (ttcp's 4-byte sentinels, so that
	// the flow's socket sees them); 0 passes none.
	PassMax int
	// PassFirst passes the flow's first datagram (beyond those of
	// PassMax) to the kernel's stack and redirects the rest, so that a
	// receiver waiting on its socket for the transmitter wakes up even
	// when the transmitter sends no start sentinel. The program keeps
	// the "seen" flag in its state map.
	PassFirst bool
}

// Instructions returns the XDP program that redirects UDP datagrams to
// c.Port into the XSKMAP whose file descriptor is xskMap, by receive
// queue, and passes every other frame to the kernel. stateMap is a
// one-slot array of a u32 "first datagram seen" flag, used when
// c.PassFirst is set. In C it reads:
//
//	if (data + 14 > data_end) return XDP_PASS;
//	switch (eth->h_proto) {
//	case htons(ETH_P_IP):   // IPv4 without options, not a later fragment
//		if (data + 42 > data_end || ip->ver_ihl != 0x45 ||
//		    (ip->frag_off & htons(0x1fff)) || ip->protocol != IPPROTO_UDP ||
//		    udp->dest != htons(port)) return XDP_PASS;
//		break;
//	case htons(ETH_P_IPV6): // UDP right behind the fixed header
//		if (data + 62 > data_end || ip6->nexthdr != IPPROTO_UDP ||
//		    udp->dest != htons(port)) return XDP_PASS;
//		break;
//	default:                // ARP, VLAN, everything else
//		return XDP_PASS;
//	}
//	if (ntohs(udp->len) <= 8 + pass_max) return XDP_PASS; // sentinels
//	if (pass_first) {
//		__u32 *seen = bpf_map_lookup_elem(&state, &zero);
//		if (seen && !*seen) { *seen = 1; return XDP_PASS; }
//	}
//	// An empty slot (no socket on this queue) passes the frame on too.
//	return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
func Instructions(c Config, xskMap, stateMap int) asm.Instructions {
	const pass = "pass"
	insns := asm.Instructions{
		// R6 = ctx, R2 = data, R3 = data_end.
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R1, mdData, asm.Word),
		asm.LoadMem(asm.R3, asm.R1, mdDataEnd, asm.Word),

		// The Ethernet header must be there to read its type.
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, ethLen),
		asm.JGT.Reg(asm.R4, asm.R3, pass),
		asm.LoadMem(asm.R5, asm.R2, ethType, asm.Half),
		asm.JEq.Imm(asm.R5, be16(unix.ETH_P_IPV6), "ipv6"),
		asm.JNE.Imm(asm.R5, be16(unix.ETH_P_IP), pass),

		// IPv4: a whole 20-byte header and a UDP header.
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, ip4Min),
		asm.JGT.Reg(asm.R4, asm.R3, pass),
		asm.LoadMem(asm.R5, asm.R2, ip4VerIHL, asm.Byte),
		asm.JNE.Imm(asm.R5, 0x45, pass),
		asm.LoadMem(asm.R5, asm.R2, ip4Frag, asm.Half),
		asm.And.Imm(asm.R5, be16(0x1fff)),
		asm.JNE.Imm(asm.R5, 0, pass), // a later fragment has no UDP header
		asm.LoadMem(asm.R5, asm.R2, ip4Proto, asm.Byte),
		asm.JNE.Imm(asm.R5, unix.IPPROTO_UDP, pass),
		asm.LoadMem(asm.R5, asm.R2, ip4DPort, asm.Half),
		asm.JNE.Imm(asm.R5, be16(c.Port), pass),
		asm.LoadMem(asm.R5, asm.R2, ip4ULen, asm.Half),
		asm.Ja.Label("matched"),

		// IPv6: the fixed 40-byte header, then UDP.
		asm.Mov.Reg(asm.R4, asm.R2).WithSymbol("ipv6"),
		asm.Add.Imm(asm.R4, ip6Min),
		asm.JGT.Reg(asm.R4, asm.R3, pass),
		asm.LoadMem(asm.R5, asm.R2, ip6Next, asm.Byte),
		asm.JNE.Imm(asm.R5, unix.IPPROTO_UDP, pass),
		asm.LoadMem(asm.R5, asm.R2, ip6DPort, asm.Half),
		asm.JNE.Imm(asm.R5, be16(c.Port), pass),
		asm.LoadMem(asm.R5, asm.R2, ip6ULen, asm.Half),

		// R5 = the UDP length field: sentinels go to the stack.
		asm.HostTo(asm.BE, asm.R5, asm.Half).WithSymbol("matched"),
		asm.JLE.Imm(asm.R5, int32(8+c.PassMax), pass),
	}
	if c.PassFirst {
		insns = append(insns,
			// R0 = bpf_map_lookup_elem(&state, &zero)
			asm.StoreImm(asm.R10, -4, 0, asm.Word),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, -4),
			asm.LoadMapPtr(asm.R1, stateMap),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "redirect"),
			asm.LoadMem(asm.R1, asm.R0, 0, asm.Word),
			asm.JNE.Imm(asm.R1, 0, "redirect"),
			asm.StoreImm(asm.R0, 0, 1, asm.Word),
			asm.Ja.Label(pass),
		)
	}
	return append(insns,
		// return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS)
		asm.LoadMem(asm.R2, asm.R6, mdRxQueueIndex, asm.Word).WithSymbol("redirect"),
		asm.LoadMapPtr(asm.R1, xskMap),
		asm.Mov.Imm(asm.R3, XDPPass),
		asm.FnRedirectMap.Call(),
		asm.Return(),

		asm.Mov.Imm(asm.R0, XDPPass).WithSymbol(pass),
		asm.Return(),
	)
}

// XDP actions, as the program returns them.
const (
	XDPAborted  = 0
	XDPDrop     = 1
	XDPPass     = 2
	XDPTx       = 3
	XDPRedirect = 4
)

// Mode says how the program was attached.
type Mode string

// The attach modes.
const (
	Native  Mode = "native"
	Generic Mode = "generic"
)

// Redirect is the loaded program, its XSKMAP and its state map, attached
// to at most one interface. Close releases all of it.
type Redirect struct {
	Map   *ebpf.Map
	State *ebpf.Map
	Prog  *ebpf.Program
	link  link.Link
}

// Load creates the XSKMAP with a slot per queue and loads the program
// that redirects every datagram to port.
func Load(port uint16, queues int) (*Redirect, error) {
	return LoadConfig(Config{Port: port, Queues: queues})
}

// LoadConfig creates the maps and loads the program c describes.
func LoadConfig(c Config) (_ *Redirect, err error) {
	r := &Redirect{}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	r.Map, err = ebpf.NewMap(&ebpf.MapSpec{Name: "blast_xsks", Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: uint32(max(c.Queues, 1))})
	if err != nil {
		return nil, fmt.Errorf("xdp: create XSKMAP: %w", privilege(err))
	}
	r.State, err = ebpf.NewMap(&ebpf.MapSpec{Name: "blast_state", Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		return nil, fmt.Errorf("xdp: create state map: %w", privilege(err))
	}
	r.Prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "blast_xsk", Type: ebpf.XDP, License: "GPL",
		Instructions: Instructions(c, r.Map.FD(), r.State.FD()),
	})
	if err != nil {
		return nil, fmt.Errorf("xdp: load program: %w", privilege(err))
	}
	return r, nil
}

// privilege says what to do about a refusal for want of privilege. The
// error wraps errors.ErrUnsupported: blast cannot use XDP as it runs.
func privilege(err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return fmt.Errorf("%w (needs CAP_BPF and CAP_NET_ADMIN: run as root or use --backend mmsg): %w", err, errors.ErrUnsupported)
	}
	return err
}

// Attach links the program to the interface: natively (in the driver)
// when the driver can, else in generic (skb) mode unless generic is false.
// It names the program already attached when there is one.
func (r *Redirect) Attach(ifindex int, generic bool) (Mode, error) {
	if r.link != nil {
		return "", errors.New("xdp: program already attached")
	}
	l, err := link.AttachXDP(link.XDPOptions{Program: r.Prog, Interface: ifindex, Flags: link.XDPDriverMode})
	mode := Native
	if err != nil && generic && !busy(err) && !errors.Is(err, unix.EPERM) {
		l, err = link.AttachXDP(link.XDPOptions{Program: r.Prog, Interface: ifindex, Flags: link.XDPGenericMode})
		mode = Generic
	}
	if err != nil {
		name := fmt.Sprint("ifindex ", ifindex)
		if lk, lerr := netlink.LinkByIndex(ifindex); lerr == nil {
			name = lk.Attrs().Name
			if x := lk.Attrs().Xdp; busy(err) && x != nil && x.ProgId != 0 {
				return "", fmt.Errorf("xdp: attach to %s: XDP program id %d is already attached (see `bpftool prog show id %d`; detach it or use another backend): %w", name, x.ProgId, x.ProgId, err)
			}
		}
		return "", fmt.Errorf("xdp: attach to %s: %w", name, privilege(err))
	}
	r.link = l
	return mode, nil
}

func busy(err error) bool { return errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EEXIST) }

// Register puts the AF_XDP socket fd into the slot of queue.
func (r *Redirect) Register(queue, fd int) error {
	if err := r.Map.Put(uint32(queue), uint32(fd)); err != nil {
		return fmt.Errorf("xdp: put socket of queue %d into the XSKMAP: %w", queue, err)
	}
	return nil
}

// Close detaches the program and frees it and its map.
func (r *Redirect) Close() error {
	var errs []error
	if r.link != nil {
		errs = append(errs, r.link.Close())
		r.link = nil
	}
	if r.Prog != nil {
		errs = append(errs, r.Prog.Close())
	}
	if r.State != nil {
		errs = append(errs, r.State.Close())
	}
	if r.Map != nil {
		errs = append(errs, r.Map.Close())
	}
	return errors.Join(errs...)
}
