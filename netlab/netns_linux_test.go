package netlab_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

// privateMountsEnv marks the copy of the test binary that runs in a mount
// namespace of its own.
const privateMountsEnv = "NETLAB_TEST_PRIVATE_MOUNTS"

// TestCloseAfterIPNetnsAdd: the first `ip netns add` on a host, run while
// a lab lives, binds /run/netns over itself; the lab's Close still
// removes its namespaces. It runs in a copy of the test binary in a mount
// namespace of its own (private: no mount propagates to the host's), where
// /run/netns is a plain directory again, as on a host where no `ip netns
// add` ran since boot.
func TestCloseAfterIPNetnsAdd(t *testing.T) {
	labtest.RequireRoot(t)
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatal("the lab's commands need ip (iproute2):", err)
	}
	if os.Getenv(privateMountsEnv) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCloseAfterIPNetnsAdd$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), privateMountsEnv+"=1")
		// Go makes / private (recursively) in the new mount namespace.
		cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestCloseAfterIPNetnsAdd") {
			t.Fatalf("in a mount namespace of its own: %v\n%s", err, out)
		}
		return
	}
	// Each unmount takes one mount off the stack at /run/netns; EINVAL
	// says none is left.
	for unix.Unmount("/run/netns", unix.MNT_DETACH) == nil {
	}
	lab, err := netlab.New(netlab.Direct, netlab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{lab.A.Name, lab.B.Name}
	other := fmt.Sprintf("blast-%d-ipnetns", os.Getpid())
	out, err := exec.Command("ip", "netns", "add", other).CombinedOutput()
	if err != nil {
		lab.Close()
		t.Fatalf("ip netns add %s: %v\n%s", other, err, out)
	}
	defer func() {
		if out, err := exec.Command("ip", "netns", "del", other).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v\n%s", other, err, out)
		}
	}()
	if err := lab.Close(); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if _, err := os.Stat("/run/netns/" + n); err == nil {
			t.Errorf("namespace %s still exists after Close", n)
		}
	}
}
