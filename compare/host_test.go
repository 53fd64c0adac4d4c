//go:build linux

package compare_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/blastnet/blast/internal/testkit"
	"math"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/compare"
	"github.com/blastnet/blast/control"
	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/blasttest"
	"github.com/blastnet/blast/netlab"
	"github.com/blastnet/blast/netlab/labtest"
)

func TestMain(m *testing.M) { blasttest.Main(m, false) }

// hosts are the two ends of a HOST-form test: the two hosts of a netns lab
// when root, else this machine over loopback.
type hosts struct {
	lab  *netlab.Lab
	addr string // the server's address, as the client names it
}

func newHosts(t *testing.T) hosts {
	if os.Geteuid() != 0 {
		return hosts{addr: "127.0.0.1"}
	}
	lab := labtest.New(t, netlab.Direct, netlab.Options{})
	return hosts{lab: lab, addr: lab.B.Addr4.String()}
}

// command prepares name in the server's host (server) or the client's.
func (h hosts) command(server bool, name string, args ...string) (c *exec.Cmd, start func() error) {
	if h.lab == nil {
		c = exec.Command(name, args...)
		return c, c.Start
	}
	host := h.lab.A
	if server {
		host = h.lab.B
	}
	nc := host.Command(name, args...)
	return nc.Cmd, nc.Start
}

// serve starts a server (blast server or iperf3 -s) on port and waits
// until it listens.
func (h hosts) serve(t *testing.T, port int, name string, args ...string) {
	t.Helper()
	c, start := h.command(true, name, args...)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := netlab.WaitPort(ctx, c.Process.Pid, "tcp", port); err != nil {
		t.Fatalf("%s: %v\nstderr: %s", name, err, stderr.String())
	}
}

// compare runs blast compare in the client's host and returns its output
// and exit status.
func (h hosts) compare(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	c, start := h.command(false, blasttest.Bin, append([]string{"compare"}, args...)...)
	var o, e bytes.Buffer
	c.Stdout, c.Stderr = &o, &e
	if err := start(); err != nil {
		t.Fatal(err)
	}
	err := c.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// usable tells whether a case's backends can run on this machine (both
// ends of a HOST-form test run here).
func usable(c compare.Case) bool {
	for _, n := range []string{c.Tx, c.Rx} {
		if _, err := engine.Usable(n); err != nil {
			return false
		}
	}
	return true
}

// TestHost runs 'blast compare HOST -t 1' against a real blast server and
// checks every row: the backend pair asked for, bytes that arrived, and
// the far end's CPU time, I/O counters and backend facts.
func TestHost(t *testing.T) {
	h := newHosts(t)
	port := testkit.FreePort(t)
	h.serve(t, port, blasttest.Bin, "server", "-p", strconv.Itoa(port))
	stdout, stderr, code := h.compare(t, h.addr, "-p", strconv.Itoa(port), "-t", "1", "-J")
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s\nstdout: %s", code, stderr, stdout)
	}
	var rows []compare.Row
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	cases := compare.DefaultCases(false)
	var want, got []string
	for _, c := range cases {
		want = append(want, c.Name())
	}
	for _, r := range rows {
		got = append(got, r.Case)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("rows (-want +got):\n%s", diff)
	}
	for i, r := range rows {
		c := cases[i]
		if !usable(c) {
			if r.Error == "" {
				t.Errorf("%s: a backend is not usable here, yet the row has no error", r.Case)
			}
			continue
		}
		if r.Error != "" {
			t.Errorf("%s: %s", r.Case, r.Error)
			continue
		}
		if r.LocalEnd != "tx" {
			t.Errorf("%s: local_end %q, want tx", r.Case, r.LocalEnd)
		}
		if r.Bytes <= 0 || r.SentBytes < r.Bytes {
			t.Errorf("%s: %d bytes received of %d sent", r.Case, r.Bytes, r.SentBytes)
		}
		// The receiver ran on the server: its figures came back in the
		// blast extensions.
		if r.Bytes+r.Drained != r.SentBytes {
			t.Errorf("%s: %d bytes received in the test and %d after it, of %d sent", r.Case, r.Bytes, r.Drained, r.SentBytes)
		}
		if !accounts(r.RxCalls, r.RxPerCall, r.Bytes+r.Drained) {
			t.Errorf("%s: the server's %d calls of %.0f bytes do not account for %d bytes", r.Case, r.RxCalls, r.RxPerCall, r.Bytes+r.Drained)
		}
		if r.RxCPU.Total() <= 0 || r.TxCPU.Total() <= 0 {
			t.Errorf("%s: CPU tx %+v rx %+v: both ends used some", r.Case, r.TxCPU, r.RxCPU)
		}
		if !accounts(r.TxCalls, r.TxPerCall, r.SentBytes) {
			t.Errorf("%s: this host's %d calls of %.0f bytes do not account for %d bytes sent", r.Case, r.TxCalls, r.TxPerCall, r.SentBytes)
		}
		// Copies avoided: on the server for a splice or trunc receiver,
		// here for a sendfile or splice sender.
		if avoids := c.Rx == "splice" || c.Rx == "trunc" || c.Tx == "sendfile" || c.Tx == "splice"; avoids != (r.NotCopied > 0) {
			t.Errorf("%s: %d bytes not copied", r.Case, r.NotCopied)
		}
		if (c.Rx == "splice" || c.Rx == "trunc") && r.RxFacts[engine.FactBytesNotCopied] <= 0 {
			t.Errorf("%s: no facts from the server: %v", r.Case, r.RxFacts)
		}
	}
}

// accounts tells whether calls of perCall bytes each make up total.
func accounts(calls int64, perCall float64, total int64) bool {
	return calls > 0 && total > 0 && math.Abs(float64(calls)*perCall-float64(total)) < 1
}

// TestHostReverse drives an in-process blast server that sends: the far
// end is now the sender.
func TestHostReverse(t *testing.T) {
	srv, err := control.Listen(control.ServerConfig{Bind: "127.0.0.1", NoNIC: true, Port: testkit.FreePort(t)})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Serve(t, srv.Serve)
	cases := []compare.Case{{Tx: "readwrite", Rx: "readwrite"}, {Tx: "sendfile", Rx: "readwrite"}, {Tx: "readwrite", Rx: "trunc"}}
	rows, err := compare.RunHost(context.Background(), compare.Config{Host: "127.0.0.1", Port: srv.Addr().(*net.TCPAddr).Port,
		Duration: time.Second, BufLen: 128 << 10, Reverse: true, Cases: cases})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(cases) {
		t.Fatalf("%d rows for %d cases", len(rows), len(cases))
	}
	for i, r := range rows {
		c := cases[i]
		if !usable(c) {
			continue
		}
		switch {
		case r.Error != "":
			t.Errorf("%s: %s", r.Case, r.Error)
		case r.Case != c.Name() || r.LocalEnd != "rx":
			t.Errorf("row %q local_end %q, want %q rx", r.Case, r.LocalEnd, c.Name())
		case r.Bytes <= 0 || r.Rx.Bytes != r.Bytes+r.Drained:
			t.Errorf("%s: %d bytes received in the test and %d after it, this host counted %d", r.Case, r.Bytes, r.Drained, r.Rx.Bytes)
		case r.Tx.Bytes != r.SentBytes || r.TxCalls <= 0 || r.TxCPU.Total() <= 0:
			t.Errorf("%s: the server's (the sender's) figures are missing: %+v cpu %+v", r.Case, r.Tx, r.TxCPU)
		case c.Tx == "sendfile" && r.TxFacts[engine.FactBytesNotCopied] != r.SentBytes:
			t.Errorf("%s: the server reports %d bytes not copied of %d sent", r.Case, r.TxFacts[engine.FactBytesNotCopied], r.SentBytes)
		case c.Rx == "trunc" && r.RxFacts[engine.FactBytesNotCopied] <= 0:
			t.Errorf("%s: no bytes discarded unread: %v", r.Case, r.RxFacts)
		}
	}
}

// TestHostRefusals: a plain iperf3 server, UDP and a wrong command line
// each get one line and their exit status.
func TestHostRefusals(t *testing.T) {
	h := hosts{addr: "127.0.0.1"}
	t.Run("iperf3", func(t *testing.T) {
		if _, err := exec.LookPath("iperf3"); err != nil {
			t.Skip("iperf3 is not installed")
		}
		port := testkit.FreePort(t)
		h.serve(t, port, "iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", strconv.Itoa(port))
		stdout, stderr, code := h.compare(t, "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1")
		want := "blast compare: 127.0.0.1:" + strconv.Itoa(port) + " runs plain iperf3 (no blast extensions in its results): compare HOST needs a blast server there: run 'blast server' on 127.0.0.1\n"
		if code != 1 || stdout != "" || stderr != want {
			t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 1, no stdout, stderr:\n%s", code, stdout, stderr, want)
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"udp", []string{"127.0.0.1", "-u"}, 2, "-u with HOST: client/server mode carries TCP only so far; compare the UDP backends with --lab"},
		{"nowhere", []string{"-t", "1"}, 2, "say where: HOST"},
		{"both", []string{"127.0.0.1", "--lab"}, 2, "HOST and --lab both given"},
		{"fraction", []string{"127.0.0.1", "-t", "1.5"}, 2, "whole seconds"},
		{"len", []string{"127.0.0.1", "-l", "2000000"}, 2, "-l 2000000: must be between 1 and 1048576"},
		{"refused", []string{"127.0.0.1", "-p", strconv.Itoa(testkit.FreePort(t)), "-t", "1"}, 1, "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := h.compare(t, tc.args...)
			if code != tc.code || stdout != "" || !strings.HasPrefix(stderr, "blast compare: ") || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and one line with %q", code, stdout, stderr, tc.code, tc.want)
			}
		})
	}
}
