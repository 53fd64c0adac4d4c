// Package uring is the io_uring ABI blast's iouring backend runs on,
// written on x/sys/unix (which has the system call numbers and nothing
// else): setting a ring up, mapping its submission and completion queues,
// the SQE and CQE layouts of include/uapi/linux/io_uring.h, submitting
// and waiting in io_uring_enter, asking which operations the kernel has,
// and tearing it all down again (every mapping unmapped, the ring's
// descriptor closed).
//
// A Ring belongs to one goroutine. The indexes it shares with the kernel
// are read and written with sync/atomic, which in Go is at least as strong
// as the acquire/release ordering the kernel expects.
//
// The package is Linux-only; elsewhere it holds nothing.
package uring
