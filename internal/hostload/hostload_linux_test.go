package hostload

import (
	"math"
	"testing"
	"time"
)

const stat = `cpu  1000 100 300 5000 200 10 40 50 0 0
cpu0 500 50 150 2500 100 5 20 25 0 0
intr 7000 0 0 1 2
ctxt 9000
btime 1796137169
`

func TestParseStat(t *testing.T) {
	var s Sample
	if err := parseStat([]byte(stat), &s); err != nil {
		t.Fatal(err)
	}
	want := Sample{User: 1100, System: 350, Idle: 5200, Steal: 50, Interrupts: 7000, ContextSwitches: 9000}
	if s != want {
		t.Errorf("parsed %+v, want %+v", s, want)
	}
	if err := parseStat([]byte("cpu 1 2 3\n"), &s); err == nil || err.Error() != "/proc/stat: no cpu, intr or ctxt line" {
		t.Errorf("a /proc/stat without intr and ctxt: %v", err)
	}
}

func TestBetween(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a := Sample{At: t0, User: 100, System: 50, Idle: 800, Steal: 50, Interrupts: 1000, ContextSwitches: 5000, Iface: "eth0", RxPackets: 10, TxPackets: 20}
	b := Sample{At: t0.Add(2 * time.Second), User: 400, System: 150, Idle: 1400, Steal: 50, Interrupts: 3000, ContextSwitches: 9000, Iface: "eth0", RxPackets: 2010, TxPackets: 1020}
	l := Between(a, b)
	want := Load{Seconds: 2, User: 30, System: 10, Idle: 60, Interrupts: 1000, ContextSwitches: 2000, Iface: "eth0", RxPackets: 1000, TxPackets: 500}
	if l != want {
		t.Errorf("Between = %+v, want %+v", l, want)
	}
	b.Iface = "eth1" // a different interface: no packet rates
	if l := Between(a, b); l.RxPackets != 0 || l.TxPackets != 0 {
		t.Errorf("packets counted across two interfaces: %+v", l)
	}
}

// The live host: a goroutine spinning on a CPU shows as user time.
func TestReadLive(t *testing.T) {
	a, err := Read("lo")
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(300 * time.Millisecond)
	x := 1.0
	for time.Now().Before(end) {
		x = math.Sqrt(x + 1)
	}
	b, err := Read("lo")
	if err != nil {
		t.Fatal(err)
	}
	l := Between(a, b)
	if l.User < 20 || l.User+l.System+l.Idle > 100.01 || l.ContextSwitches <= 0 || l.Interrupts <= 0 {
		t.Errorf("300 ms spinning on one CPU: %+v (x=%g)", l, x)
	}
	if _, err := Read("../etc"); err == nil {
		t.Error("an interface name with a slash was read")
	}
}
