package mesh_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/internal/blasttest"
	"github.com/blastnet/blast/internal/testkit"
	"github.com/blastnet/blast/mesh"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

func TestMain(m *testing.M) { blasttest.Main(m, true) }

const labToken = "lab-token-0123456789abcdef"

// fleet is a bridged lab with an agent in every host.
type fleet struct {
	lab   *netlab.Bridged
	dir   string
	token string // the token file
	names []string
}

// newFleet builds n hosts on a bridge and starts `blast agent` in each,
// named node-0 .. node-(n-1), and waits until each has both ports open.
func newFleet(t *testing.T, n int) *fleet {
	t.Helper()
	lab := labtest.NewBridged(t, n, netlab.BridgeOptions{})
	f := &fleet{lab: lab, dir: t.TempDir()}
	f.token = filepath.Join(f.dir, "token")
	if err := os.WriteFile(f.token, []byte(labToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, h := range lab.Hosts {
		name := fmt.Sprintf("node-%d", i)
		f.names = append(f.names, name)
		p := blasttest.Listening(t, h, "tcp", 5201, blasttest.Bin, "agent", "--token-file", f.token, "--name", name)
		if err := waitControl(p, h); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// waitControl waits until the agent's control port listens too.
func waitControl(p *blasttest.Proc, h *netlab.Host) error {
	if !testkit.Eventually(30*time.Second, func() bool { return strings.Contains(p.Stdout.String(), "control on") }) {
		return fmt.Errorf("agent in %s: no control port after 30 s\nstdout: %s\nstderr: %s", h.Name, p.Stdout.String(), p.Stderr.String())
	}
	return nil
}

// peersFile writes the fleet's peers file and returns its path.
func (f *fleet) peersFile(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("# the lab's agents\n")
	for i, h := range f.lab.Hosts {
		fmt.Fprintf(&b, "%s %s\n", f.names[i], h.Addr4)
	}
	path := filepath.Join(f.dir, "peers.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// blast runs blast with args in host 0 and returns stdout, stderr and the
// exit status.
func (f *fleet) blast(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	p := blasttest.Start(t, f.lab.Hosts[0], nil, blasttest.Bin, args...)
	err := p.WaitErr(3 * time.Minute)
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%v: %v\nstderr: %s", args, err, p.Stderr.String())
	}
	return p.Stdout.String(), p.Stderr.String(), code
}

func decode(t *testing.T, out string) *mesh.Document {
	t.Helper()
	var d mesh.Document
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("stdout is not one mesh document: %v\n%s", err, out)
	}
	if dec.More() {
		t.Fatalf("stdout has more than one document:\n%s", out)
	}
	return &d
}

// slowLinkMesh is the mesh of TestMeshPairsFindsTheSlowLink: four
// agents, host slow's link shaped to slowMbit, every ordered pair once.
const (
	slow     = 3
	slowMbit = 20
)

func slowLinkMesh(t *testing.T) (*fleet, string) {
	f := newFleet(t, 4)
	if err := f.lab.Shape(slow, slowMbit); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := f.blast(t, "mesh", "--peers", f.peersFile(t), "--token-file", f.token, "-t", "1", "-P", "2")
	if code != 0 {
		t.Fatalf("blast mesh: exit %d\nstderr: %s", code, stderr)
	}
	return f, out
}

// shapedCell tells whether c runs through the shaped link.
func (f *fleet) shapedCell(c mesh.Cell) bool { return c.Src == f.names[slow] || c.Dst == f.names[slow] }

// TestMeshPairsFindsTheSlowLink: four agents, one link shaped to
// 20 Mbit/s. Every ordered pair is measured once, the cells to and from
// the shaped host are at most at its rate, and the report names the host
// (the median falls between the shaped cells and the others, whatever
// the host's speed: only the shaped ones are below it). That the shaped
// cells reach their rate and the others run far above is the host's to
// decide: TestTimingMeshSlowLink.
func TestMeshPairsFindsTheSlowLink(t *testing.T) {
	f, out := slowLinkMesh(t)
	d := decode(t, out)
	if d.Meta.Tool != "blast" || d.Meta.Mode != "pairs" || d.Meta.Rounds != 3 || d.Meta.Tests != 12 || len(d.Nodes) != 4 {
		t.Errorf("meta %+v with %d nodes: want pairs, 3 rounds, 12 tests, 4 nodes", d.Meta, len(d.Nodes))
	}
	seen := map[string]bool{}
	for _, c := range d.Cells {
		key := c.Src + ">" + c.Dst
		if seen[key] || c.Src == c.Dst {
			t.Errorf("cell %s twice or to itself", key)
		}
		seen[key] = true
		if c.Err != "" || c.Attempts != 1 || c.Proto != "tcp" || c.Dir != "up" {
			t.Errorf("cell %s: err %q, %d attempts, %s %s", key, c.Err, c.Attempts, c.Proto, c.Dir)
			continue
		}
		if want := 8 * float64(c.Bytes) / c.Seconds; c.Bps != want || c.Bytes == 0 || c.Seconds < 0.9 {
			t.Errorf("cell %s: %.0f bit/s over %.2f s from %d bytes: want some bytes over at least 1 s", key, c.Bps, c.Seconds, c.Bytes)
		}
		if f.shapedCell(c) && c.Bps > 1.05*slowMbit*1e6 {
			t.Errorf("cell %s through the %d Mbit/s link: %.1f Mbit/s", key, slowMbit, c.Bps/1e6)
		}
		if c.NIC == "" || c.CPU.Src <= 0 {
			t.Errorf("cell %s: no interfaces (%q) or CPU (%+v)", key, c.NIC, c.CPU)
		}
	}
	if len(seen) != 12 {
		t.Errorf("%d distinct cells, want 12", len(seen))
	}

	path := filepath.Join(f.dir, "mesh.json")
	if err := os.WriteFile(path, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, stderr, code := f.blast(t, "mesh", "report", path, "--csv", filepath.Join(f.dir, "mesh.csv"), "--plot", filepath.Join(f.dir, "mesh.svg"))
	if code != 0 {
		t.Fatalf("blast mesh report: exit %d\nstderr: %s", code, stderr)
	}
	var named bool
	for _, line := range strings.Split(rep, "\n") {
		if strings.Contains(line, f.names[slow]) && strings.Contains(line, "suspect its NIC or link") {
			named = true
		}
		for i, n := range f.names {
			if i != slow && strings.Contains(line, n) && strings.Contains(line, "suspect") {
				t.Errorf("report suspects %s, which is not shaped: %s", n, line)
			}
		}
	}
	if !named {
		t.Errorf("the report does not name %s as suspect:\n%s", f.names[slow], rep)
	}
	csv, err := os.ReadFile(filepath.Join(f.dir, "mesh.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(csv, []byte("\n")); n != 13 {
		t.Errorf("mesh.csv has %d lines, want a header and 12 cells:\n%s", n, csv)
	}
	svg, err := os.ReadFile(filepath.Join(f.dir, "mesh.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range f.names {
		if !bytes.Contains(svg, []byte(n)) {
			t.Errorf("mesh.svg does not name %s", n)
		}
	}
}

// TestMeshDNSFanIn finds the agents through dns: (the namespace's hosts
// file, as a resolver would answer A records), and runs a fan-in with a
// baseline: each client alone, then all at once. (That those start
// together is TestRunCommonStart's, on the mesh's clock, and
// TestTimingMeshFanInStart's, on this host's.)
func TestMeshDNSFanIn(t *testing.T) {
	f := newFleet(t, 4)
	d := f.fanIn(t)
	server := f.lab.Hosts[0].Addr4.String()
	if len(d.Nodes) != 4 || len(d.Cells) != 6 || d.Meta.Mode != "fan-in:"+server || !d.Meta.Test.Baseline {
		t.Fatalf("%d nodes, %d cells, meta %+v: want 4 nodes, 6 cells (3 alone, 3 at once)", len(d.Nodes), len(d.Cells), d.Meta)
	}
	for i, c := range d.Cells {
		if c.Dst != server || c.Src == server || c.Err != "" || c.Bytes == 0 {
			t.Errorf("cell %d: %s -> %s (err %q, %d bytes): want a client to %s", i, c.Src, c.Dst, c.Err, c.Bytes, server)
		}
		if wantBase := i < 3; (c.Phase == "baseline") != wantBase {
			t.Errorf("cell %d: phase %q", i, c.Phase)
		}
	}
}

// fanIn runs TestMeshDNSFanIn's mesh: the agents found by dns:, a fan-in
// to host 0 with a baseline.
func (f *fleet) fanIn(t *testing.T) *mesh.Document {
	t.Helper()
	var hosts strings.Builder
	for _, h := range f.lab.Hosts {
		fmt.Fprintf(&hosts, "%s agents.lab\n", h.Addr4)
	}
	if err := f.lab.WriteHosts(hosts.String()); err != nil {
		t.Fatal(err)
	}
	server := f.lab.Hosts[0].Addr4.String() // named by address: A records carry no names
	out, stderr, code := f.blast(t, "mesh", "--peers", "dns:agents.lab", "--token-file", f.token,
		"--mode", "fan-in:"+server, "--baseline", "-t", "1", "-P", "1")
	if code != 0 {
		t.Fatalf("blast mesh: exit %d\nstderr: %s", code, stderr)
	}
	return decode(t, out)
}

// TestMeshErrors: a wrong token and an agent that is not there are
// recorded in the document (exit 1), and bad flags are usage errors.
func TestMeshErrors(t *testing.T) {
	f := newFleet(t, 2)
	peers := f.peersFile(t)
	// A third peer with no agent.
	b, _ := os.ReadFile(peers)
	os.WriteFile(peers, append(b, []byte("ghost 198.18.10.99\n")...), 0o600)
	out, stderr, code := f.blast(t, "mesh", "--peers", peers, "--token-file", f.token, "-t", "1", "-P", "1")
	if code != 1 || !strings.Contains(stderr, "blast mesh: 1 of 3 agents did not answer (see the cells' and nodes' err)") {
		t.Errorf("mesh with a ghost: exit %d, stderr:\n%s", code, stderr)
	}
	d := decode(t, out)
	if len(d.Cells) != 2 || d.Cells[0].Err != "" || d.Cells[1].Err != "" {
		t.Errorf("cells %+v: want the 2 tests between the live agents", d.Cells)
	}
	var ghost *mesh.Node
	for i := range d.Nodes {
		if d.Nodes[i].Name == "ghost" {
			ghost = &d.Nodes[i]
		}
	}
	if ghost == nil || !strings.HasPrefix(ghost.Err, "agent 198.18.10.99:5202: ") {
		t.Errorf("ghost node: %+v", ghost)
	}

	bad := filepath.Join(f.dir, "bad-token")
	os.WriteFile(bad, []byte("another-token-0123456789"), 0o600)
	_, stderr, code = f.blast(t, "mesh", "--peers", f.peersFile(t), "--token-file", bad, "-t", "1")
	if code != 1 || !strings.Contains(stderr, "the agent refused the token") {
		t.Errorf("wrong token: exit %d, stderr:\n%s", code, stderr)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mesh"}, "blast mesh: no --peers: give a file of 'NAME ADDRESS[:PORT]' lines, dns:NAME or k8s:SERVICE\n"},
		{[]string{"mesh", "--peers", peers, "-t", "0.5"}, "blast mesh: -t 0.5: must be 1 to 3600 seconds\n"},
		{[]string{"mesh", "--peers", peers, "--baseline"}, "blast mesh: --baseline is for --mode fan-in\n"},
		{[]string{"mesh", "--peers", peers, "-b", "1G/10"}, "blast mesh: -b 1G/10: give a rate such as 500M or 2G (no /BURST in a mesh)\n"},
		{[]string{"mesh", "report"}, "blast mesh report: give one mesh document (what blast mesh wrote), such as mesh.json\n"},
	} {
		_, stderr, code := f.blast(t, tc.args...)
		if code != 2 || stderr != tc.want {
			t.Errorf("%v: exit %d, stderr %q; want 2, %q", tc.args, code, stderr, tc.want)
		}
	}
}
