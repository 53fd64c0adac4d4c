package netlab

import (
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestArrival checks the arrival time a received frame gives the shaper:
// when the kernel stamped it, on the line's clock, never before the
// frame before it nor after the read; the read's time, counted, when the
// frame has no stamp.
func TestArrival(t *testing.T) {
	const ms = int64(time.Millisecond)
	// The read happens at 1 s on the line's clock, at real on the wall
	// clock's.
	const now, real = 1000 * ms, 5_000_000 * ms
	d := &direction{rmsgs: make([]unix.Mmsghdr, 1), ctrl: make([]byte, ctrlRoom)}
	tsLen := int(unsafe.Sizeof(unix.Timespec{}))
	for _, step := range []struct {
		name    string
		stamped bool
		age     int64 // how long before the read (wall clock) the kernel stamped it
		want    int64
	}{
		{"read 80 ms after it came", true, 80 * ms, 920 * ms},
		{"the next, read 30 ms after it came", true, 30 * ms, 970 * ms},
		{"stamped before the frame before it (the wall clock stepped)", true, 60 * ms, 970 * ms},
		{"stamped after the read (the wall clock stepped back)", true, -5 * ms, 1000 * ms},
		{"no stamp", false, 0, 1000 * ms},
	} {
		m := &d.rmsgs[0].Hdr
		m.Control = &d.ctrl[0]
		m.SetControllen(0)
		if step.stamped { // as recvmmsg leaves it
			h := (*unix.Cmsghdr)(unsafe.Pointer(&d.ctrl[0]))
			h.Level, h.Type = unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS
			h.SetLen(unix.CmsgLen(tsLen))
			*(*unix.Timespec)(unsafe.Pointer(&d.ctrl[unix.CmsgLen(0)])) = unix.NsecToTimespec(real - step.age)
			m.SetControllen(unix.CmsgSpace(tsLen))
		}
		if got := d.arrival(0, now, real); got != step.want {
			t.Errorf("%s: arrival at %v, want %v", step.name, time.Duration(got), time.Duration(step.want))
		}
	}
	if d.c.Unstamped != 1 {
		t.Errorf("%d frames counted without a stamp, want 1", d.c.Unstamped)
	}
}
