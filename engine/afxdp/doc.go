// Package afxdp is blast's AF_XDP backend, "afxdp": UDP datagrams built
// as whole Ethernet frames and moved through AF_XDP sockets, past the
// kernel's UDP and IP layers. It needs Linux; engine/backends registers
// it there, and registers engine.Unsupported under its name elsewhere.
//
// It promises: UMEM and rings mapped off the Go heap and unmapped on every
// path; ring indices read and written atomically with cached copies
// (ring_linux.go); one socket per queue, with disjoint RX and TX frame
// pools; copy mode unless zero-copy is asked for (option zc), with the
// mode the kernel granted in the flow's notes; the XDP program of package
// bpf attached through a BPF link only while a receive runs, so nothing
// stays attached when blast exits however it exits.
//
// Threads: the flow's thread (engine.Run) sends on the first socket, or
// receives on queue 0 and the flow's own socket; further sending threads
// and the receivers of further queues are threads of the backend's own,
// counted in engine.FactOwnThreads, stopped by the flow's cancellation
// and joined before Send or Recv returns. AF_XDP has no blocking call:
// every thread waits in engine.Flow.Wait (ppoll on an AF_XDP socket, or
// an epoll set of it and the flow's socket, and the flow's eventfd).
//
// The sender builds one frame template with gopacket and patches only
// iperf3's header (seconds, microseconds, sequence number) and the UDP
// checksum per datagram, so a socket receiver counts loss and order. All
// its threads take their datagrams from the flow's one engine.Sender, so
// the byte limit, the time limit and the pacing hold for the flow as a
// whole, exactly. The receiver counts datagrams, bytes, sequence gaps
// (lost) and reordering, and keeps the fill ring full.
//
// A flow with a Framing (engine.Spec.Framing) is received, every datagram
// handed to it with the receivers of all queues taking turns, but refused
// on send (use mmsg): the sender patches prebuilt frames outside the
// engine.Sender, with no place to stamp each datagram in send order.
package afxdp
