// Package mmsg is the mmsg backend: it moves UDP datagrams in batches,
// with one sendmmsg(2) or recvmmsg(2) call for up to a batch of messages,
// on the flow's blocking socket.
//
// Options: batch is the number of messages per call (64 by default). With
// gso the sender sets UDP_SEGMENT to the buffer length and each message
// carries a train of up to 64 datagrams that the kernel (or the NIC) cuts
// up; with gro the receiver sets UDP_GRO and one message may bring several
// datagrams of one size. Where the kernel refuses either, the flow goes on
// without it and a note in the flow's facts says so.
//
// The backend needs Linux; elsewhere package backends registers its name
// as engine.Unsupported, so this package holds only this documentation
// there.
package mmsg
