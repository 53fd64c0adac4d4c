// Package nicinfo inspects network interfaces and diagnoses their links.
//
// It reads identity, state and the kernel's generic counters from sysfs through an
// fs.FS rooted at a configurable directory (the live /sys or a captured tree), and
// the driver's view (driver info, permanent address, link modes, rings, channels,
// features, "ethtool -S" counters) through the ethtool ioctl API. udev's database
// tells how a name was assigned, and a netlink route lookup tells which interface
// carries the traffic to a peer.
//
// What it promises:
//   - an attribute that cannot be read is unknown (a nil pointer, an empty string or
//     a missing map key), never zero; the read error is kept in Interface.Errors;
//   - a counter the driver does not expose is absent, never zero;
//   - snapshots are cheap (sysfs statistics plus one ethtool -S), and Delta flags
//     counters that went backwards instead of reporting huge deltas;
//   - the rules D1 to D13 (finding's registry) turn a report and a delta into findings
//     with a severity, the evidence and the fix in words; D25 reports a card
//     renamed between two captures;
//   - Capture writes a tree that Load reads back, so a support bundle from another
//     machine is analysed by the same code as the live system;
//   - Pair follows a card across two captures of a machine by its permanent MAC
//     and bus address, not its name (which the kernel's probe order may give to
//     another card), and counters that restarted between them (a reboot, a
//     recreated interface) are counted from zero, never subtracted.
//
// Live access is Linux-only; elsewhere Open, InterfaceFor and Capture return an
// error wrapping ErrNotSupported, while Load and everything that works on captured
// trees runs anywhere.
package nicinfo

import "errors"

// ErrNotSupported is wrapped by errors from operations this platform cannot do.
// It is Go's errors.ErrUnsupported, so that nicinfo depends on no other package
// of blast and any caller can test for it with the standard sentinel.
var ErrNotSupported = errors.ErrUnsupported

// ErrNoInterface is wrapped when the named interface does not exist.
var ErrNoInterface = errors.New("no such interface")
