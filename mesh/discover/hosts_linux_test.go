package discover

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/netlab/labtest"
)

// hostsEnv names the hosts file TestHostsFile's child mounts on
// /etc/hosts.
const hostsEnv = "BLAST_DISCOVER_TEST_HOSTS"

// TestHostsFile does what `ip netns exec` does with /etc/netns/NS/hosts:
// it runs itself again in a mount namespace of its own with a hosts file
// bound on /etc/hosts, in which dns:NAME must find one agent for each
// line that names NAME, with DNS answering NXDOMAIN to everything.
func TestHostsFile(t *testing.T) {
	if path := os.Getenv(hostsEnv); path != "" {
		hostsChild(t, path)
		return
	}
	labtest.RequireRoot(t)
	hosts := filepath.Join(t.TempDir(), "hosts")
	const lines = "127.0.0.1 localhost\n" +
		"198.18.0.2 agents.lab.test\n" +
		"198.18.0.3 other.lab.test agents.lab.test # an alias\n" +
		"198.18.0.4 other.lab.test\n"
	if err := os.WriteFile(hosts, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostsFile$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), hostsEnv+"="+hosts)
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS} // Go makes its mounts private
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the test in a mount namespace: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "looked agents.lab.test up") {
		t.Fatalf("the test in a mount namespace did not run:\n%s", out)
	}
}

func hostsChild(t *testing.T, path string) {
	if err := unix.Mount(path, "/etc/hosts", "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind %s on /etc/hosts: %v", path, err)
	}
	srv := newDNSServer(t, nil) // NXDOMAIN for all
	got, err := Discover(context.Background(), Source{Kind: DNS, Name: "agents.lab.test"}, Options{Resolver: srv.resolver()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("looked agents.lab.test up: %v", got)
	want := []Peer{
		{Name: "198.18.0.2", Host: "198.18.0.2", DataPort: 5201, ControlPort: 5202},
		{Name: "198.18.0.3", Host: "198.18.0.3", DataPort: 5201, ControlPort: 5202},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("peers from the hosts file (-want +got):\n%s", diff)
	}
}
