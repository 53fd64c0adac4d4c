// Package bpf holds blast's XDP program and its loader.
//
// The program (see [Instructions]) steers one UDP flow into AF_XDP sockets:
// an IPv4 or IPv6 UDP datagram whose destination port is the test's goes
// to the XSKMAP slot of the receive queue it arrived on; everything else
// (ARP, neighbour discovery, SSH, other ports, fragments, IP options,
// VLAN tags, truncated frames) goes on to the kernel's stack. It is written
// with cilium/ebpf's asm package, so building blast needs no C toolchain.
//
// The program is attached through a BPF link: the kernel detaches it when
// the link's file descriptor closes, which also happens when the process
// exits for any reason (Ctrl-C, SIGTERM, SIGKILL, a crash). Nothing stays
// attached after blast.
package bpf
