// Package iouring is blast's io_uring backend, "iouring": each flow moves
// its bytes through an io_uring of its own (package internal/uring), a
// batch of IORING_OP_SEND or IORING_OP_RECV operations per io_uring_enter,
// and blocks in io_uring_enter for their completions on the flow's own
// thread.
//
// It promises: buffers in an anonymous mapping off the Go heap, so a
// kernel still holding one never touches Go memory; every operation back
// (completed or cancelled) before that mapping goes, and the ring's
// mappings and descriptor released on every path; a TCP stream kept in
// order (a round of sends is linked, one receive is in flight at a time);
// counters counting one I/O call per operation and FactSyscalls counting
// io_uring_enter calls.
//
// Options: batch (operations per submission, 8 unless given), zc
// (IORING_OP_SEND_ZC: the facts count the sends the kernel really sent
// from user memory and those it copied) and multishot (one multishot
// receive into a group of provided buffers).
//
// The backend is Linux-only; elsewhere the package holds nothing and the
// engine registers the name as unsupported.
package iouring
