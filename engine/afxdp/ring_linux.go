package afxdp

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ring is a view of one single-producer single-consumer ring shared with
// the kernel: the fill and TX rings that user space produces into, the RX
// and completion rings the kernel produces into.
//
// The indices are free-running uint32 values; slot i is desc[i&mask]. The
// side that does not own an index only reads it, atomically, and keeps a
// cached copy (as libxdp does) so that most batches touch shared memory
// twice: one load of the other side's index when the cache runs out, one
// store of its own index per batch. sync/atomic is sequentially
// consistent, which is stronger than the acquire/release the kernel's
// protocol (net/xdp/xsk_queue.h) needs.
type ring[T any] struct {
	producer *uint32
	consumer *uint32
	flags    *uint32
	desc     []T
	mask     uint32
	size     uint32

	// Producer side: cachedProd is the next slot to write; cachedCons is
	// the consumer index plus size, so free slots are cachedCons-cachedProd.
	// Consumer side: cachedCons is the next slot to read; cachedProd is the
	// last producer index seen.
	cachedProd, cachedCons uint32
}

// newRing lays a ring of n entries over mem as off describes.
func newRing[T any](mem []byte, off unix.XDPRingOffset, n uint32) ring[T] {
	return ring[T]{
		producer: (*uint32)(unsafe.Pointer(&mem[off.Producer])),
		consumer: (*uint32)(unsafe.Pointer(&mem[off.Consumer])),
		flags:    (*uint32)(unsafe.Pointer(&mem[off.Flags])),
		desc:     unsafe.Slice((*T)(unsafe.Pointer(&mem[off.Desc])), n),
		mask:     n - 1,
		size:     n,
	}
}

// initProducer readies the cache of a ring user space produces into.
func (r *ring[T]) initProducer() {
	r.cachedProd = atomic.LoadUint32(r.producer)
	r.cachedCons = atomic.LoadUint32(r.consumer) + r.size
}

// free returns how many slots the producer may fill, at least want when
// there are that many; it reloads the consumer index only when the cache
// shows fewer.
func (r *ring[T]) free(want uint32) uint32 {
	n := r.cachedCons - r.cachedProd
	if n >= want {
		return n
	}
	r.cachedCons = atomic.LoadUint32(r.consumer) + r.size
	return r.cachedCons - r.cachedProd
}

// reserve hands out up to n slots to write, returning the index of the
// first and how many there are.
func (r *ring[T]) reserve(n uint32) (idx, got uint32) {
	got = min(n, r.free(n))
	idx = r.cachedProd
	r.cachedProd += got
	return idx, got
}

// submit publishes every slot reserved so far to the consumer. The atomic
// store orders the descriptor writes before it.
func (r *ring[T]) submit() { atomic.StoreUint32(r.producer, r.cachedProd) }

// peek returns the index of the first filled slot and how many (at most n)
// the consumer may read.
func (r *ring[T]) peek(n uint32) (idx, got uint32) {
	avail := r.cachedProd - r.cachedCons
	if avail == 0 {
		r.cachedProd = atomic.LoadUint32(r.producer)
		avail = r.cachedProd - r.cachedCons
	}
	return r.cachedCons, min(avail, n)
}

// release gives n read slots back to the producer.
func (r *ring[T]) release(n uint32) {
	r.cachedCons += n
	atomic.StoreUint32(r.consumer, r.cachedCons)
}

// at is the entry of free-running index i.
func (r *ring[T]) at(i uint32) *T { return &r.desc[i&r.mask] }

// needWakeup reports whether the kernel asks for a syscall to go on.
func (r *ring[T]) needWakeup() bool {
	return atomic.LoadUint32(r.flags)&unix.XDP_RING_NEED_WAKEUP != 0
}
