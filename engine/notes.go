package engine

import (
	"fmt"
	"runtime"
	"sort"
	"sync"
	"weak"
)

// Facts are what a backend reports about one flow beyond the Counters:
// what actually happened (sends the kernel completed without copying and
// sends it copied, system calls of every kind, an option the kernel refused
// and the fallback taken). A backend writes them while it runs; a reporter
// may read them at any time, also concurrently.
//
// Counts are named int64 totals (see the Fact* names for the ones every
// renderer may rely on); notes are sentences for a human.
type Facts struct {
	mu     sync.Mutex
	counts map[string]int64
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
	// FactOwnThreads counts the threads of its own a backend moved the
	// data on: CPU measured on the calling thread misses their time.
	FactOwnThreads = "own_threads"
)

// Add adds n to the count called name.
func (x *Facts) Add(name string, n int64) {
	x.mu.Lock()
	if x.counts == nil {
		x.counts = map[string]int64{}
	}
	x.counts[name] += n
	x.mu.Unlock()
}

// Set sets the count called name to n.
func (x *Facts) Set(name string, n int64) {
	x.mu.Lock()
	if x.counts == nil {
		x.counts = map[string]int64{}
	}
	x.counts[name] = n
	x.mu.Unlock()
}

// Notef records a sentence (once: a repeated note is dropped).
func (x *Facts) Notef(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, n := range x.notes {
		if n == s {
			return
		}
	}
	x.notes = append(x.notes, s)
}

// Count returns the count called name (0 when never set).
func (x *Facts) Count(name string) int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.counts[name]
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
			s.Counts[k] = v
		}
	}
	s.Notes = append([]string(nil), x.notes...)
	return s
}

// Lines renders the sample as "name value" lines in name order, then the
// notes.
func (s FactSample) Lines() []string {
	names := make([]string, 0, len(s.Counts))
	for k := range s.Counts {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([]string, 0, len(names)+len(s.Notes))
	for _, k := range names {
		out = append(out, fmt.Sprintf("%s %d", k, s.Counts[k]))
	}
	return append(out, s.Notes...)
}

// SumFacts adds several samples (counts added, notes kept once each).
func SumFacts(samples ...FactSample) FactSample {
	var t FactSample
	seen := map[string]bool{}
	for _, s := range samples {
		for k, v := range s.Counts {
			if t.Counts == nil {
				t.Counts = map[string]int64{}
			}
			t.Counts[k] += v
		}
		for _, n := range s.Notes {
			if !seen[n] {
				seen[n] = true
				t.Notes = append(t.Notes, n)
			}
		}
	}
	return t
}

// Flow.Extra cannot be a field without changing the Flow struct, so the
// facts of a flow live in a table keyed by a weak pointer to it: an entry
// goes away when its Flow is garbage.
var (
	factsMu    sync.Mutex
	factsTable = map[weak.Pointer[Flow]]*Facts{}
)

// FactsOf returns the facts of f, creating them on first use. They live as
// long as f does.
func FactsOf(f *Flow) *Facts {
	key := weak.Make(f)
	factsMu.Lock()
	defer factsMu.Unlock()
	if x, ok := factsTable[key]; ok {
		return x
	}
	x := &Facts{}
	factsTable[key] = x
	runtime.AddCleanup(f, func(k weak.Pointer[Flow]) {
		factsMu.Lock()
		delete(factsTable, k)
		factsMu.Unlock()
	}, key)
	return x
}

// FlowFacts returns a copy of f's facts, and false when no backend recorded
// any.
func FlowFacts(f *Flow) (FactSample, bool) {
	factsMu.Lock()
	x, ok := factsTable[weak.Make(f)]
	factsMu.Unlock()
	if !ok {
		return FactSample{}, false
	}
	return x.Snapshot(), true
}
