package discover

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
)

// FuzzPeersFile: a peers file parses or fails, and what parses keeps
// the file's promises.
func FuzzPeersFile(f *testing.F) {
	f.Add([]byte("node-a 198.18.0.1\nnode-b [2001:2::2]:5301 # b\n"))
	f.Add([]byte("node-a 2001:2::1\n\n# x\nnode-b agent-b.lab.test:9\n"))
	f.Fuzz(func(t *testing.T, file []byte) {
		peers, err := parseFile("peers.txt", strings.NewReader(string(file)), DefaultDataPort)
		if err != nil {
			if !isFinal(err) || !strings.HasPrefix(err.Error(), "peers.txt") {
				t.Fatalf("error %q: want a final one naming the file", err)
			}
			return
		}
		names := make(map[string]bool)
		for _, p := range peers {
			if p.Name == "" || names[p.Name] || strings.ContainsAny(p.Name, " \t#") {
				t.Fatalf("name %q empty, repeated or with a space or #", p.Name)
			}
			names[p.Name] = true
			if p.DataPort < 1 || p.DataPort > 65534 || p.ControlPort != p.DataPort+1 {
				t.Fatalf("%s: ports %d and %d", p.Name, p.DataPort, p.ControlPort)
			}
			if a, err := netip.ParseAddr(p.Host); err == nil && a.String() != p.Host {
				t.Fatalf("%s: address %q is not canonical (%s)", p.Name, p.Host, a)
			}
		}
		if _, err := tidy("peers.txt", peers); err != nil {
			t.Fatalf("tidy: %v", err)
		}
	})
}

// FuzzEndpointSlices: whatever an API server sends, the agents taken
// from it have an address, a name and ports.
func FuzzEndpointSlices(f *testing.F) {
	f.Add([]byte(`{"metadata":{"continue":"x"},"items":[{"addressType":"IPv4","ports":[{"name":"data","port":5301}],"endpoints":[{"addresses":["198.18.0.1"],"nodeName":"a","conditions":{"ready":true}}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var list endpointSliceList
		if json.Unmarshal(body, &list) != nil {
			return
		}
		seen := make(map[string]bool)
		for _, p := range fromSlices(list.Items, DefaultDataPort) {
			a, err := netip.ParseAddr(p.Host)
			if err != nil || a.String() != p.Host || seen[p.Host] {
				t.Fatalf("host %q: not a canonical address, or twice", p.Host)
			}
			seen[p.Host] = true
			if p.Name == "" || p.DataPort < 1 || p.DataPort > 65535 || p.ControlPort < 0 || p.ControlPort > 65535 {
				t.Fatalf("peer %+v", p)
			}
		}
	})
}

// FuzzParse: a SPEC that parses prints as itself.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"peers.txt", "dns:agents.lab.test", "k8s:blast", "k8s:ns/blast"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		src, err := Parse(spec)
		if err != nil {
			return
		}
		if src.String() != spec {
			t.Fatalf("Parse(%q).String() = %q", spec, src)
		}
	})
}
