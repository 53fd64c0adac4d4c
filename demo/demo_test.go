package demo

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/blastnet/blast/internal/blasttest"
	"github.com/blastnet/blast/internal/testkit"
)

func TestMain(m *testing.M) { blasttest.Main(m, false) }

// buildBlast is the blast binary TestMain built (or make test's).
func buildBlast(t *testing.T) string {
	t.Helper()
	if blasttest.Bin == "" {
		t.Fatal("no blast binary: TestMain builds it")
	}
	return blasttest.Bin
}

func TestDemoLab(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the lab demo needs root (make test runs it as root)")
	}
	var out strings.Builder
	got, err := Run(context.Background(), Config{Exe: buildBlast(t), Out: &out, Root: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	want := []Result{
		{Title: "a plain veth link", Bytes: 1 << 30},
		{Title: "a veth link limited to 100 Mbit/s (tbf)", Bytes: 8 << 20},
		{Title: "a routed path: sender -> router -> receiver", Bytes: 1 << 30},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Result{}, "Secs", "Rate")); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	// The rate limit holds: 8 MiB through a 100 Mbit/s bucket takes at
	// least 0.6 s (a 64 KiB burst aside), whatever the machine's speed.
	if got[1].Secs < 0.6 {
		t.Errorf("8 MiB crossed the 100 Mbit/s link in %.2f s: the limit is not in the path", got[1].Secs)
	}
	for _, s := range []string{"blast-r: accept from 198.18.0.1", "blast-r: accept from 198.18.1.1", "== summary"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("demo output lacks %q", s)
		}
	}
	ents, _ := os.ReadDir("/run/netns")
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "blast-"+strconv.Itoa(os.Getpid())+"-") {
			t.Errorf("namespace %s left behind", e.Name())
		}
	}
}

func TestDemoLoopback(t *testing.T) {
	var out strings.Builder
	got, err := Run(context.Background(), Config{Exe: buildBlast(t), Out: &out, Root: false})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(got) != 1 || got[0].Bytes != 32768*8192 {
		t.Errorf("loopback results %+v, want one transfer of %d bytes", got, 32768*8192)
	}
	if !strings.HasPrefix(out.String(), "blast demo: not root, so no lab: network namespaces and veth pairs need root.\n") {
		t.Errorf("the loopback demo does not say why:\n%s", out.String())
	}
}

// TestDemoInterrupted sends Ctrl-C (SIGINT) to a running demo: it must stop
// with status 1 and leave no namespace behind.
func TestDemoInterrupted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the lab demo needs root (make test runs it as root)")
	}
	cmd := exec.Command(buildBlast(t), "demo")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	prefix := "blast-" + strconv.Itoa(cmd.Process.Pid) + "-"
	labUp := func() bool {
		ents, _ := os.ReadDir("/run/netns")
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), prefix) {
				return true
			}
		}
		return false
	}
	if !testkit.Eventually(time.Minute, labUp) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the demo built no lab in a minute:\n%s", out.String())
	}
	cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("the demo still ran a minute after Ctrl-C:\n%s", out.String())
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("interrupted demo: %v, want exit status 1\n%s", err, out.String())
	}
	if labUp() {
		t.Errorf("namespaces %s* remain after Ctrl-C", prefix)
	}
}
