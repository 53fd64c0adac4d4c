//go:build !linux

package pathinfo

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/vishvananda/netns"
)

// Take snapshots iface. Only Linux has tc and /proc/net; elsewhere it fails
// with an error wrapping errors.ErrUnsupported.
func Take(iface string) (*Snapshot, error) {
	return nil, fmt.Errorf("pathinfo: snapshot %s on %s: %w", iface, runtime.GOOS, errors.ErrUnsupported)
}

// Start starts a watch of iface. Linux only, like Take.
func Start(iface string) (*Watch, error) {
	return nil, fmt.Errorf("pathinfo: watch %s on %s: %w", iface, runtime.GOOS, errors.ErrUnsupported)
}

func takeIn(_ netns.NsHandle, iface string) (*Snapshot, error) { return Take(iface) }
