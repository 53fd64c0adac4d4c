// Package pathinfo records what the host's side of a network path looks like
// around a test: the shapers, queues and policers tc has put on the
// interface, the kernel's protocol counters that go up when datagrams or
// segments are lost in the host, and the sysctls that size socket buffers.
// A Snapshot is that state at one moment; Diff turns two of them into what
// changed during the test. Package pathdiag reads them to explain loss.
//
// What it promises:
//   - a Snapshot describes one network namespace, the one the calling
//     thread is in, and one interface in it; a Watch takes its second
//     snapshot in the namespace the first was taken in, even when Stop is
//     called from elsewhere;
//   - rates are bits per second and sizes bytes, whatever unit the kernel
//     uses (tc's netlink speaks bytes per second and scheduler ticks);
//   - a counter or sysctl the kernel does not have is absent, never zero;
//   - a counter that went backwards, or a qdisc that went away, is named in
//     Delta.Resets instead of turning into a huge difference;
//   - every type encodes to JSON with snake_case names, so a result can
//     carry snapshots to the peer.
//
// Live snapshots are Linux-only; elsewhere Take and Start return an error
// wrapping errors.ErrUnsupported, while Diff and the parsers work anywhere.
package pathinfo

import "errors"

// ErrNoInterface is wrapped when the interface does not exist in the
// network namespace the snapshot is taken in.
var ErrNoInterface = errors.New("no such interface")
