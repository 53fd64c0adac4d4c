package main

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/control"
	"github.com/blastnet/blast/internal/netlab"
	"github.com/blastnet/blast/internal/testkit"
)

// Processes killed mid-test (issue 13): `blast client` killed while a
// server in this process runs its test, and `blast server -1` killed
// while a client in this process runs one. SIGKILL leaves no chance to
// say goodbye: the kernel closes the sockets, and the other end must see
// that, free what the test held and keep what it measured.
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

// `blast client -t 5` killed 1 s into its test, against a server with
// --max-clients 1: the server frees the slot at once (a next client is
// admitted within 1 s of the kill), and its result says the client is
// gone, with the bytes it moved until then.
func faultClientKilled(t *testing.T, bin string, reverse bool) {
	starts := make(chan time.Time, 4)
	results := make(chan *control.Result, 4)
	srv, err := control.Listen(control.ServerConfig{Bind: "127.0.0.1", Port: 0, MaxClients: 1, NoNIC: true,
		OnStart: func(*control.Result) { starts <- time.Now() }, OnResult: func(r *control.Result) { results <- r }})
	if err != nil {
		t.Fatal(err)
	}
	port := srv.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-served })

	args := []string{"client", "-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "5", "-i", "0.5"}
	if reverse {
		args = append(args, "-R")
	}
	cmd, out, exited := faultStart(t, bin, args...)
	var start time.Time
	select {
	case start = <-starts:
	case <-exited:
		t.Fatalf("blast client exited before its test started: %v\n%s", cmd.ProcessState, out)
	case <-time.After(10 * time.Second):
		t.Fatalf("blast client's test did not start:\n%s", out)
	}
	time.Sleep(time.Until(start.Add(time.Second)))
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	<-exited

	// The next client: turned away (busy) until the server has freed the
	// slot.
	var admitted time.Time
	busy := 0
	for {
		r, err := srvClient(t, port, control.Config{Bytes: 1 << 20, OnStart: func(*control.Result) { admitted = time.Now() }})
		if errors.Is(err, control.ErrBusy) && time.Since(killed) < 5*time.Second {
			busy++
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatalf("the next client: %v (turned away %d times)", err, busy)
		}
		if len(r.Streams) != 1 || r.Streams[0].Bytes != 1<<20 {
			t.Errorf("the next client: %+v", r.Streams)
		}
		break
	}
	wait := admitted.Sub(killed)
	t.Logf("the next client was admitted %v after the kill (turned away %d times before)", wait.Round(time.Millisecond), busy)
	if wait > time.Second {
		t.Errorf("the next client was admitted %v after the kill, want within 1 s: the killed client held the slot", wait.Round(time.Millisecond))
	}

	var r *control.Result
	select {
	case r = <-results:
	case <-time.After(5 * time.Second):
		t.Fatal("no server result for the killed client")
	}
	if r.Err == nil || !strings.Contains(r.Err.Error(), "the client is gone") {
		t.Errorf("server result for the killed client: %v, want the client is gone", r.Err)
	}
	if len(r.Streams) != 1 || r.Streams[0].Bytes == 0 || r.Streams[0].Sender != reverse {
		t.Errorf("server result for the killed client: streams %+v, want one with the bytes it moved", r.Streams)
	} else {
		t.Logf("server: %v (%d bytes)", r.Err, r.Streams[0].Bytes)
	}
}

// `blast server -1` killed 1 s into a client's 5 s test: the client ends
// within 2 s of the kill, says the server is gone, and keeps what it
// measured (bytes and intervals).
func faultServerKilled(t *testing.T, bin string, reverse bool) {
	port := testkit.FreePort(t)
	cmd, out, exited := faultStart(t, bin, "server", "-B", "127.0.0.1", "-p", strconv.Itoa(port), "-1")
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := netlab.WaitPort(wctx, cmd.Process.Pid, "tcp", port); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}

	started := make(chan time.Time, 1)
	type result struct {
		r   *control.Result
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r, err := control.Run(ctx, control.Config{Host: "127.0.0.1", Port: port, Duration: 5 * time.Second, Interval: 250 * time.Millisecond,
			Reverse: reverse, NoNIC: true, OnStart: func(*control.Result) { started <- time.Now() }})
		done <- result{r, err, time.Now()}
	}()
	var start time.Time
	select {
	case start = <-started:
	case o := <-done:
		t.Fatalf("the client ended before its test started: %v\n%s", o.err, out)
	case <-time.After(10 * time.Second):
		t.Fatalf("the client's test did not start:\n%s", out)
	}
	time.Sleep(time.Until(start.Add(time.Second)))
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	<-exited
	gone := time.Since(killed)

	var o result
	select {
	case o = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the client still runs 10 s after its server was killed")
	}
	t.Logf("client: %v, %v after the kill (the server had exited %v after it)", o.err, o.at.Sub(killed).Round(time.Millisecond), gone.Round(time.Millisecond))
	if d := o.at.Sub(killed); d > 2*time.Second {
		t.Errorf("the client ended %v after its server was killed, want within 2 s", d.Round(time.Millisecond))
	}
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
}
