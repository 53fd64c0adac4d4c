// Package sockets holds the backends that move bytes through the kernel's
// socket calls, under the engine contract v2:
//
//   - readwrite: write(2) and read(2), one call per buffer; the default,
//     and the path every other backend is compared with;
//   - sendfile: sendfile(2) of a TCP stream from the page cache (a memfd
//     holding the pattern, the file option, or a Source that is a regular
//     file); it only sends;
//   - splice: a TCP stream through a pipe with vmsplice(2) and splice(2),
//     both ways, to and from files and pipes without a copy;
//   - zerocopy: MSG_ZEROCOPY sends of TCP or UDP, with the completions the
//     kernel queues on the socket's error queue; it only sends;
//   - trunc: recv(2) with MSG_TRUNC, which discards TCP or UDP data in the
//     kernel; it only receives.
//
// The backends run on the flow's own OS thread (engine.Run) and move the
// bytes of an engine-owned socket, in blocking mode, that no runtime
// poller watches. engine/backends registers them; sendfile and splice
// declare their option (file) through engine.Configurable.
//
// # Waiting
//
// Every backend here blocks in the system call itself: the thread sleeps
// in write, sendfile, splice, sendmsg or recv, and the kernel wakes that
// thread and no other when the socket is ready. Receives honour the
// socket's timeout (SO_RCVTIMEO); a time-limited send gets a short send
// timeout from Run, so that a blocked call returns and the Sender decides
// whether time remains. Cancelling a flow shuts its socket down, which
// ends a blocked call at once.
//
// Two waits are not on the socket's data and happen in ppoll on the
// flow's thread instead (Flow.Wait, which also polls the flow's eventfd,
// so cancelling reaches them): zerocopy, when no buffer is free, waits for
// the completions that free one (the socket's POLLERR; it reads them with
// recvmsg(MSG_ERRQUEUE|MSG_DONTWAIT) whenever it needs a buffer), and
// splice waits for a source or output pipe that is not ready (its pipe
// calls never block).
//
// # Counting
//
// As ttcp counts: a send is one I/O operation per buffer the Sender hands
// out, however many calls it takes (engine.WriteAll for readwrite); a
// receive is one I/O operation per call that brought data. Every system
// call of the data path counts in the flow's engine.FactSyscalls, and
// bytes that crossed to or from the socket without a copy in
// engine.FactBytesNotCopied.
package sockets
