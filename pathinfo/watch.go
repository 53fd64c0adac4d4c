package pathinfo

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netns"
)

// Watch holds the snapshot taken when a test starts and the network
// namespace it was taken in. One goroutine at a time may use it.
//
//	w, err := pathinfo.Start(iface)
//	...run the test...
//	d, after, err := w.Stop()
type Watch struct {
	iface  string
	before *Snapshot
	// ns is the namespace of before, open until Stop or Close, so that
	// the second snapshot compares like with like.
	ns netns.NsHandle
}

// Before returns the snapshot taken by Start.
func (w *Watch) Before() *Snapshot { return w.before }

// Stop takes the second snapshot, in the namespace Start took the first in,
// and returns the difference and the second snapshot. It releases the
// watch; a second Stop fails.
func (w *Watch) Stop() (*Delta, *Snapshot, error) {
	if !w.ns.IsOpen() {
		return nil, nil, fmt.Errorf("pathinfo: watch of %s: %w", w.iface, errStopped)
	}
	after, err := takeIn(w.ns, w.iface)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, nil, err
	}
	return Diff(w.before, after), after, nil
}

// Close releases the watch without a second snapshot; a test that fails
// before Stop defers it. Closing twice is harmless.
func (w *Watch) Close() error {
	if !w.ns.IsOpen() {
		return nil
	}
	err := w.ns.Close()
	w.ns = netns.None()
	if err != nil {
		return fmt.Errorf("pathinfo: release the namespace of the watch of %s: %w", w.iface, err)
	}
	return nil
}

var errStopped = errors.New("already stopped or closed")
