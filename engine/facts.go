package engine

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
)

// Facts are what a backend reports about one flow beyond the Counters:
// what actually happened (sends the kernel completed without copying and
// sends it copied, system calls of every kind, an option the kernel refused
// and the fallback taken). They live on the Flow.
//
// The hot path is lock-free: a backend takes the *atomic.Int64 of each
// count it keeps once, with Counter, before its loop, and adds to it
// atomically. A reporter may Snapshot at any time, also concurrently.
type Facts struct {
	mu     sync.Mutex
	counts map[string]*atomic.Int64
	notes  []string
}

// The well-known fact names. A backend adds only those that mean something
// for it; others are free-form, lowercase_with_underscores.
const (
	// FactSyscalls counts system calls of every kind the data path made
	// (a splice backend makes two per chunk, an io_uring backend one
	// io_uring_enter per batch), where Counters count I/O operations.
	FactSyscalls = "syscalls"
	// FactBytesNotCopied counts bytes that crossed the user/kernel boundary
	// without a copy ("copies avoided"): sent from the page cache, spliced,
	// discarded unread, or sent zero-copy and completed as such.
	FactBytesNotCopied = "bytes_not_copied"
	// FactZeroCopySends and FactCopiedSends split completed MSG_ZEROCOPY
	// (or IORING_OP_SEND_ZC) sends into those the kernel really sent from
	// user memory and those it copied (SO_EE_CODE_ZEROCOPY_COPIED: loopback
	// and veth always copy).
	FactZeroCopySends = "zerocopy_sends"
	FactCopiedSends   = "copied_sends"
	// FactPending counts operations still in flight when the flow ended
	// (their buffers were kept alive until the kernel let go of them).
	FactPending = "pending_at_end"
	// FactOwnThreads counts the threads beyond the flow's own that a
	// backend moved the data on: CPU measured on the flow's thread misses
	// their time.
	FactOwnThreads = "own_threads"
	// FactPartialWrites counts writes the kernel took only part of (the
	// rest went in further calls, counted in FactSyscalls).
	FactPartialWrites = "partial_writes"
	// FactNoBufs counts UDP sends the host's own queue refused (ENOBUFS:
	// a qdisc at its limit, a full device queue), each sent again once
	// the queue had room; FactNoBufsWait is the time the sender waited
	// for that room, in nanoseconds.
	FactNoBufs     = "enobufs"
	FactNoBufsWait = "enobufs_wait_ns"
	// FactPaceBehind is how far a paced sender fell behind its rate and
	// did not make up, in nanoseconds: a stall longer than it catches up
	// (more than maxDebt is forgiven), or a debt still unpaid when the
	// send ended. Its rate over the send fell short by that much time.
	// Absent when the sender was never behind by more than it made up.
	FactPaceBehind = "pace_behind_ns"
)

// Counter returns the count called name, creating it at 0. Take it once,
// outside the loop, and add to it atomically.
func (x *Facts) Counter(name string) *atomic.Int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.counts == nil {
		x.counts = map[string]*atomic.Int64{}
	}
	c, ok := x.counts[name]
	if !ok {
		c = new(atomic.Int64)
		x.counts[name] = c
	}
	return c
}

// Add adds n to the count called name (a convenience off the hot path).
func (x *Facts) Add(name string, n int64) { x.Counter(name).Add(n) }

// Set sets the count called name to n.
func (x *Facts) Set(name string, n int64) { x.Counter(name).Store(n) }

// Count returns the count called name (0 when never set).
func (x *Facts) Count(name string) int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	if c, ok := x.counts[name]; ok {
		return c.Load()
	}
	return 0
}

// Notef records a sentence (once: a repeated note is dropped).
func (x *Facts) Notef(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	x.mu.Lock()
	defer x.mu.Unlock()
	if !slices.Contains(x.notes, s) {
		x.notes = append(x.notes, s)
	}
}

// FactSample is a copy of Facts, for a result.
type FactSample struct {
	Counts map[string]int64 `json:"counts,omitempty"`
	Notes  []string         `json:"notes,omitempty"`
}

// Snapshot copies the facts.
func (x *Facts) Snapshot() FactSample {
	x.mu.Lock()
	defer x.mu.Unlock()
	var s FactSample
	if len(x.counts) > 0 {
		s.Counts = make(map[string]int64, len(x.counts))
		for k, v := range x.counts {
			s.Counts[k] = v.Load()
		}
	}
	s.Notes = slices.Clone(x.notes)
	return s
}

// Lines renders the sample as "name value" lines in name order, then the
// notes.
func (s FactSample) Lines() []string {
	names := slices.Sorted(maps.Keys(s.Counts))
	out := make([]string, 0, len(names)+len(s.Notes))
	for _, k := range names {
		out = append(out, fmt.Sprintf("%s %d", k, s.Counts[k]))
	}
	return append(out, s.Notes...)
}

// SumFacts adds several samples (counts added, notes kept once each).
func SumFacts(samples ...FactSample) FactSample {
	var t FactSample
	for _, s := range samples {
		for k, v := range s.Counts {
			if t.Counts == nil {
				t.Counts = map[string]int64{}
			}
			t.Counts[k] += v
		}
		for _, n := range s.Notes {
			if !slices.Contains(t.Notes, n) {
				t.Notes = append(t.Notes, n)
			}
		}
	}
	return t
}
