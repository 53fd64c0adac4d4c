package plot

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/mesh"
)

// meshDoc reads one of mesh's handmade documents.
func meshDoc(t *testing.T, name string) *mesh.Document {
	t.Helper()
	d, err := mesh.ReadFile(filepath.Join("..", "mesh", "testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// bigMesh is n nodes with long names, node 7 slow both ways, node 20's
// sending slow, a few failed tests.
func bigMesh(n int) *mesh.Document {
	d := &mesh.Document{Meta: mesh.Meta{Tool: "blast", Mode: "all", Rounds: 1, Started: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC),
		Test: mesh.Settings{Proto: "tcp", Seconds: 5, Streams: 8}}}
	name := func(i int) string { return fmt.Sprintf("blast-agent-%02d.blast.svc.cluster.local", i+1) }
	for i := range n {
		d.Nodes = append(d.Nodes, mesh.Node{Name: name(i), Addr: fmt.Sprintf("198.18.0.%d", i+1)})
	}
	for i := range n {
		for j := range n {
			if i == j {
				continue
			}
			bps := 24.6e9 * (0.97 + 0.06*float64((i*7+j*13)%10)/10)
			switch {
			case i == 6 || j == 6:
				bps = 2.4e9
			case i == 19:
				bps = 11e9
			}
			c := mesh.Cell{Src: name(i), Dst: name(j), Proto: "tcp", Dir: "up", Round: 1, Seconds: 5, Bps: bps}
			if j == 30 && i%4 == 0 {
				c.Bps, c.Err = 0, "node busy"
			}
			d.Cells = append(d.Cells, c)
		}
	}
	d.Meta.Tests = len(d.Cells)
	return d
}

func TestMesh(t *testing.T) {
	for _, c := range []struct {
		name string
		doc  func(t *testing.T) *mesh.Document
		want []string
	}{
		{"mesh-slow-link", func(t *testing.T) *mesh.Document { return meshDoc(t, "slow-link") },
			[]string{"blast mesh all: 5 nodes, tcp, -t 10, -P 4, 2026-03-02 10:00 UTC", "node-a", "node-e", "from (sender)",
				"to (receiver)", "goodput (Gbit/s)", "node-c low sending and receiving: suspect its NIC or", "9.37", "0.94"}},
		{"mesh-healthy", func(t *testing.T) *mesh.Document { return meshDoc(t, "healthy") },
			[]string{"node-a", "node-d", "goodput (Gbit/s)"}},
		{"mesh-failures", func(t *testing.T) *mesh.Document { return meshDoc(t, "failures") },
			[]string{"node-a", "node-d", "6 tests failed", "unreachable agents: node-e"}},
		{"mesh-udp", func(t *testing.T) *mesh.Document { return meshDoc(t, "udp-loss") },
			[]string{"udp", "node-b", "goodput (Mbit/s)", "580", "most datagrams lost: node-c -&gt; node-b, 42%"}},
		{"mesh-fan-in", func(t *testing.T) *mesh.Document { return meshDoc(t, "fan-in") },
			[]string{"tcp up baseline", "tcp up", "rack1-host-a", "rack1-host-f"}},
		{"mesh-40", func(*testing.T) *mesh.Document { return bigMesh(40) },
			[]string{"01", "40", "Names without", "07 low sending and receiving: suspect its NIC or link", "20 low only when sending"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := c.doc(t)
			dir := t.TempDir()
			svg, pngPath := filepath.Join(dir, c.name+".svg"), filepath.Join(dir, c.name+".png")
			for _, p := range []string{svg, pngPath} {
				if err := Mesh(p, d); err != nil {
					t.Fatalf("draw %s: %v", p, err)
				}
			}
			b, err := os.ReadFile(svg)
			if err != nil {
				t.Fatal(err)
			}
			texts := checkSVG(t, b)
			want := c.want
			a := mesh.Analyze(d)
			// Every node's name, as the axes shorten it.
			var all []string
			seen := map[string]bool{}
			for _, m := range a.Matrices[:min(2, len(a.Matrices))] {
				for _, n := range append(append([]string(nil), m.Senders...), m.Receivers...) {
					if !seen[n] {
						seen[n] = true
						all = append(all, n)
					}
				}
			}
			short, _ := mesh.ShortNames(all)
			for _, n := range short {
				want = append(want, ">"+n+"<")
			}
			for _, w := range want {
				if !strings.Contains(string(b), w) {
					t.Errorf("SVG has no text %q; its texts:\n%s", w, strings.Join(texts, "\n"))
				}
			}
			checkPNG(t, pngPath)
			if *keep != "" {
				for _, p := range []string{svg, pngPath} {
					b, _ := os.ReadFile(p)
					if err := os.WriteFile(filepath.Join(*keep, filepath.Base(p)), b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
}

func TestMeshErrors(t *testing.T) {
	dir := t.TempDir()
	if err := Mesh(filepath.Join(dir, "m.pdf"), bigMesh(3)); !errors.Is(err, ErrFormat) {
		t.Errorf("pdf: %v, want ErrFormat", err)
	}
	if err := Mesh(filepath.Join(dir, "m.svg"), nil); err == nil {
		t.Error("nil document: no error")
	}
	empty := &mesh.Document{Meta: mesh.Meta{Tool: "blast"}}
	if err := Mesh(filepath.Join(dir, "m.svg"), empty); err == nil || !strings.Contains(err.Error(), "no tests") {
		t.Errorf("empty document: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "m.svg")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a failed draw wrote its file")
	}
}
