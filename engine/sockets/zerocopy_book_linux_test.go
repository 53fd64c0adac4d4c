package sockets

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestZCBook drives the MSG_ZEROCOPY accounts through coalesced,
// out-of-order, duplicate and wrapping completions: every buffer must come
// back exactly once per use, and only after all its sends completed.
func TestZCBook(t *testing.T) {
	z := newZCBook(3)
	z.base = ^uint32(0) - 1 // ids wrap around during the test
	send := func(sizes ...int) int {
		b, ok := z.take()
		if !ok {
			t.Fatalf("no free buffer with %d in flight", z.pending())
		}
		for _, s := range sizes {
			z.sent(b, s)
		}
		z.release(b)
		return b
	}
	b0 := send(100, 50) // ids -2, -1 (a partial send and its rest)
	send(100)           // id 0
	send(100)           // id 1
	if _, ok := z.take(); ok {
		t.Fatal("took a fourth buffer while three are in flight")
	}
	z.complete(0, 1, false) // b1 and b2, before b0's
	if diff := cmp.Diff([]int{0, 1, 1}, z.returned); diff != "" {
		t.Errorf("returned after ids 0-1 (-want +got):\n%s", diff)
	}
	z.complete(^uint32(0)-1, ^uint32(0)-1, true) // half of b0: keep it
	if z.returned[b0] != 0 {
		t.Errorf("buffer %d returned with a send still in flight", b0)
	}
	z.complete(^uint32(0)-1, ^uint32(0), true) // a duplicate, then the rest
	if diff := cmp.Diff([]int{1, 1, 1}, z.returned); diff != "" {
		t.Errorf("returned after all completions (-want +got):\n%s", diff)
	}
	got := [4]int64{z.zc, z.copied, z.zcBytes, z.bogus}
	if want := [4]int64{2, 2, 200, 1}; got != want {
		t.Errorf("zc, copied, zc bytes, bogus = %v, want %v", got, want)
	}
	if z.pending() != 0 || len(z.recs) != 0 || z.base != 2 {
		t.Errorf("pending %d, records %d, base %d; want 0, 0, 2", z.pending(), len(z.recs), z.base)
	}
	z.complete(5, 10, false) // a range from nowhere
	if z.bogus != 7 {
		t.Errorf("a bogus range was not counted")
	}
}
