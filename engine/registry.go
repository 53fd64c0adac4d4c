package engine

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// DefaultBackend is the backend used when none is named.
const DefaultBackend = "readwrite"

var (
	registryMu sync.Mutex
	registry   = map[string]Backend{}
)

// Register makes b available by its name. It panics on a duplicate name:
// that is a programming error caught at init.
func Register(b Backend) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[b.Name()]; dup {
		panic("engine: backend registered twice: " + b.Name())
	}
	registry[b.Name()] = b
}

// Lookup returns the backend called name, or an error listing the known ones.
func Lookup(name string) (Backend, error) {
	registryMu.Lock()
	b, ok := registry[name]
	registryMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("unknown backend %q: choose one of %s (see 'blast backends')", name, strings.Join(Names(), ", "))
	}
	return b, nil
}

// Usable returns the backend called name if its probe passes, or an error
// saying why it cannot run here.
func Usable(name string) (Backend, error) {
	b, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	if err := b.Probe(); err != nil {
		if errors.Is(err, ErrNotSupported) {
			return nil, fmt.Errorf("backend %s cannot run here: %w", name, err)
		}
		return nil, fmt.Errorf("backend %s: probe failed: %w", name, err)
	}
	return b, nil
}

// Names lists the registered backends in sorted order.
func Names() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ProbeWords renders a probe result for `blast backends`.
func ProbeWords(err error) string {
	switch {
	case err == nil:
		return "usable"
	case errors.Is(err, ErrNotSupported):
		return "not supported here: " + err.Error()
	default:
		return "probe failed: " + err.Error()
	}
}
