// Package afxdp is blast's AF_XDP backend, "afxdp": UDP datagrams built
// as whole Ethernet frames and moved through AF_XDP sockets, past the
// kernel's UDP and IP layers.
//
// It promises: UMEM and rings mapped off the Go heap and unmapped on every
// path; ring indices read and written atomically with cached copies
// (ring_linux.go); one socket and one locked OS thread per queue, with
// disjoint RX and TX frame pools; copy mode unless zero-copy is asked for
// (option zc), with the mode the kernel granted in the flow's notes; the
// XDP program of package bpf attached through a BPF link only while a
// receive runs, so nothing stays attached when blast exits however it
// exits.
//
// The sender builds one frame template with gopacket and patches only
// iperf3's header (seconds, microseconds, sequence number) and the UDP
// checksum per datagram, so a socket receiver counts loss and order. The
// receiver counts datagrams, bytes, sequence gaps (lost) and reordering,
// and keeps the fill ring full.
package afxdp
