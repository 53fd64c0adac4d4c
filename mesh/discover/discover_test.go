package discover

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want Source
	}{
		{"peers.txt", Source{Kind: File, Name: "peers.txt"}},
		{"/etc/blast/peers", Source{Kind: File, Name: "/etc/blast/peers"}},
		{"dns:agents.lab.test", Source{Kind: DNS, Name: "agents.lab.test"}},
		{"dns:_blast._tcp.blast.ns.svc.cluster.local.", Source{Kind: DNS, Name: "_blast._tcp.blast.ns.svc.cluster.local."}},
		{"dns:blast", Source{Kind: DNS, Name: "blast"}},
		{"k8s:blast", Source{Kind: Kubernetes, Name: "blast"}},
		{"k8s:mesh-1/blast-agents", Source{Kind: Kubernetes, Name: "blast-agents", Namespace: "mesh-1"}},
	} {
		got, err := Parse(tc.spec)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.spec, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Parse(%q) (-want +got):\n%s", tc.spec, diff)
		}
		if got.String() != tc.spec {
			t.Errorf("Parse(%q).String() = %q", tc.spec, got)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"", "empty peers spec: want FILE, dns:NAME or k8s:[NAMESPACE/]SERVICE"},
		{"dns:", `peers "dns:": "" is not a DNS name`},
		{"dns:a..b", `peers "dns:a..b": "a..b" is not a DNS name`},
		{"dns:agents lab", `peers "dns:agents lab": "agents lab" is not a DNS name`},
		{"dns:" + strings.Repeat("a", 64) + ".test", `peers "dns:` + strings.Repeat("a", 64) + `.test": "` + strings.Repeat("a", 64) + `.test" is not a DNS name`},
		{"k8s:", `peers "k8s:": service "" is not a DNS label (lower case letters, digits and '-', at most 63)`},
		{"k8s:Blast", `peers "k8s:Blast": service "Blast" is not a DNS label (lower case letters, digits and '-', at most 63)`},
		{"k8s:ns/", `peers "k8s:ns/": service "" is not a DNS label (lower case letters, digits and '-', at most 63)`},
		{"k8s:/blast", `peers "k8s:/blast": namespace "" is not a DNS label (lower case letters, digits and '-', at most 63)`},
		{"k8s:a/b/c", `peers "k8s:a/b/c": service "b/c" is not a DNS label (lower case letters, digits and '-', at most 63)`},
		{"k8s:-ns/blast", `peers "k8s:-ns/blast": namespace "-ns" is not a DNS label (lower case letters, digits and '-', at most 63)`},
	} {
		_, err := Parse(tc.spec)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Parse(%q): error\n%v\nwant\n%s", tc.spec, err, tc.want)
		}
	}
}

func TestTidy(t *testing.T) {
	p := func(name, host string, port int) Peer {
		return Peer{Name: name, Host: host, DataPort: port, ControlPort: port + 1}
	}
	for _, tc := range []struct {
		name    string
		in      []Peer
		want    []Peer
		wantErr string
	}{
		{
			name: "sorted by name",
			in:   []Peer{p("c", "198.18.0.3", 5201), p("a", "198.18.0.1", 5201), p("b", "198.18.0.2", 5201)},
			want: []Peer{p("a", "198.18.0.1", 5201), p("b", "198.18.0.2", 5201), p("c", "198.18.0.3", 5201)},
		},
		{
			name: "one per address and port: the first name",
			in:   []Peer{p("b", "198.18.0.1", 5201), p("a", "198.18.0.1", 5201), p("c", "198.18.0.1", 5301)},
			want: []Peer{p("a", "198.18.0.1", 5201), p("c", "198.18.0.1", 5301)},
		},
		{
			name: "the same peer twice",
			in:   []Peer{p("a", "198.18.0.1", 5201), p("a", "198.18.0.1", 5201)},
			want: []Peer{p("a", "198.18.0.1", 5201)},
		},
		{
			name:    "one name, two peers",
			in:      []Peer{p("a", "2001:2::2", 5201), p("b", "198.18.0.9", 5201), p("a", "198.18.0.1", 5201)},
			wantErr: `src: two peers named "a": 198.18.0.1:5201 and [2001:2::2]:5201`,
		},
		{
			name:    "none",
			wantErr: "src: no peers found",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tidy("src", tc.in)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("peers (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := tidy("src", nil); !errors.Is(err, ErrNoPeers) {
		t.Errorf("no peers: error %v does not wrap ErrNoPeers", err)
	}
}

func TestDataPortOption(t *testing.T) {
	for _, port := range []int{-1, 65536} {
		_, err := Discover(t.Context(), Source{Kind: File, Name: "testdata/peers.txt"}, Options{DataPort: port})
		if err == nil || !isFinal(err) || !strings.Contains(err.Error(), "want 1 to 65535") {
			t.Errorf("DataPort %d: error %v, want a final one", port, err)
		}
	}
}
