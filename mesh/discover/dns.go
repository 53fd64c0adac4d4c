package discover

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// lookupDNS finds the agents of dns:NAME: SRV records first, else the A
// and AAAA records of NAME.
func lookupDNS(ctx context.Context, src Source, opt Options, def int) ([]Peer, error) {
	r := opt.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	var (
		srvName = src.Name
		srvs    []*net.SRV
		err     error
	)
	if strings.HasPrefix(src.Name, "_") {
		_, srvs, err = r.LookupSRV(ctx, "", "", src.Name)
	} else {
		// _blast._tcp.NAME, or the records Kubernetes makes for the
		// port named "data" of a headless Service (deploy/kubernetes).
		for _, service := range []string{"blast", "data"} {
			srvName = "_" + service + "._tcp." + src.Name
			if _, srvs, err = r.LookupSRV(ctx, service, "tcp", src.Name); len(srvs) > 0 || !notFound(err) {
				break
			}
		}
	}
	// LookupSRV drops records with invalid targets and says so in err:
	// the others are still agents.
	if len(srvs) > 0 {
		return fromSRV(ctx, src, r, srvs)
	}
	srvErr := err
	addrs, err := r.LookupNetIP(ctx, "ip", src.Name)
	if !notFound(srvErr) && (err != nil || len(addrs) == 0) {
		// No DNS server answered for SRV (a lab's namespace has only
		// its hosts file, which answers A and AAAA), or it failed: the
		// SRV error says more than the A lookup's.
		return nil, fmt.Errorf("%s: look up SRV %s: %w", src, srvName, srvErr)
	}
	if notFound(err) {
		return nil, fmt.Errorf("%s: %w: no SRV records at %s and no A or AAAA records at %s: %w", src, ErrNoPeers, srvName, src.Name, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: look up %s: %w", src, src.Name, err)
	}
	var peers []Peer
	for _, a := range oneFamily(addrs) {
		peers = append(peers, Peer{Name: a.String(), Host: a.String(), DataPort: def, ControlPort: controlPort(def)})
	}
	return peers, nil
}

// fromSRV resolves the targets of SRV records to agents.
func fromSRV(ctx context.Context, src Source, r *net.Resolver, srvs []*net.SRV) ([]Peer, error) {
	ports := make(map[string][]int) // target: its distinct ports
	var targets []string
	for _, s := range srvs {
		t := strings.ToLower(strings.TrimSuffix(s.Target, "."))
		if t == "" || s.Port == 0 { // "." is "no such service here" (RFC 2782)
			continue
		}
		if _, ok := ports[t]; !ok {
			targets = append(targets, t)
		}
		if !slices.Contains(ports[t], int(s.Port)) {
			ports[t] = append(ports[t], int(s.Port))
		}
	}
	names := shortNames(targets)
	var peers []Peer
	for _, t := range targets {
		addrs, err := r.LookupNetIP(ctx, "ip", t+".")
		if notFound(err) {
			continue // gone since the SRV answer
		}
		if err != nil {
			return nil, fmt.Errorf("%s: look up SRV target %s: %w", src, t, err)
		}
		host := slices.MinFunc(addrs, netip.Addr.Compare).Unmap().String()
		for _, port := range ports[t] {
			name := names[t]
			if len(ports[t]) > 1 {
				name += ":" + strconv.Itoa(port)
			}
			peers = append(peers, Peer{Name: name, Host: host, DataPort: port, ControlPort: controlPort(port)})
		}
	}
	return peers, nil
}

// shortNames names each target by its first label when all targets
// share the rest of the name, else by the whole name.
func shortNames(targets []string) map[string]string {
	names := make(map[string]string, len(targets))
	short := true
	var parent string
	for i, t := range targets {
		label, rest, ok := strings.Cut(t, ".")
		if !ok || label == "" || (i > 0 && rest != parent) {
			short = false
			break
		}
		parent = rest
	}
	for _, t := range targets {
		names[t] = t
		if short {
			names[t], _, _ = strings.Cut(t, ".")
		}
	}
	return names
}

// oneFamily keeps the IPv4 addresses of addrs if there are any, else its
// IPv6 ones, so that an agent with both is one agent.
func oneFamily(addrs []netip.Addr) []netip.Addr {
	var v4, v6 []netip.Addr
	for _, a := range addrs {
		if a = a.Unmap(); a.Is4() {
			v4 = append(v4, a)
		} else {
			v6 = append(v6, a)
		}
	}
	if len(v4) > 0 {
		return v4
	}
	return v6
}

func notFound(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}
