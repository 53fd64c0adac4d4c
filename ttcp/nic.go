package ttcp

import (
	"net/netip"
	"strings"

	"github.com/blastnet/blast/nicinfo"
	"github.com/blastnet/blast/pathinfo"
)

// nicWatch follows the interface that carries the test: found by a route
// lookup to the peer (or named with -I), snapshotted before the transfer
// and again after, so the result carries its report, counter deltas and
// diagnosis. A NIC that cannot be read costs a note, never the run.
type nicWatch struct {
	src   *nicinfo.Source
	watch *nicinfo.Watch
	err   error
	// path watches the host's path facts on the same interface (nil:
	// they could not be read; the path rules then say less).
	path      *pathinfo.Watch
	pathDelta *pathinfo.Delta
	sysctls   map[string]string
}

func watchNIC(device string, peer netip.AddrPort) *nicWatch {
	w := &nicWatch{}
	name := device
	if name == "" {
		if !peer.IsValid() {
			return nil
		}
		rt, err := nicinfo.InterfaceFor(peer.Addr().Unmap())
		if err != nil {
			w.err = err
			return w
		}
		name = rt.Iface
	}
	if w.src, w.err = nicinfo.Open(nicinfo.Config{}); w.err != nil {
		return w
	}
	w.watch, w.err = w.src.Watch(name)
	w.path, _ = pathinfo.Start(name)
	return w
}

// stopPath ends the path watch.
func (w *nicWatch) stopPath() {
	if w == nil || w.path == nil {
		return
	}
	if d, after, err := w.path.Stop(); err == nil {
		w.pathDelta, w.sysctls = d, after.Sysctls
	}
	w.path.Close()
	w.path = nil
}

// lines stops the watch and renders what it saw, each line starting with
// prefix ("blast-t: "); and the finding that makes the result invalid, if
// one does (the link went down during the test).
// The result is nil when the interface could not be read.
func (w *nicWatch) lines(prefix string, goodputBps float64) ([]string, *nicinfo.Result) {
	if w == nil {
		return nil, nil
	}
	w.stopPath()
	if w.src != nil {
		defer w.src.Close()
	}
	if w.err != nil {
		return []string{prefix + "nic: cannot inspect the interface: " + w.err.Error()}, nil
	}
	res, err := w.watch.Stop(goodputBps, false)
	if err != nil {
		return []string{prefix + "nic: cannot inspect the interface: " + err.Error()}, nil
	}
	var b strings.Builder
	if err := nicinfo.WriteBrief(&b, prefix, res); err != nil {
		return []string{prefix + "nic: " + err.Error()}, res
	}
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n"), res
}
