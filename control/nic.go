package control

import (
	"fmt"
	"net/netip"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/nicinfo"
	"github.com/blastnet/blast/pathinfo"
)

// nicWatch follows the interface that carries a test's traffic: a
// snapshot before, another after, the counter deltas and the diagnosis;
// and the host's path facts around it (qdiscs, SNMP counters, sysctls).
type nicWatch struct {
	src   *nicinfo.Source
	w     *nicinfo.Watch
	path  *pathinfo.Watch
	iface string
}

// watchNIC starts watching the interface the route to peer leaves by. A
// failure is no test failure: the Result notes it.
func watchNIC(peer netip.Addr) (*nicWatch, error) {
	rt, err := nicinfo.InterfaceFor(peer)
	if err != nil {
		return nil, err
	}
	src, err := nicinfo.Open(nicinfo.Config{})
	if err != nil {
		return nil, err
	}
	w, err := src.Watch(rt.Iface)
	if err != nil {
		src.Close()
		return nil, fmt.Errorf("watch %s: %w", rt.Iface, err)
	}
	nw := &nicWatch{src: src, w: w, iface: rt.Iface}
	// The path facts are a bonus: without them the path rules say less.
	nw.path, _ = pathinfo.Start(rt.Iface)
	return nw, nil
}

// stop ends the watch; goodput is this side's rate in bits per second.
func (n *nicWatch) stop(goodput float64) (*nicinfo.Result, error) {
	if n == nil {
		return nil, nil
	}
	return n.w.Stop(goodput, false)
}

// close releases the NIC source (its netlink and ethtool sockets). The
// test that started the watch defers it, so every path closes it once.
func (n *nicWatch) close() {
	if n == nil {
		return
	}
	if n.src != nil {
		n.src.Close()
		n.src = nil
	}
	if n.path != nil {
		n.path.Close()
		n.path = nil
	}
}

// stopNIC finishes the NIC watch and the path watch into the Result.
func stopNIC(r *result.Result, w *nicWatch) {
	if w == nil {
		return
	}
	if w.path != nil {
		d, after, err := w.path.Stop()
		w.path.Close()
		w.path = nil
		if err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("path facts %s: %v", w.iface, err))
		} else {
			r.Path, r.Sysctls = d, after.Sysctls
		}
	}
	nr, err := w.stop(r.Goodput())
	if err != nil {
		r.Notes = append(r.Notes, fmt.Sprintf("NIC %s: %v", w.iface, err))
		return
	}
	r.NIC = nr
}
