package discover

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// MeshRole is the Role of deploy/kubernetes that grants the mesh's
// ServiceAccount what discovery needs; a 403 names it.
const MeshRole = "blast-mesh"

// The service account's files in a pod.
const saDir = "/var/run/secrets/kubernetes.io/serviceaccount/"

// Bounds of a listing.
const (
	pageLimit   = 100      // slices a page
	maxPages    = 1000     // 100,000 slices
	maxBody     = 32 << 20 // bytes a page
	maxFileSize = 1 << 20  // token, namespace
)

// endpointSliceList is the part of a discovery.k8s.io/v1
// EndpointSliceList that blast reads.
type endpointSliceList struct {
	Metadata struct {
		Continue string `json:"continue"`
	} `json:"metadata"`
	Items []endpointSlice `json:"items"`
}

type endpointSlice struct {
	AddressType string         `json:"addressType"` // IPv4, IPv6 or FQDN
	Endpoints   []endpoint     `json:"endpoints"`
	Ports       []endpointPort `json:"ports"`
}

type endpoint struct {
	Addresses  []string `json:"addresses"`
	Conditions struct {
		Ready       *bool `json:"ready"`
		Terminating *bool `json:"terminating"`
	} `json:"conditions"`
	NodeName  string `json:"nodeName"`
	Zone      string `json:"zone"`
	TargetRef *struct {
		Name string `json:"name"`
	} `json:"targetRef"`
}

type endpointPort struct {
	Name     string `json:"name"`
	Protocol string `json:"protocol"` // "" is TCP
	Port     *int   `json:"port"`
}

// status is the part of a metav1.Status error body that blast reads.
type status struct {
	Message string `json:"message"`
}

// listK8s finds the agents of k8s:[NAMESPACE/]SERVICE in the
// EndpointSlices of the Service.
func listK8s(ctx context.Context, src Source, opt Options, def int) ([]Peer, error) {
	or := func(s, d string) string {
		if s != "" {
			return s
		}
		return d
	}
	tokenFile := or(opt.TokenFile, saDir+"token")
	caFile := or(opt.CAFile, saDir+"ca.crt")
	nsFile := or(opt.NamespaceFile, saDir+"namespace")

	api := opt.APIServer
	if api == "" {
		host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
		if host == "" || port == "" {
			return nil, final(fmt.Errorf("%s: not in a Kubernetes pod (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set): outside a cluster use a peers file or dns:NAME", src))
		}
		api = "https://" + net.JoinHostPort(host, port)
	}
	ns := src.Namespace
	if ns == "" {
		b, err := readSmall(nsFile)
		if err != nil {
			return nil, final(fmt.Errorf("%s: the pod's namespace: %w (or give it: k8s:NAMESPACE/%s)", src, err, src.Name))
		}
		ns = strings.TrimSpace(string(b))
		if !isLabel(ns) {
			return nil, final(fmt.Errorf("%s: the pod's namespace %q in %s is not a DNS label", src, ns, nsFile))
		}
	}
	client := opt.HTTPClient
	if client == nil {
		pem, err := readSmall(caFile)
		if err != nil {
			return nil, final(fmt.Errorf("%s: the API server's CA: %w", src, err))
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, final(fmt.Errorf("%s: the API server's CA: no PEM certificate in %s", src, caFile))
		}
		client = &http.Client{
			Timeout:   30 * time.Second,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
		}
		defer client.CloseIdleConnections()
	}

	q := url.Values{"labelSelector": {"kubernetes.io/service-name=" + src.Name}, "limit": {strconv.Itoa(pageLimit)}}
	base := strings.TrimSuffix(api, "/") + "/apis/discovery.k8s.io/v1/namespaces/" + url.PathEscape(ns) + "/endpointslices"
	var slices []endpointSlice
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, fmt.Errorf("%s: more than %d pages of EndpointSlices", src, maxPages)
		}
		var list endpointSliceList
		if err := getJSON(ctx, client, base+"?"+q.Encode(), tokenFile, &list); err != nil {
			return nil, fmt.Errorf("%s: list endpointslices in namespace %s: %w", src, ns, err.wrap(ns))
		}
		slices = append(slices, list.Items...)
		next := list.Metadata.Continue
		if next == "" {
			break
		}
		if next == q.Get("continue") {
			return nil, fmt.Errorf("%s: list endpointslices in namespace %s: the API server gave the same continue token twice", src, ns)
		}
		q.Set("continue", next)
	}
	peers := fromSlices(slices, def)
	if len(peers) == 0 {
		return nil, fmt.Errorf("%s: %w: no ready endpoints in the EndpointSlices of Service %s in namespace %s (are the agents running, and does the Service select them?)", src, ErrNoPeers, src.Name, ns)
	}
	return peers, nil
}

// apiError is a failed request to the API server.
type apiError struct {
	code  int    // the HTTP status, 0 if there was no answer
	msg   string // the API server's message or the error
	err   error  // of the request, if any
	token bool   // the token could not be read
}

// wrap is the error for a request in namespace ns, with a fix where
// there is one; it is final when polling cannot mend it.
func (e *apiError) wrap(ns string) error {
	switch e.code {
	case 0:
		if !e.token {
			return e
		}
		if errors.Is(e.err, fs.ErrNotExist) {
			return final(fmt.Errorf("%w (is automountServiceAccountToken false?)", e))
		}
		return final(e)
	case http.StatusUnauthorized:
		return final(fmt.Errorf("%s: the API server did not accept the service account token", e))
	case http.StatusForbidden:
		return final(fmt.Errorf("%s: the pod's ServiceAccount needs get/list on endpointslices.discovery.k8s.io in namespace %s: bind it to the Role %s (deploy/kubernetes: the Role and the RoleBinding %s)", e, ns, MeshRole, MeshRole))
	case http.StatusNotFound:
		return final(fmt.Errorf("%s: does the API server serve discovery.k8s.io/v1 (Kubernetes 1.21 or later)?", e))
	}
	return e // 410 Gone (an expired continue token), 429, 5xx: polling may mend
}

func (e *apiError) Error() string {
	if e.code == 0 {
		return e.msg
	}
	if e.msg == "" {
		return fmt.Sprintf("%d %s", e.code, http.StatusText(e.code))
	}
	return fmt.Sprintf("%d %s: %s", e.code, http.StatusText(e.code), e.msg)
}

func (e *apiError) Unwrap() error { return e.err }

// getJSON GETs url with the token read afresh from tokenFile and decodes
// the answer into v.
func getJSON(ctx context.Context, client *http.Client, url, tokenFile string, v any) *apiError {
	token, err := readSmall(tokenFile)
	if err != nil {
		return &apiError{msg: "the service account token: " + err.Error(), err: err, token: true}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return &apiError{msg: err.Error(), err: err}
	}
	req.Header.Set("Authorization", "Bearer "+string(bytes.TrimSpace(token)))
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return &apiError{msg: err.Error(), err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return &apiError{code: resp.StatusCode, msg: "read the answer: " + err.Error(), err: err}
	}
	if resp.StatusCode != http.StatusOK {
		var s status
		_ = json.Unmarshal(body, &s) // the message if there is one
		return &apiError{code: resp.StatusCode, msg: s.Message}
	}
	if len(body) > maxBody {
		return &apiError{msg: fmt.Sprintf("an answer longer than %d bytes", maxBody)}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return &apiError{msg: "decode the answer: " + err.Error(), err: err}
	}
	return nil
}

// fromSlices takes the agents from EndpointSlices: every endpoint not
// known unready and not terminating, each address once, IPv4 only if
// there are IPv4 slices. def is the data port when a slice has none.
func fromSlices(slices []endpointSlice, def int) []Peer {
	family := "IPv6"
	for _, s := range slices {
		if s.AddressType == "IPv4" {
			family = "IPv4"
		}
	}
	seen := make(map[netip.Addr]bool)
	var peers []Peer
	for _, s := range slices {
		if s.AddressType != family {
			continue
		}
		data, control := slicePorts(s.Ports, def)
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready || e.Conditions.Terminating != nil && *e.Conditions.Terminating {
				continue
			}
			for _, a := range e.Addresses {
				addr, err := netip.ParseAddr(a)
				if err != nil || addr.Zone() != "" {
					continue
				}
				if addr = addr.Unmap(); seen[addr] {
					continue
				}
				seen[addr] = true
				p := Peer{Name: e.NodeName, Host: addr.String(), DataPort: data, ControlPort: control, Zone: e.Zone}
				if p.Name == "" && e.TargetRef != nil {
					p.Name = e.TargetRef.Name
				}
				if p.Name == "" {
					p.Name = p.Host
				}
				peers = append(peers, p)
			}
		}
	}
	return peers
}

// slicePorts picks a slice's data port (named "data", else the first TCP
// port, else def) and control port (named "control", else data + 1).
func slicePorts(ports []endpointPort, def int) (data, control int) {
	valid := func(p endpointPort) bool { return p.Port != nil && *p.Port >= 1 && *p.Port <= 65535 }
	for _, p := range ports {
		if valid(p) && (p.Name == "data" || data == 0 && (p.Protocol == "" || p.Protocol == "TCP")) {
			data = *p.Port
		}
	}
	for _, p := range ports {
		if valid(p) && p.Name == "control" {
			control = *p.Port
		}
	}
	if data == 0 {
		data = def
	}
	if control == 0 {
		control = controlPort(data)
	}
	return data, control
}

// readSmall reads a file of at most maxFileSize bytes.
func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFileSize {
		return nil, fmt.Errorf("%s: longer than %d bytes", path, maxFileSize)
	}
	return b, nil
}
