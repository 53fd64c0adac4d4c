package discover

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultDataPort is an agent's data port when its source gives none.
const DefaultDataPort = 5201

// ErrNoPeers is wrapped by Discover's error when a source answered but
// named no agent (yet): Wait polls on.
var ErrNoPeers = errors.New("no peers found")

// Peer is one agent.
type Peer struct {
	Name        string // the node name (Kubernetes), the NAME of the peers file, or the DNS target or address
	Host        string // an IP address (a peers file may give a host name)
	DataPort    int
	ControlPort int // 0: none known (a data port of 65535 and no control port named)
	Zone        string
}

// DataAddr is host:port of the agent's data server.
func (p Peer) DataAddr() string { return net.JoinHostPort(p.Host, strconv.Itoa(p.DataPort)) }

// ControlAddr is host:port of the agent's control endpoint.
func (p Peer) ControlAddr() string { return net.JoinHostPort(p.Host, strconv.Itoa(p.ControlPort)) }

// Kind is the kind of a Source.
type Kind int

const (
	File       Kind = iota + 1 // a peers file
	DNS                        // dns:NAME
	Kubernetes                 // k8s:[NAMESPACE/]SERVICE
)

// Source is where agents are found: a parsed --peers SPEC.
type Source struct {
	Kind      Kind
	Name      string // the file's path, the DNS name or the Service
	Namespace string // Kubernetes: "" is the pod's own namespace
}

// String is the Source as a SPEC.
func (s Source) String() string {
	switch s.Kind {
	case DNS:
		return "dns:" + s.Name
	case Kubernetes:
		if s.Namespace != "" {
			return "k8s:" + s.Namespace + "/" + s.Name
		}
		return "k8s:" + s.Name
	}
	return s.Name
}

const specHelp = "want FILE, dns:NAME or k8s:[NAMESPACE/]SERVICE"

// Parse reads a --peers SPEC: "FILE", "dns:NAME", "k8s:SERVICE" or
// "k8s:NAMESPACE/SERVICE". It checks the syntax only; Discover opens
// the file or asks the servers.
func Parse(spec string) (Source, error) {
	switch {
	case spec == "":
		return Source{}, fmt.Errorf("empty peers spec: %s", specHelp)
	case strings.HasPrefix(spec, "dns:"):
		name := spec[len("dns:"):]
		if !isDomainName(name) {
			return Source{}, fmt.Errorf("peers %q: %q is not a DNS name", spec, name)
		}
		return Source{Kind: DNS, Name: name}, nil
	case strings.HasPrefix(spec, "k8s:"):
		ns, svc, ok := strings.Cut(spec[len("k8s:"):], "/")
		if !ok {
			ns, svc = "", ns
		} else if !isLabel(ns) {
			return Source{}, fmt.Errorf("peers %q: namespace %q is not a DNS label (lower case letters, digits and '-', at most 63)", spec, ns)
		}
		if !isLabel(svc) {
			return Source{}, fmt.Errorf("peers %q: service %q is not a DNS label (lower case letters, digits and '-', at most 63)", spec, svc)
		}
		return Source{Kind: Kubernetes, Name: svc, Namespace: ns}, nil
	}
	return Source{Kind: File, Name: spec}, nil
}

// Options are the settings of a lookup. The zero value is the defaults.
type Options struct {
	// DataPort is the agents' data port where the source gives none
	// (0: DefaultDataPort). Their control port is DataPort + 1.
	DataPort int

	// Resolver answers dns:NAME (nil: net.DefaultResolver).
	Resolver *net.Resolver

	// For k8s:SERVICE; empty fields take the in-cluster defaults.
	APIServer     string       // https://HOST:PORT (KUBERNETES_SERVICE_HOST and _PORT)
	TokenFile     string       // read for every request (/var/run/secrets/kubernetes.io/serviceaccount/token)
	CAFile        string       // the API server's CA (.../serviceaccount/ca.crt)
	NamespaceFile string       // the pod's namespace (.../serviceaccount/namespace)
	HTTPClient    *http.Client // nil: one that trusts CAFile
}

func (o Options) dataPort() (int, error) {
	switch {
	case o.DataPort == 0:
		return DefaultDataPort, nil
	case o.DataPort < 1 || o.DataPort > 65535:
		return 0, fmt.Errorf("data port %d: want 1 to 65535", o.DataPort)
	}
	return o.DataPort, nil
}

// controlPort is the control port of an agent on data port p when none
// is named: p + 1, or 0 if there is none.
func controlPort(p int) int {
	if p >= 65535 {
		return 0
	}
	return p + 1
}

// Discover looks the agents of src up once. It returns them sorted by
// name, one per host and data port. A source that answers with no agent
// is an error wrapping ErrNoPeers.
func Discover(ctx context.Context, src Source, opt Options) ([]Peer, error) {
	def, err := opt.dataPort()
	if err != nil {
		return nil, final(fmt.Errorf("%s: %w", src, err))
	}
	var peers []Peer
	switch src.Kind {
	case File:
		peers, err = readFile(src.Name, def)
	case DNS:
		peers, err = lookupDNS(ctx, src, opt, def)
	case Kubernetes:
		peers, err = listK8s(ctx, src, opt, def)
	default:
		return nil, final(fmt.Errorf("discover: source of kind %d: %s", src.Kind, specHelp))
	}
	if err != nil {
		return nil, err
	}
	return tidy(src.String(), peers)
}

// Wait polls src every so often (every; 0 is 2s) until it has at least
// atLeast agents, and returns them. It gives up at once on errors that
// polling will not mend (a bad peers file, a missing permission) and when
// ctx ends, with an error saying how many agents it found of how many it
// wanted and the peers of its last successful poll.
func Wait(ctx context.Context, src Source, opt Options, atLeast int, every time.Duration) ([]Peer, error) {
	if every <= 0 {
		every = 2 * time.Second
	}
	t := time.NewTimer(0)
	defer t.Stop()
	var (
		peers   []Peer
		lastErr error
	)
	for {
		select {
		case <-ctx.Done():
			err := fmt.Errorf("%s: found %d of %d agents wanted: %w", src, len(peers), atLeast, context.Cause(ctx))
			if lastErr != nil {
				err = fmt.Errorf("%w; last attempt: %w", err, lastErr)
			}
			return peers, err
		case <-t.C:
		}
		got, err := Discover(ctx, src, opt)
		switch {
		case err == nil:
			peers, lastErr = got, nil
			if len(peers) >= atLeast {
				return peers, nil
			}
		case isFinal(err):
			return nil, err
		case errors.Is(err, ErrNoPeers):
			peers, lastErr = nil, nil
		case ctx.Err() == nil: // else the error is ctx's, said above
			lastErr = err
		}
		t.Reset(every)
	}
}

// finalError marks an error that polling will not mend.
type finalError struct{ err error }

func (e *finalError) Error() string { return e.err.Error() }
func (e *finalError) Unwrap() error { return e.err }

func final(err error) error { return &finalError{err} }

func isFinal(err error) bool {
	var f *finalError
	return errors.As(err, &f)
}

// tidy sorts peers by name, keeps one per host and data port, and
// refuses two peers with one name.
func tidy(src string, peers []Peer) ([]Peer, error) {
	slices.SortFunc(peers, func(a, b Peer) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Host, b.Host), cmp.Compare(a.DataPort, b.DataPort))
	})
	type key struct {
		host string
		port int
	}
	seen := make(map[key]bool, len(peers))
	out := peers[:0]
	for _, p := range peers {
		k := key{p.Host, p.DataPort}
		if seen[k] {
			continue
		}
		seen[k] = true
		if n := len(out); n > 0 && out[n-1].Name == p.Name {
			return nil, final(fmt.Errorf("%s: two peers named %q: %s and %s", src, p.Name, out[n-1].DataAddr(), p.DataAddr()))
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: %w", src, ErrNoPeers)
	}
	return out, nil
}

// isLabel reports whether s is a DNS label as Kubernetes names
// namespaces and services (RFC 1123, lower case).
func isLabel(s string) bool {
	if len(s) == 0 || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// isDomainName reports whether s is a domain name: labels of letters,
// digits, '-' and '_' joined by dots, an optional final dot, at most 253
// bytes.
func isDomainName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for l := range strings.SplitSeq(s, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range []byte(l) {
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
