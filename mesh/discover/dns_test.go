package discover

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/dns/dnsmessage"
)

// dnsServer is a DNS server on 127.0.0.1 UDP that answers from a zone:
// the records of the name and type asked, NXDOMAIN for a name with no
// records, SERVFAIL for the names in servfail.
type dnsServer struct {
	pc       net.PacketConn
	zone     []dnsmessage.Resource
	servfail map[string]bool

	mu      sync.Mutex
	queries []string // "TYPE name", in the order asked
}

func newDNSServer(t *testing.T, zone []dnsmessage.Resource, servfail ...string) *dnsServer {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &dnsServer{pc: pc, zone: zone, servfail: make(map[string]bool)}
	for _, n := range servfail {
		s.servfail[n] = true
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.serve(t)
	}()
	t.Cleanup(func() {
		pc.Close()
		<-done
	})
	return s
}

func (s *dnsServer) serve(t *testing.T) {
	buf := make([]byte, 1500)
	for {
		n, addr, err := s.pc.ReadFrom(buf)
		if err != nil {
			return // closed
		}
		resp, err := s.answer(buf[:n])
		if err != nil {
			t.Errorf("fake DNS server: %v", err)
			continue
		}
		s.pc.WriteTo(resp, addr)
	}
}

func (s *dnsServer) answer(query []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	name := strings.ToLower(q.Name.String())
	s.mu.Lock()
	s.queries = append(s.queries, strings.TrimPrefix(q.Type.String(), "Type")+" "+name)
	s.mu.Unlock()

	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	var answers []dnsmessage.Resource
	known := false
	for _, r := range s.zone {
		if strings.EqualFold(r.Header.Name.String(), name) {
			known = true
			if r.Header.Type == q.Type {
				answers = append(answers, r)
			}
		}
	}
	switch {
	case s.servfail[name]:
		rh.RCode = dnsmessage.RCodeServerFailure
	case !known:
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(make([]byte, 0, 512), rh)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	for _, r := range answers {
		var err error
		switch body := r.Body.(type) {
		case *dnsmessage.SRVResource:
			err = b.SRVResource(r.Header, *body)
		case *dnsmessage.AResource:
			err = b.AResource(r.Header, *body)
		case *dnsmessage.AAAAResource:
			err = b.AAAAResource(r.Header, *body)
		}
		if err != nil {
			return nil, err
		}
	}
	return b.Finish()
}

// resolver is a Go resolver that asks s only.
func (s *dnsServer) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp4", s.pc.LocalAddr().String())
	}}
}

func (s *dnsServer) asked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.queries...)
}

func rr(name string, typ dnsmessage.Type, body dnsmessage.ResourceBody) dnsmessage.Resource {
	return dnsmessage.Resource{
		Header: dnsmessage.ResourceHeader{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET, TTL: 30},
		Body:   body,
	}
}

func srvRR(name string, prio uint16, port uint16, target string) dnsmessage.Resource {
	return rr(name, dnsmessage.TypeSRV, &dnsmessage.SRVResource{Priority: prio, Weight: 10, Port: port, Target: dnsmessage.MustNewName(target)})
}

func addrRR(name, addr string) dnsmessage.Resource {
	a := netip.MustParseAddr(addr)
	if a.Is4() {
		return rr(name, dnsmessage.TypeA, &dnsmessage.AResource{A: a.As4()})
	}
	return rr(name, dnsmessage.TypeAAAA, &dnsmessage.AAAAResource{AAAA: a.As16()})
}

// The zone of the tests: names under mesh.test (RFC 6761), addresses
// from 198.18.0.0/15 and 2001:2::/48.
var testZone = []dnsmessage.Resource{
	// dns:mesh.test: SRV records, and A records the SRV records win over.
	srvRR("_blast._tcp.mesh.test.", 10, 5201, "node-a.agents.mesh.test."),
	srvRR("_blast._tcp.mesh.test.", 20, 5201, "node-a.agents.mesh.test."), // the same agent again
	srvRR("_blast._tcp.mesh.test.", 10, 6001, "node-b.agents.mesh.test."),
	srvRR("_blast._tcp.mesh.test.", 10, 5201, "node-gone.agents.mesh.test."), // no address (any more)
	addrRR("mesh.test.", "198.18.9.9"),
	addrRR("node-a.agents.mesh.test.", "2001:2::1"),
	addrRR("node-a.agents.mesh.test.", "198.18.0.11"),
	addrRR("node-a.agents.mesh.test.", "198.18.0.1"),
	addrRR("node-b.agents.mesh.test.", "2001:2::2"),
	addrRR("node-c.other.test.", "198.18.0.3"),

	// dns:_agents._tcp.mesh.test, as given: targets in two domains.
	srvRR("_agents._tcp.mesh.test.", 0, 7001, "node-a.agents.mesh.test."),
	srvRR("_agents._tcp.mesh.test.", 0, 7001, "node-c.other.test."),

	// dns:two.mesh.test: two agents on one host.
	srvRR("_blast._tcp.two.mesh.test.", 0, 5201, "node-b.agents.mesh.test."),
	srvRR("_blast._tcp.two.mesh.test.", 0, 5203, "node-b.agents.mesh.test."),

	// dns:kube.mesh.test: the records Kubernetes makes for a headless
	// Service's port named "data".
	srvRR("_data._tcp.kube.mesh.test.", 0, 5201, "node-b.agents.mesh.test."),
	// dns:hosts.mesh.test: the SRV lookup fails (SERVFAIL, as when no
	// server answers), an A record answers (as a hosts file does).
	addrRR("hosts.mesh.test.", "198.18.0.5"),
	// dns:flat.mesh.test: no SRV records (NXDOMAIN), A and AAAA.
	addrRR("flat.mesh.test.", "198.18.0.4"),
	addrRR("flat.mesh.test.", "198.18.0.3"),
	addrRR("flat.mesh.test.", "2001:2::3"),

	// dns:six.mesh.test: an SRV name with no SRV record (NODATA), AAAA only.
	addrRR("_blast._tcp.six.mesh.test.", "198.18.9.9"),
	addrRR("six.mesh.test.", "2001:2::6"),
	addrRR("six.mesh.test.", "2001:2::5"),
}

func TestDNS(t *testing.T) {
	srv := newDNSServer(t, testZone)
	for _, tc := range []struct {
		spec  string
		want  []Peer
		asked []string // the first questions, in order
	}{
		{
			spec: "dns:mesh.test",
			want: []Peer{
				{Name: "node-a", Host: "198.18.0.1", DataPort: 5201, ControlPort: 5202},
				{Name: "node-b", Host: "2001:2::2", DataPort: 6001, ControlPort: 6002},
			},
			asked: []string{"SRV _blast._tcp.mesh.test."},
		},
		{
			spec: "dns:_agents._tcp.mesh.test.",
			want: []Peer{
				{Name: "node-a.agents.mesh.test", Host: "198.18.0.1", DataPort: 7001, ControlPort: 7002},
				{Name: "node-c.other.test", Host: "198.18.0.3", DataPort: 7001, ControlPort: 7002},
			},
			asked: []string{"SRV _agents._tcp.mesh.test."},
		},
		{
			spec: "dns:two.mesh.test",
			want: []Peer{
				{Name: "node-b:5201", Host: "2001:2::2", DataPort: 5201, ControlPort: 5202},
				{Name: "node-b:5203", Host: "2001:2::2", DataPort: 5203, ControlPort: 5204},
			},
			asked: []string{"SRV _blast._tcp.two.mesh.test."},
		},
		{
			spec: "dns:flat.mesh.test",
			want: []Peer{
				{Name: "198.18.0.3", Host: "198.18.0.3", DataPort: 5201, ControlPort: 5202},
				{Name: "198.18.0.4", Host: "198.18.0.4", DataPort: 5201, ControlPort: 5202},
			},
			asked: []string{"SRV _blast._tcp.flat.mesh.test."},
		},
		{
			spec: "dns:six.mesh.test",
			want: []Peer{
				{Name: "2001:2::5", Host: "2001:2::5", DataPort: 5201, ControlPort: 5202},
				{Name: "2001:2::6", Host: "2001:2::6", DataPort: 5201, ControlPort: 5202},
			},
			asked: []string{"SRV _blast._tcp.six.mesh.test."},
		},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			src, err := Parse(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			before := len(srv.asked())
			got, err := Discover(context.Background(), src, Options{Resolver: srv.resolver()})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("peers (-want +got):\n%s", diff)
			}
			asked := srv.asked()[before:]
			if len(asked) < len(tc.asked) || !cmp.Equal(tc.asked, asked[:len(tc.asked)]) {
				t.Errorf("asked %q, want first %q", asked, tc.asked)
			}
		})
	}
	t.Run("SRV records win over A records", func(t *testing.T) {
		for _, q := range srv.asked() {
			if q == "A mesh.test." || q == "AAAA mesh.test." {
				t.Errorf("asked %s although mesh.test has SRV records", q)
			}
		}
	})
}

func TestDNSErrors(t *testing.T) {
	srv := newDNSServer(t, testZone, "_blast._tcp.broken.mesh.test.", "_blast._tcp.hosts.mesh.test.")
	opt := Options{Resolver: srv.resolver()}

	_, err := Discover(context.Background(), Source{Kind: DNS, Name: "gone.mesh.test"}, opt)
	wantStart := "dns:gone.mesh.test: no peers found: no SRV records at _data._tcp.gone.mesh.test and no A or AAAA records at gone.mesh.test: lookup gone.mesh.test"
	if err == nil || !strings.HasPrefix(err.Error(), wantStart) || !strings.HasSuffix(err.Error(), ": no such host") {
		t.Errorf("NXDOMAIN: error %v, want %q ... %q", err, wantStart, ": no such host")
	}
	if !errors.Is(err, ErrNoPeers) || isFinal(err) {
		t.Errorf("NXDOMAIN: error %v does not wrap ErrNoPeers or is final: Wait would not poll on", err)
	}

	// The SRV lookup fails and NAME has no A records: the SRV error.
	_, err = Discover(context.Background(), Source{Kind: DNS, Name: "broken.mesh.test"}, opt)
	wantStart = "dns:broken.mesh.test: look up SRV _blast._tcp.broken.mesh.test: lookup _blast._tcp.broken.mesh.test"
	var de *net.DNSError
	if err == nil || !strings.HasPrefix(err.Error(), wantStart) || !errors.As(err, &de) {
		t.Errorf("SERVFAIL: error %v, want %q...", err, wantStart)
	}
	if errors.Is(err, ErrNoPeers) || isFinal(err) {
		t.Errorf("SERVFAIL: error %v is ErrNoPeers or final", err)
	}
	for _, q := range srv.asked() {
		if strings.HasPrefix(q, "SRV _data._tcp.broken") {
			t.Errorf("asked %s after the SRV lookup failed: a failure is not an absence", q)
		}
	}

	// The SRV lookup fails, A answers: the agents of the A records.
	got, err := Discover(context.Background(), Source{Kind: DNS, Name: "hosts.mesh.test"}, opt)
	if err != nil {
		t.Fatalf("SERVFAIL with an A record: %v", err)
	}
	want := []Peer{{Name: "198.18.0.5", Host: "198.18.0.5", DataPort: 5201, ControlPort: 5202}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SERVFAIL with an A record (-want +got):\n%s", diff)
	}

	// _data._tcp.NAME when there is no _blast._tcp.NAME.
	got, err = Discover(context.Background(), Source{Kind: DNS, Name: "kube.mesh.test"}, opt)
	if err != nil {
		t.Fatalf("_data._tcp: %v", err)
	}
	if len(got) != 1 || got[0].Host != "2001:2::2" || got[0].DataPort != 5201 {
		t.Errorf("_data._tcp.kube.mesh.test: %+v, want node-b on 5201", got)
	}
}

func TestShortNames(t *testing.T) {
	for _, tc := range []struct {
		targets []string
		want    map[string]string
	}{
		{[]string{"a.x.test", "b.x.test"}, map[string]string{"a.x.test": "a", "b.x.test": "b"}},
		{[]string{"a.x.test", "b.y.test"}, map[string]string{"a.x.test": "a.x.test", "b.y.test": "b.y.test"}},
		{[]string{"a.x.test", "x.test"}, map[string]string{"a.x.test": "a.x.test", "x.test": "x.test"}},
		{[]string{"a.x.test"}, map[string]string{"a.x.test": "a"}},
		{[]string{"agent"}, map[string]string{"agent": "agent"}},
	} {
		if diff := cmp.Diff(tc.want, shortNames(tc.targets)); diff != "" {
			t.Errorf("shortNames(%q) (-want +got):\n%s", tc.targets, diff)
		}
	}
}
