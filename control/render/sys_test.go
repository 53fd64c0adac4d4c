package render

import (
	"bytes"
	"testing"

	"github.com/blastnet/blast/internal/hostload"
)

func TestSysLines(t *testing.T) {
	var b bytes.Buffer
	writeLoad(&b, 1, 2, &hostload.Load{Seconds: 1, User: 12.34, System: 45.6, Idle: 38.06, Steal: 4, Interrupts: 12345, ContextSwitches: 1234567, Iface: "eth0", RxPackets: 81234, TxPackets: 999}, "  local")
	writeLoad(&b, 0, 1, &hostload.Load{Seconds: 1, Idle: 100, Interrupts: 12, ContextSwitches: 7}, "")
	want := "[SYS]   1.00-2.00   sec  cpu  12.3% us  45.6% sy  38.1% id   4.0% st   12.3k intr/s   1.23M cs/s  eth0 81.2k/999 pkt/s in/out  local\n" +
		"[SYS]   0.00-1.00   sec  cpu   0.0% us   0.0% sy 100.0% id   0.0% st      12 intr/s       7 cs/s\n"
	if b.String() != want {
		t.Errorf("got\n%swant\n%s", b.String(), want)
	}
}
