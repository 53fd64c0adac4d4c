package control

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blastnet/blast/control/render"
	"github.com/blastnet/blast/internal/hostload"
)

// --sys: the host's load with every interval and the summary, the
// server's too when it is blast.
func TestSysAgainstBlastServer(t *testing.T) {
	_, port, log := blastServer(t, ServerConfig{Interval: time.Second})
	r := runClient(t, Config{Port: port, Duration: 2 * time.Second, Interval: time.Second, Sys: true})
	srv := log.wait(t, 1)[0]
	if len(r.Intervals) != 2 {
		t.Fatalf("%d intervals, want 2", len(r.Intervals))
	}
	check := func(who string, l *hostload.Load, secs float64) {
		t.Helper()
		if l == nil {
			t.Fatalf("%s: no host load", who)
		}
		// All of the CPUs' time: on a shared VM the hypervisor's
		// steal can be a quarter of it.
		cpu := l.User + l.System + l.Idle + l.Steal
		// An interval's load spans the time from one reading of the
		// counters to the next (on a busy host an interval is read
		// late, and the next one is the shorter); the test's spans at
		// least its time.
		if cpu < 99.9 || cpu > 100.001 || l.System <= 0 || l.Interrupts <= 0 || l.ContextSwitches <= 0 || l.Seconds <= 0 || l.Seconds < secs*0.95 {
			t.Errorf("%s: %+v", who, *l)
		}
		// The test's traffic crossed lo: its packets are counted.
		if l.Iface != "lo" || l.RxPackets < 1000 || l.TxPackets < 1000 {
			t.Errorf("%s: interface %q, %g/%g packets/s", who, l.Iface, l.RxPackets, l.TxPackets)
		}
	}
	var sum float64
	for i, iv := range r.Intervals {
		check("client interval "+strconv.Itoa(i), iv.Load, 0)
		sum += iv.Load.Seconds
	}
	check("client test", r.Load, 2)
	// The intervals' loads tile the test's: they add up to it.
	if math.Abs(sum-r.Load.Seconds) > 1e-6 {
		t.Errorf("the intervals' loads span %.6f s, the test's %.6f s", sum, r.Load.Seconds)
	}
	check("server test, as the client got it", r.RemoteLoad, 2)
	if srv.Load == nil || *srv.Load != *r.RemoteLoad {
		t.Errorf("the server measured %+v, the client shows %+v", srv.Load, r.RemoteLoad)
	}
	if len(r.RemoteLoadIntervals) != len(srv.Intervals) || len(srv.Intervals) < 2 {
		t.Errorf("%d remote intervals, the server had %d", len(r.RemoteLoadIntervals), len(srv.Intervals))
	}
	for i := range r.RemoteLoadIntervals {
		if srv.Intervals[i].Load == nil || r.RemoteLoadIntervals[i] != *srv.Intervals[i].Load {
			t.Errorf("remote interval %d: the client shows %+v, the server had %+v", i, r.RemoteLoadIntervals[i], srv.Intervals[i].Load)
		}
	}
	var b bytes.Buffer
	render.Text{}.WriteText(&b, r)
	line := regexp.MustCompile(`(?m)^\[SYS\] +[0-9.]+-[0-9.]+ +sec  cpu +[0-9.]+% us +[0-9.]+% sy +[0-9.]+% id +[0-9.]+% st +[0-9.]+[kM]? intr/s +[0-9.]+[kM]? cs/s  lo [0-9.]+[kM]?/[0-9.]+[kM]? pkt/s in/out(  local|  remote)?$`)
	if got := len(line.FindAllString(b.String(), -1)); got != 2+1+len(srv.Intervals)+1 {
		t.Errorf("%d [SYS] lines, want one per interval, local, and the server's per interval and whole:\n%s", got, b.String())
	}
	var j bytes.Buffer
	if err := render.EncodeJSON(&j, r); err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, j.Bytes()); err != nil {
		t.Fatal(err)
	}
	d := compact.String()
	for _, key := range []string{`"blast":{"host":{"seconds"`, `"remote_host":{`, `"remote_host_intervals":[`, `"cpu_user_percent"`, `"context_switches_per_sec"`} {
		if !strings.Contains(d, key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
}

// Against iperf3 only this side's load is known.
func TestSysAgainstIperf3(t *testing.T) {
	needIperf3(t)
	port, wait := iperf3Server(t)
	r := runClient(t, Config{Port: port, Duration: time.Second, Sys: true})
	wait()
	if r.Load == nil || r.RemoteLoad != nil || len(r.RemoteLoadIntervals) != 0 {
		t.Errorf("load: local %v, remote %v %v", r.Load, r.RemoteLoad, r.RemoteLoadIntervals)
	}
	var b bytes.Buffer
	render.Text{}.WriteText(&b, r)
	if strings.Contains(b.String(), "  remote\n") || !strings.Contains(b.String(), "  local\n") {
		t.Errorf("text:\n%s", b.String())
	}
}
