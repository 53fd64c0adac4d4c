package afxdp

import (
	"math"
	"sync/atomic"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fakeRing lays a ring over Go memory the way the kernel's mmap does, with
// the indices started at start so that they wrap around.
func fakeRing(n uint32, start uint32) (ring[uint64], []byte) {
	off := unix.XDPRingOffset{Producer: 0, Consumer: 64, Flags: 128, Desc: 192}
	mem := make([]byte, 192+8*int(n))
	r := newRing[uint64](mem, off, n)
	atomic.StoreUint32(r.producer, start)
	atomic.StoreUint32(r.consumer, start)
	return r, mem
}

func TestRingWrapAround(t *testing.T) {
	for _, start := range []uint32{0, math.MaxUint32 - 5, math.MaxUint32} {
		prod, _ := fakeRing(8, start)
		prod.initProducer()
		// The kernel's side is a consumer view of the same memory.
		cons := prod
		cons.cachedCons = start
		cons.cachedProd = start

		if got := prod.free(1); got != 8 {
			t.Fatalf("start %d: free = %d, want 8", start, got)
		}
		next := uint64(0)
		for round := range 5 {
			idx, got := prod.reserve(6)
			if got != 6 {
				t.Fatalf("start %d round %d: reserved %d, want 6", start, round, got)
			}
			for i := range got {
				*prod.at(idx + i) = next + uint64(i)
			}
			if _, n := cons.peek(8); n != 0 {
				t.Fatalf("consumer sees %d before submit", n)
			}
			prod.submit()
			if _, again := prod.reserve(6); again != 2 {
				t.Fatalf("start %d round %d: second reserve got %d, want 2 (ring full)", start, round, again)
			}
			prod.cachedProd -= 2 // give the two back unused
			cidx, n := cons.peek(8)
			if n != 6 {
				t.Fatalf("start %d round %d: peek = %d, want 6", start, round, n)
			}
			for i := range n {
				if v := *cons.at(cidx + i); v != next+uint64(i) {
					t.Fatalf("start %d round %d: entry %d = %d, want %d", start, round, i, v, next+uint64(i))
				}
			}
			cons.release(n)
			next += 6
		}
		if p := atomic.LoadUint32(prod.producer); p != start+30 {
			t.Errorf("start %d: producer index %d, want %d (free-running)", start, p, start+30)
		}
	}
}

func TestRingNeedWakeup(t *testing.T) {
	r, _ := fakeRing(4, 0)
	if r.needWakeup() {
		t.Fatal("needWakeup with no flag")
	}
	atomic.StoreUint32(r.flags, unix.XDP_RING_NEED_WAKEUP)
	if !r.needWakeup() {
		t.Fatal("needWakeup missed the flag")
	}
}

func TestDescLayout(t *testing.T) {
	if s := unsafe.Sizeof(unix.XDPDesc{}); s != 16 {
		t.Fatalf("XDPDesc is %d bytes, the kernel's is 16", s)
	}
}
