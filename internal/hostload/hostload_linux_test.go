package hostload

import (
	"math"
	"syscall"
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

// userTicks is the user CPU time this process used, in the kernel's
// clock ticks (USER_HZ, 100 a second), as /proc/stat counts it.
func userTicks(t *testing.T) uint64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return uint64(time.Duration(ru.Utime.Nano()) / (10 * time.Millisecond))
}

// The live host: a goroutine spinning on a CPU shows as user time: the
// host's user time grows at least by the 300 ms of CPU this process spent
// spinning (however long that took on a busy host).
func TestReadLive(t *testing.T) {
	a, err := Read("lo")
	if err != nil {
		t.Fatal(err)
	}
	own := userTicks(t)
	x := 1.0
	for userTicks(t) < own+30 {
		for range 100000 {
			x = math.Sqrt(x + 1)
		}
	}
	b, err := Read("lo")
	if err != nil {
		t.Fatal(err)
	}
	spent := userTicks(t) - own
	// The kernel charges a tick to user or system time by where it found
	// the task: a few of the spinner's may land on system time.
	if got := b.User - a.User; got+3 < spent {
		t.Errorf("this process spent %d ticks spinning, the host's user time grew %d (x=%g)", spent, got, x)
	}
	l := Between(a, b)
	if l.User <= 0 || l.User+l.System+l.Idle > 100.01 || l.ContextSwitches <= 0 || l.Interrupts <= 0 {
		t.Errorf("300 ms of CPU spinning: %+v", l)
	}
	if _, err := Read("../etc"); err == nil {
		t.Error("an interface name with a slash was read")
	}
}
