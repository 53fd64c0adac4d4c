package discover

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFileGood(t *testing.T) {
	src, err := Parse("testdata/peers.txt")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Discover(context.Background(), src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Peer{
		{Name: "node-a", Host: "198.18.0.1", DataPort: 5201, ControlPort: 5202},
		{Name: "node-b", Host: "198.18.0.2", DataPort: 6001, ControlPort: 6002},
		{Name: "node-c", Host: "2001:2::3", DataPort: 5201, ControlPort: 5202},
		{Name: "node-d", Host: "2001:2::4", DataPort: 7001, ControlPort: 7002},
		{Name: "node-e", Host: "2001:2::5", DataPort: 5201, ControlPort: 5202},
		{Name: "node-f", Host: "agent-f.lab.test", DataPort: 5301, ControlPort: 5302},
		{Name: "node-g", Host: "agent-g.lab.test.", DataPort: 5201, ControlPort: 5202},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("peers (-want +got):\n%s", diff)
	}
	if a, c := got[3].DataAddr(), got[3].ControlAddr(); a != "[2001:2::4]:7001" || c != "[2001:2::4]:7002" {
		t.Errorf("addresses of %s: %s and %s, want [2001:2::4]:7001 and [2001:2::4]:7002", got[3].Name, a, c)
	}
}

func TestFileDataPortOption(t *testing.T) {
	got, err := parseFile("peers.txt", strings.NewReader("a 198.18.0.1\nb 198.18.0.2:5201\n"), 6000)
	if err != nil {
		t.Fatal(err)
	}
	want := []Peer{
		{Name: "a", Host: "198.18.0.1", DataPort: 6000, ControlPort: 6001},
		{Name: "b", Host: "198.18.0.2", DataPort: 5201, ControlPort: 5202},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("peers (-want +got):\n%s", diff)
	}
}

func TestFileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
	}{
		{"no address", "node-a 198.18.0.1\n# c\nnode-c\n",
			`peers.txt:3: "node-c" has no address: want NAME ADDRESS[:PORT]`},
		{"no address before a comment", "node-c # 198.18.0.3\n",
			`peers.txt:1: "node-c" has no address: want NAME ADDRESS[:PORT]`},
		{"too many fields", "node-a 198.18.0.1 5201\n",
			`peers.txt:1: "node-a 198.18.0.1 5201": too many fields: want NAME ADDRESS[:PORT]`},
		{"port zero", "node-a 198.18.0.1:0\n",
			`peers.txt:1: "node-a": bad port "0" in "198.18.0.1:0": want 1 to 65534 (the control port is PORT+1)`},
		{"port too big", "node-a 198.18.0.1:65535\n",
			`peers.txt:1: "node-a": bad port "65535" in "198.18.0.1:65535": want 1 to 65534 (the control port is PORT+1)`},
		{"port with a sign", "node-a 198.18.0.1:+80\n",
			`peers.txt:1: "node-a": bad port "+80" in "198.18.0.1:+80": want 1 to 65534 (the control port is PORT+1)`},
		{"empty port", "node-a [2001:2::1]:\n",
			`peers.txt:1: "node-a": bad port "" in "[2001:2::1]:": want 1 to 65534 (the control port is PORT+1)`},
		{"bad IPv4", "node-a 198.18.0.300\n",
			`peers.txt:1: "node-a": bad address "198.18.0.300": want an IP address or a host name, then :PORT if any ([2001:2::1]:5201 for IPv6)`},
		{"bad IPv6", "node-a 2001:2::g\n",
			`peers.txt:1: "node-a": bad address "2001:2::g": want an IP address or a host name, then :PORT if any ([2001:2::1]:5201 for IPv6)`},
		{"IPv4 in brackets", "node-a [198.18.0.1]:5201\n",
			`peers.txt:1: "node-a": bad address "[198.18.0.1]:5201": not IPv6 in brackets: want an IP address or a host name, then :PORT if any ([2001:2::1]:5201 for IPv6)`},
		{"no closing bracket", "node-a [2001:2::1:5201\n",
			`peers.txt:1: "node-a": bad address "[2001:2::1:5201": no ]: want an IP address or a host name, then :PORT if any ([2001:2::1]:5201 for IPv6)`},
		{"junk after the bracket", "node-a [2001:2::1]5201\n",
			`peers.txt:1: "node-a": bad address "[2001:2::1]5201": want an IP address or a host name, then :PORT if any ([2001:2::1]:5201 for IPv6)`},
		{"bad host name", "node-a agent_a!.test\n",
			`peers.txt:1: "node-a": bad address "agent_a!.test": want an IP address or a host name, then :PORT if any ([2001:2::1]:5201 for IPv6)`},
		{"duplicate name", "node-a 198.18.0.1\nnode-b 198.18.0.2\n\nnode-a 198.18.0.3\n",
			`peers.txt:4: "node-a" again (first on line 1)`},
		{"duplicate address", "node-a 198.18.0.1\nnode-b 198.18.0.1:5201\n",
			`peers.txt:2: "node-b" has the address of the peer on line 1: 198.18.0.1:5201`},
		{"duplicate IPv6 address, written two ways", "node-a 2001:2::1\nnode-b [2001:2:0::1]:5201\n",
			`peers.txt:2: "node-b" has the address of the peer on line 1: [2001:2::1]:5201`},
		{"control character in a name", "node\x01 198.18.0.1\n",
			`peers.txt:1: name "node\x01" is not printable UTF-8`},
		{"not UTF-8", "node\xff 198.18.0.1\n",
			`peers.txt:1: name "node\xff" is not printable UTF-8`},
		{"empty", "", `peers.txt: no peers: want NAME ADDRESS[:PORT], one a line`},
		{"comments only", "# nothing yet\n\n", `peers.txt: no peers: want NAME ADDRESS[:PORT], one a line`},
		{"line too long", "node-a 198.18.0.1\n" + strings.Repeat("x", maxLineLen+1) + "\n",
			`peers.txt:2: line longer than 1024 bytes`},
		{"line far too long", "node-a 198.18.0.1\n\n" + strings.Repeat("x", 100_000),
			`peers.txt:3: line longer than 1024 bytes`},
		{"too many lines", strings.Repeat("# x\n", maxLines) + "node-a 198.18.0.1\n",
			`peers.txt: more than 100000 lines`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			peers, err := parseFile("peers.txt", strings.NewReader(tc.file), DefaultDataPort)
			if err == nil {
				t.Fatalf("no error, peers %v; want %s", peers, tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n%s\nwant\n%s", err, tc.want)
			}
			if !isFinal(err) {
				t.Errorf("error %q is not final: Wait would poll on", err)
			}
		})
	}
}

// The bounds are bounds, not off by one: a file just within them reads.
func TestFileAtTheBounds(t *testing.T) {
	long := "node-a 198.18.0.1 #" + strings.Repeat("x", maxLineLen-len("node-a 198.18.0.1 #"))
	if len(long) != maxLineLen {
		t.Fatalf("test line of %d bytes", len(long))
	}
	file := long + "\r\n" + strings.Repeat("\n", maxLines-2) + "node-b 198.18.0.2"
	got, err := parseFile("peers.txt", strings.NewReader(file), DefaultDataPort)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Errorf("%d peers, want 2: %v", len(got), got)
	}
}

func TestFileMissing(t *testing.T) {
	src := Source{Kind: File, Name: "testdata/no-such-peers.txt"}
	_, err := Discover(context.Background(), src, Options{})
	want := "peers file: open testdata/no-such-peers.txt: no such file or directory"
	if err == nil || err.Error() != want || !errors.Is(err, fs.ErrNotExist) || !isFinal(err) {
		t.Errorf("error %v, want final %q", err, want)
	}
}
