package uring

import (
	"bytes"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSetupError checks that the refusals of io_uring_setup read as "not
// supported here" with a reason, and other failures do not.
func TestSetupError(t *testing.T) {
	for _, tc := range []struct {
		errno unix.Errno
		not   bool
	}{
		{unix.ENOSYS, true},
		{unix.EPERM, true},
		{unix.EACCES, true},
		{unix.ENOMEM, false},
		{unix.EFAULT, false},
	} {
		err := SetupError(tc.errno)
		if errors.Is(err, errors.ErrUnsupported) != tc.not {
			t.Errorf("%v: %v (not supported: %v, want %v)", tc.errno, err, !tc.not, tc.not)
		}
	}
}

// newRing sets a ring up, skipping where io_uring is refused.
func newRing(t *testing.T, entries, cq uint32) *Ring {
	t.Helper()
	r, err := New(entries, cq)
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestNopWrap pushes no-ops through a 4-entry ring until its indexes have
// wrapped around thousands of times: every CQE comes back once, with its
// user data, and every io_uring_enter is counted.
func TestNopWrap(t *testing.T) {
	r := newRing(t, 4, 8)
	defer r.Close()
	var enters atomic.Int64
	r.CountEnters(&enters)
	const total = 20000
	var next, got uint64
	for got < total {
		for next < total {
			e := r.SQE()
			if e == nil {
				break
			}
			e.PrepNop(next)
			next++
		}
		if err := r.Wait(-1); err != nil {
			t.Fatal(err)
		}
		for {
			c, ok := r.CQE()
			if !ok {
				break
			}
			if c.UserData != got || c.Res != 0 {
				t.Fatalf("CQE %d: user data %d, res %d; want %d, 0", got, c.UserData, c.Res, got)
			}
			got++
		}
	}
	if r.Pending() != 0 {
		t.Errorf("%d SQEs still pending", r.Pending())
	}
	if n := enters.Load(); n < total/4 {
		t.Errorf("counted %d io_uring_enter calls for %d no-ops through 4 entries", n, total)
	}
}

// TestWaitTimeout waits with nothing in flight: Wait must come back with
// ErrTimedOut, both with and without SQEs to submit on the way.
func TestWaitTimeout(t *testing.T) {
	r := newRing(t, 4, 0)
	defer r.Close()
	if r.Features()&FeatExtArg == 0 {
		t.Skip("no IORING_FEAT_EXT_ARG (Linux < 5.11)")
	}
	if err := r.Wait(time.Millisecond); !errors.Is(err, ErrTimedOut) {
		t.Errorf("wait with nothing in flight: %v, want ErrTimedOut", err)
	}
	// A no-op completes at once: the wait does not time out.
	r.SQE().PrepNop(7)
	if err := r.Wait(time.Second); err != nil {
		t.Fatalf("wait for a no-op: %v", err)
	}
	if c, ok := r.CQE(); !ok || c.UserData != 7 {
		t.Errorf("no-op CQE: %+v, %v", c, ok)
	}
}

// TestSupported asks the kernel for its operations: a kernel with io_uring
// has at least the no-op.
func TestSupported(t *testing.T) {
	r := newRing(t, 4, 0)
	defer r.Close()
	ops, err := r.Supported()
	if err != nil {
		t.Fatal(err)
	}
	if !ops[OpNop] {
		t.Errorf("probe says IORING_OP_NOP is missing: %v", ops)
	}
}

// TestCloseReleases sets rings up and closes them: no descriptor and no
// mapping is left, and a second Close does nothing.
func TestCloseReleases(t *testing.T) {
	count := func() (fds, maps int) {
		d, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		m, err := os.ReadFile("/proc/self/maps")
		if err != nil {
			t.Fatal(err)
		}
		return len(d), bytes.Count(m, []byte("\n"))
	}
	r := newRing(t, 64, 256) // warm up whatever the runtime maps once
	r.Close()
	fds0, maps0 := count()
	for range 50 {
		r := newRing(t, 64, 256)
		r.SQE().PrepNop(1)
		if err := r.Wait(-1); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}
	fds, maps := count()
	if fds != fds0 {
		t.Errorf("open descriptors: %d before, %d after 50 rings", fds0, fds)
	}
	// 50 leaked rings would leave at least 100 mappings; the runtime's own
	// heap growth stays well below that.
	if maps > maps0+16 {
		t.Errorf("mappings: %d before, %d after 50 rings", maps0, maps)
	}
}
