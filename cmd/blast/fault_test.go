package main

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/control"
	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/internal/testkit"
	"github.com/blastnet/blast/netlab"
)

// Processes killed mid-test (issue 13): `blast client` killed while a
// server in this process runs its test, and `blast server -1` killed
// while a client in this process runs one. SIGKILL leaves no chance to
// say goodbye: the kernel closes the sockets, and the other end must see
// that, free what the test held and keep what it measured. (How soon it
// sees it is TestTimingFaultKilled.)
func TestFaultKilled(t *testing.T) {
	bin := serverBinary(t)
	for _, reverse := range []bool{false, true} {
		name := map[bool]string{false: "client sends", true: "client -R"}[reverse]
		t.Run("client killed, "+name, func(t *testing.T) { faultClientKilled(t, bin, reverse) })
	}
	for _, reverse := range []bool{false, true} {
		name := map[bool]string{false: "client sends", true: "client -R"}[reverse]
		t.Run("server killed, "+name, func(t *testing.T) { faultServerKilled(t, bin, reverse) })
	}
}

// faultStart starts bin with args, killed (if it still runs) when the
// test ends; done is closed when it has exited.
func faultStart(t *testing.T, bin string, args ...string) (cmd *exec.Cmd, out *testkit.SyncBuffer, done <-chan struct{}) {
	t.Helper()
	out = &testkit.SyncBuffer{}
	cmd = exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{})
	go func() { cmd.Wait(); close(ch) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-ch
	})
	return cmd, out, ch
}

// `blast client` killed while its test runs (the server has reported an
// interval of it), against a server with --max-clients 1: the server's
// result for it says the client is gone, with the bytes it moved until
// then, and by then the slot is free: the next client is admitted at its
// first try. It returns the time from the kill to that result (how soon
// the server sees it: TestTimingFaultKilled).
func faultClientKilled(t *testing.T, bin string, reverse bool) time.Duration {
	running := make(chan struct{}, 1)
	results := make(chan *result.Result, 4)
	srv, err := control.Listen(control.ServerConfig{Bind: "127.0.0.1", Port: 0, MaxClients: 1, NoNIC: true, Interval: 100 * time.Millisecond,
		OnInterval: func(*result.Result, *result.Interval) {
			select {
			case running <- struct{}{}:
			default:
			}
		},
		OnResult: func(r *result.Result) { results <- r }})
	if err != nil {
		t.Fatal(err)
	}
	port := srv.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-served })

	// A test far longer than the wait for its first interval: it is
	// killed in the middle.
	args := []string{"client", "-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "600"}
	if reverse {
		args = append(args, "-R")
	}
	cmd, out, exited := faultStart(t, bin, args...)
	select {
	case <-running:
	case <-exited:
		t.Fatalf("blast client exited before its test ran: %v\n%s", cmd.ProcessState, out)
	case <-time.After(time.Minute):
		t.Fatalf("blast client's test did not run:\n%s", out)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	<-exited

	var r *result.Result
	select {
	case r = <-results:
	case <-time.After(time.Minute):
		t.Fatal("no server result for the killed client a minute after the kill")
	}
	took := time.Since(killed)
	if r.Err == nil || !strings.Contains(r.Err.Error(), "the client is gone") {
		t.Errorf("server result for the killed client: %v, want the client is gone", r.Err)
	}
	if len(r.Streams) != 1 || r.Streams[0].Bytes == 0 || r.Streams[0].Sender != reverse {
		t.Errorf("server result for the killed client: streams %+v, want one with the bytes it moved", r.Streams)
	} else {
		t.Logf("server: %v (%d bytes), %v after the kill", r.Err, r.Streams[0].Bytes, took.Round(time.Millisecond))
	}

	// The slot was given back before the result: the next client is not
	// turned away.
	next, err := srvClient(t, port, control.Config{Bytes: 1 << 20})
	if err != nil {
		t.Fatalf("the next client, after the server's result for the killed one: %v", err)
	}
	if len(next.Streams) != 1 || next.Streams[0].Bytes != 1<<20 {
		t.Errorf("the next client: %+v", next.Streams)
	}
	return took
}

// `blast server -1` killed while a client's test runs (the client has
// reported two intervals that moved bytes): the client ends, says the server is gone, and
// keeps what it measured (bytes and intervals). It returns the time from
// the kill to the client's end (TestTimingFaultKilled).
func faultServerKilled(t *testing.T, bin string, reverse bool) time.Duration {
	port := testkit.FreePort(t)
	cmd, out, exited := faultStart(t, bin, "server", "-B", "127.0.0.1", "-p", strconv.Itoa(port), "-1")
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	if err := netlab.WaitPort(wctx, cmd.Process.Pid, "tcp", port); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}

	intervals := make(chan struct{}, 64)
	type outcome struct {
		r   *result.Result
		err error
		at  time.Time
	}
	done := make(chan outcome, 1)
	go func() {
		// A test far longer than the waits below: only the kill ends it.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		r, err := control.Run(ctx, control.Config{Host: "127.0.0.1", Port: port, Duration: 10 * time.Minute, Interval: 100 * time.Millisecond,
			Reverse: reverse, NoNIC: true, OnInterval: func(_ *result.Result, iv *result.Interval) {
				// Intervals that moved bytes: on a busy host the
				// first ones may have none yet.
				var moved int64
				for _, si := range iv.Streams {
					moved += si.Bytes
				}
				if moved == 0 {
					return
				}
				select {
				case intervals <- struct{}{}:
				default:
				}
			}})
		done <- outcome{r, err, time.Now()}
	}()
	for range 2 {
		select {
		case <-intervals:
		case o := <-done:
			t.Fatalf("the client ended before two intervals that moved bytes: %v\n%s", o.err, out)
		case <-time.After(time.Minute):
			t.Fatalf("the client reported no two intervals that moved bytes in a minute:\n%s", out)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	<-exited

	var o outcome
	select {
	case o = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the client still runs a minute after its server was killed")
	}
	took := o.at.Sub(killed)
	t.Logf("client: %v, %v after the kill", o.err, took.Round(time.Millisecond))
	if o.err == nil {
		t.Fatal("the client succeeded, its server killed mid-test")
	}
	if msg := o.err.Error(); !strings.Contains(msg, "the server may be gone") && !strings.Contains(msg, "the server closed the control connection") {
		t.Errorf("client error %q, want it to say the server is gone", msg)
	}
	r := o.r
	if r == nil || r.Err == nil || len(r.Streams) != 1 || r.Streams[0].Bytes == 0 || len(r.Intervals) < 2 {
		t.Fatalf("no partial results: %+v", r)
	}
	t.Logf("partial: %d bytes, %d intervals", r.Streams[0].Bytes, len(r.Intervals))
	return took
}
