package discover

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const (
	testNS       = "blast-ns"
	slicesPath   = "/apis/discovery.k8s.io/v1/namespaces/" + testNS + "/endpointslices"
	wantSelector = "labelSelector=kubernetes.io%2Fservice-name%3Dblast"
)

// fakeAPI is an API server serving EndpointSlice lists over TLS, with
// the files of a pod's service account: token, ca.crt and namespace.
type fakeAPI struct {
	srv       *httptest.Server
	tokenFile string
	opt       Options // the API server and the files, no HTTPClient

	mu      sync.Mutex
	calls   int
	queries []string // RawQuery of each request
	tokens  []string // Authorization of each request
}

// newFakeAPI answers every list request with handle, call counting
// from 1.
func newFakeAPI(t *testing.T, handle func(f *fakeAPI, call int, w http.ResponseWriter, r *http.Request)) *fakeAPI {
	t.Helper()
	f := &fakeAPI{}
	f.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.calls++
		call := f.calls
		f.queries = append(f.queries, r.URL.RawQuery)
		f.tokens = append(f.tokens, r.Header.Get("Authorization"))
		f.mu.Unlock()
		if r.Method != http.MethodGet || r.URL.Path != slicesPath {
			t.Errorf("request %s %s, want GET %s", r.Method, r.URL.Path, slicesPath)
			http.NotFound(w, r)
			return
		}
		handle(f, call, w, r)
	}))
	t.Cleanup(f.srv.Close)

	dir := t.TempDir()
	f.tokenFile = filepath.Join(dir, "token")
	caFile := filepath.Join(dir, "ca.crt")
	nsFile := filepath.Join(dir, "namespace")
	write := func(path, s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(f.tokenFile, "token-1\n")
	write(caFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.srv.Certificate().Raw})))
	write(nsFile, testNS+"\n")
	f.opt = Options{APIServer: f.srv.URL, TokenFile: f.tokenFile, CAFile: caFile, NamespaceFile: nsFile}
	return f
}

func (f *fakeAPI) setToken(t *testing.T, token string) {
	if err := os.WriteFile(f.tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Error(err)
	}
}

func (f *fakeAPI) seen() (calls int, queries, tokens []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, append([]string(nil), f.queries...), append([]string(nil), f.tokens...)
}

func writeJSON(t *testing.T, w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		t.Error(err)
	}
}

// The JSON of EndpointSlices, written as the API server writes it.
type (
	jsonList struct {
		Kind     string         `json:"kind"`
		Metadata map[string]any `json:"metadata"`
		Items    []jsonSlice    `json:"items"`
	}
	jsonSlice struct {
		Metadata    map[string]any `json:"metadata"`
		AddressType string         `json:"addressType"`
		Endpoints   []jsonEndpoint `json:"endpoints"`
		Ports       []jsonPort     `json:"ports,omitempty"`
	}
	jsonEndpoint struct {
		Addresses  []string        `json:"addresses"`
		Conditions map[string]bool `json:"conditions"`
		NodeName   string          `json:"nodeName,omitempty"`
		Zone       string          `json:"zone,omitempty"`
		TargetRef  map[string]any  `json:"targetRef,omitempty"`
	}
	jsonPort struct {
		Name     string `json:"name"`
		Protocol string `json:"protocol,omitempty"`
		Port     int    `json:"port"`
	}
)

func list(cont string, items ...jsonSlice) jsonList {
	md := map[string]any{"resourceVersion": "4711"}
	if cont != "" {
		md["continue"] = cont
	}
	return jsonList{Kind: "EndpointSliceList", Metadata: md, Items: items}
}

func ready(addr, node string) jsonEndpoint {
	return jsonEndpoint{Addresses: []string{addr}, NodeName: node, Conditions: map[string]bool{"ready": true, "serving": true, "terminating": false}}
}

var agentPorts = []jsonPort{{Name: "data", Protocol: "TCP", Port: 5201}, {Name: "control", Protocol: "TCP", Port: 5202}}

func TestK8s(t *testing.T) {
	api := newFakeAPI(t, func(api *fakeAPI, _ int, w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("continue") {
		case "":
			api.setToken(t, "token-2") // rotated: the next request must carry the new one
			writeJSON(t, w, http.StatusOK, list("page-2",
				jsonSlice{
					AddressType: "IPv4",
					Ports:       []jsonPort{{Name: "metrics", Protocol: "TCP", Port: 9100}, {Name: "data", Protocol: "TCP", Port: 5301}, {Name: "control", Protocol: "TCP", Port: 5399}},
					Endpoints: []jsonEndpoint{
						{Addresses: []string{"198.18.1.1"}, NodeName: "node-a", Zone: "zone-1", Conditions: map[string]bool{"ready": true}},
						{Addresses: []string{"198.18.1.2"}, NodeName: "node-b", Conditions: map[string]bool{"ready": false}},
						{Addresses: []string{"198.18.1.3"}, NodeName: "node-c", Conditions: map[string]bool{"ready": true, "terminating": true}},
						{Addresses: []string{"198.18.1.4"}, TargetRef: map[string]any{"kind": "Pod", "name": "blast-x7k2p"}}, // no conditions: ready unknown
					},
				}))
		case "page-2":
			writeJSON(t, w, http.StatusOK, list("",
				jsonSlice{
					AddressType: "IPv4",
					Ports:       []jsonPort{{Protocol: "UDP", Port: 6001}, {Port: 6002}},
					Endpoints: []jsonEndpoint{
						{Addresses: []string{"198.18.1.1"}, NodeName: "node-a", Zone: "zone-1", Conditions: map[string]bool{"ready": true}}, // in two slices
						{Addresses: []string{"198.18.1.5"}, Zone: "zone-2", Conditions: map[string]bool{"ready": true}},
					},
				},
				jsonSlice{AddressType: "IPv6", Ports: agentPorts, Endpoints: []jsonEndpoint{ready("2001:2::9", "node-a")}},
				jsonSlice{AddressType: "IPv4", Endpoints: []jsonEndpoint{ready("198.18.1.6", "node-f")}},
			))
		default:
			t.Errorf("continue %q", r.URL.Query().Get("continue"))
		}
	})

	src, err := Parse("k8s:blast")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Discover(context.Background(), src, api.opt)
	if err != nil {
		t.Fatal(err)
	}
	want := []Peer{
		{Name: "198.18.1.5", Host: "198.18.1.5", DataPort: 6002, ControlPort: 6003, Zone: "zone-2"},
		{Name: "blast-x7k2p", Host: "198.18.1.4", DataPort: 5301, ControlPort: 5399},
		{Name: "node-a", Host: "198.18.1.1", DataPort: 5301, ControlPort: 5399, Zone: "zone-1"},
		{Name: "node-f", Host: "198.18.1.6", DataPort: 5201, ControlPort: 5202},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("peers (-want +got):\n%s", diff)
	}
	calls, queries, tokens := api.seen()
	if calls != 2 {
		t.Fatalf("%d requests, want 2 (two pages)", calls)
	}
	for i, q := range queries {
		if !strings.Contains(q, wantSelector) || !strings.Contains(q, "limit=100") {
			t.Errorf("request %d: query %q, want %s and limit=100", i+1, q, wantSelector)
		}
	}
	if !strings.Contains(queries[1], "continue=page-2") {
		t.Errorf("second request: query %q, want continue=page-2", queries[1])
	}
	if diff := cmp.Diff([]string{"Bearer token-1", "Bearer token-2"}, tokens); diff != "" {
		t.Errorf("Authorization headers (-want +got):\n%s", diff)
	}
}

func TestK8sNamespaceGiven(t *testing.T) {
	api := newFakeAPI(t, func(_ *fakeAPI, _ int, w http.ResponseWriter, r *http.Request) {
		writeJSON(t, w, http.StatusOK, list("", jsonSlice{AddressType: "IPv4", Ports: agentPorts, Endpoints: []jsonEndpoint{ready("198.18.2.1", "node-a")}}))
	})
	// No namespace file: k8s:NAMESPACE/SERVICE does not need one.
	opt := api.opt
	opt.NamespaceFile = filepath.Join(t.TempDir(), "no-namespace")
	src, err := Parse("k8s:" + testNS + "/blast")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Discover(context.Background(), src, opt)
	if err != nil {
		t.Fatal(err)
	}
	want := []Peer{{Name: "node-a", Host: "198.18.2.1", DataPort: 5201, ControlPort: 5202}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("peers (-want +got):\n%s", diff)
	}
}

func TestK8sErrors(t *testing.T) {
	status := func(code int, msg string) func(*fakeAPI, int, http.ResponseWriter, *http.Request) {
		return func(_ *fakeAPI, _ int, w http.ResponseWriter, _ *http.Request) {
			writeJSON(t, w, code, map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": msg, "code": code})
		}
	}
	const forbidden = `endpointslices.discovery.k8s.io is forbidden: User "system:serviceaccount:blast-ns:default" cannot list resource "endpointslices" in API group "discovery.k8s.io" in the namespace "blast-ns"`
	for _, tc := range []struct {
		name   string
		handle func(*fakeAPI, int, http.ResponseWriter, *http.Request)
		opt    func(*Options)
		want   string
		final  bool
		none   bool // wraps ErrNoPeers
	}{
		{
			name:   "403",
			handle: status(http.StatusForbidden, forbidden),
			want:   "k8s:blast: list endpointslices in namespace blast-ns: 403 Forbidden: " + forbidden + ": the pod's ServiceAccount needs get/list on endpointslices.discovery.k8s.io in namespace blast-ns: bind it to the Role blast-mesh (deploy/kubernetes: the Role and the RoleBinding blast-mesh)",
			final:  true,
		},
		{
			name:   "401",
			handle: status(http.StatusUnauthorized, "Unauthorized"),
			want:   "k8s:blast: list endpointslices in namespace blast-ns: 401 Unauthorized: Unauthorized: the API server did not accept the service account token",
			final:  true,
		},
		{
			name:   "500",
			handle: status(http.StatusInternalServerError, "etcdserver: request timed out"),
			want:   "k8s:blast: list endpointslices in namespace blast-ns: 500 Internal Server Error: etcdserver: request timed out",
		},
		{
			name:  "no token",
			opt:   func(o *Options) { o.TokenFile = "testdata/no-token" },
			want:  "k8s:blast: list endpointslices in namespace blast-ns: the service account token: open testdata/no-token: no such file or directory (is automountServiceAccountToken false?)",
			final: true,
		},
		{
			name: "no ready endpoints",
			handle: func(_ *fakeAPI, _ int, w http.ResponseWriter, _ *http.Request) {
				writeJSON(t, w, http.StatusOK, list("", jsonSlice{AddressType: "IPv4", Ports: agentPorts, Endpoints: []jsonEndpoint{
					{Addresses: []string{"198.18.3.1"}, NodeName: "node-a", Conditions: map[string]bool{"ready": false}},
				}}))
			},
			want: "k8s:blast: no peers found: no ready endpoints in the EndpointSlices of Service blast in namespace blast-ns (are the agents running, and does the Service select them?)",
			none: true,
		},
		{
			name: "same continue token twice",
			handle: func(_ *fakeAPI, _ int, w http.ResponseWriter, _ *http.Request) {
				writeJSON(t, w, http.StatusOK, list("again"))
			},
			want: "k8s:blast: list endpointslices in namespace blast-ns: the API server gave the same continue token twice",
		},
		{
			name: "not in a cluster",
			opt: func(o *Options) {
				o.APIServer = ""
				t.Setenv("KUBERNETES_SERVICE_HOST", "")
				t.Setenv("KUBERNETES_SERVICE_PORT", "")
			},
			want:  "k8s:blast: not in a Kubernetes pod (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set): outside a cluster use a peers file or dns:NAME",
			final: true,
		},
		{
			name: "two agents on one node",
			handle: func(_ *fakeAPI, _ int, w http.ResponseWriter, _ *http.Request) {
				writeJSON(t, w, http.StatusOK, list("", jsonSlice{AddressType: "IPv4", Ports: agentPorts, Endpoints: []jsonEndpoint{
					ready("198.18.3.2", "node-a"), ready("198.18.3.1", "node-a"),
				}}))
			},
			want:  `k8s:blast: two peers named "node-a": 198.18.3.1:5201 and 198.18.3.2:5201`,
			final: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t, func(f *fakeAPI, call int, w http.ResponseWriter, r *http.Request) {
				if tc.handle == nil {
					t.Errorf("request %s, want none", r.URL)
					return
				}
				tc.handle(f, call, w, r)
			})
			opt := api.opt
			if tc.opt != nil {
				tc.opt(&opt)
			}
			_, err := Discover(context.Background(), Source{Kind: Kubernetes, Name: "blast"}, opt)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error\n%v\nwant\n%s", err, tc.want)
			}
			if isFinal(err) != tc.final {
				t.Errorf("final: %v, want %v", isFinal(err), tc.final)
			}
			if errors.Is(err, ErrNoPeers) != tc.none {
				t.Errorf("wraps ErrNoPeers: %v, want %v", errors.Is(err, ErrNoPeers), tc.none)
			}
		})
	}
}

// TestWaitChurn: the agents of a DaemonSet come up one by one, and the
// API server fails once in between; Wait returns when there are 3.
func TestWaitChurn(t *testing.T) {
	api := newFakeAPI(t, func(_ *fakeAPI, call int, w http.ResponseWriter, _ *http.Request) {
		eps := []jsonEndpoint{
			ready("198.18.4.1", "node-a"),
			{Addresses: []string{"198.18.4.2"}, NodeName: "node-b", Conditions: map[string]bool{"ready": false}},
			{Addresses: []string{"198.18.4.3"}, NodeName: "node-c", Conditions: map[string]bool{"ready": false}},
		}
		switch {
		case call == 1:
			writeJSON(t, w, http.StatusOK, list("", jsonSlice{AddressType: "IPv4", Ports: agentPorts}))
			return
		case call == 3:
			writeJSON(t, w, http.StatusServiceUnavailable, map[string]any{"kind": "Status", "message": "try again"})
			return
		case call >= 5:
			eps[1], eps[2] = ready("198.18.4.2", "node-b"), ready("198.18.4.3", "node-c")
		}
		writeJSON(t, w, http.StatusOK, list("", jsonSlice{AddressType: "IPv4", Ports: agentPorts, Endpoints: eps}))
	})
	opt := api.opt
	opt.HTTPClient = api.srv.Client()
	got, err := Wait(context.Background(), Source{Kind: Kubernetes, Name: "blast"}, opt, 3, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	want := []Peer{
		{Name: "node-a", Host: "198.18.4.1", DataPort: 5201, ControlPort: 5202},
		{Name: "node-b", Host: "198.18.4.2", DataPort: 5201, ControlPort: 5202},
		{Name: "node-c", Host: "198.18.4.3", DataPort: 5201, ControlPort: 5202},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("peers (-want +got):\n%s", diff)
	}
	if calls, _, _ := api.seen(); calls != 5 {
		t.Errorf("%d requests, want 5 (none, 1, error, 1, 3)", calls)
	}
}

// TestWaitGivesUp: when ctx ends, Wait says how many it found.
func TestWaitGivesUp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	api := newFakeAPI(t, func(_ *fakeAPI, call int, w http.ResponseWriter, _ *http.Request) {
		if call == 3 {
			cancel()
		}
		writeJSON(t, w, http.StatusOK, list("", jsonSlice{AddressType: "IPv4", Ports: agentPorts, Endpoints: []jsonEndpoint{ready("198.18.5.1", "node-a")}}))
	})
	got, err := Wait(ctx, Source{Kind: Kubernetes, Name: "blast"}, api.opt, 3, time.Millisecond)
	want := "k8s:blast: found 1 of 3 agents wanted: context canceled"
	if err == nil || err.Error() != want || !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want %q wrapping context.Canceled", err, want)
	}
	if len(got) != 1 {
		t.Errorf("peers %v, want the one found", got)
	}
}

// TestWaitFinal: Wait does not poll on an error that polling cannot mend.
func TestWaitFinal(t *testing.T) {
	api := newFakeAPI(t, func(_ *fakeAPI, call int, w http.ResponseWriter, _ *http.Request) {
		writeJSON(t, w, http.StatusForbidden, map[string]any{"kind": "Status", "message": "forbidden"})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a bound, should Wait poll on
	defer cancel()
	_, err := Wait(ctx, Source{Kind: Kubernetes, Name: "blast"}, api.opt, 3, time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "403 Forbidden") || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want the 403", err)
	}
	if calls, _, _ := api.seen(); calls != 1 {
		t.Errorf("%d requests, want 1", calls)
	}

	_, err = Wait(ctx, Source{Kind: File, Name: "testdata/no-such-peers.txt"}, Options{}, 3, time.Millisecond)
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("missing peers file: error %v, want it at once", err)
	}
}
