package netlab

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// etcNetnsDir holds, per namespace name, files that `ip netns exec`
// bind-mounts over those of /etc for the command it runs (iproute2's
// convention): /etc/netns/NS/hosts is what NS's commands read as
// /etc/hosts.
const etcNetnsDir = "/etc/netns"

// localhosts opens every hosts file a lab writes, so that localhost still
// resolves in its namespaces.
const localhosts = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"

// writeEtc writes /etc/netns/<ns>/<file>, making the folders it needs.
func writeEtc(ns, file string, data []byte) error {
	dir := filepath.Join(etcNetnsDir, ns)
	var err error
	// A Close in another lab or process removes /etc/netns when it is
	// empty, which it is for a moment after MkdirAll made it: try again.
	for range 10 {
		if err = os.MkdirAll(dir, 0o755); err == nil {
			err = os.WriteFile(filepath.Join(dir, file), data, 0o644)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("netlab: write %s for %s: %w", file, ns, err)
	}
	return nil
}

// removeEtc removes /etc/netns/<ns>, and /etc/netns too once no lab or
// anyone else has files there.
func removeEtc(ns string) error {
	dir := filepath.Join(etcNetnsDir, ns)
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("netlab: remove %s: %w", dir, err)
	}
	os.Remove(etcNetnsDir) // fails while it holds anything
	return nil
}
