package engine

import (
	"math"
	"sync/atomic"
)

// Counters are the running totals of one stream. One goroutine (the
// backend's) writes them; any number of others may read them at any time
// without locks, through Snapshot.
type Counters struct {
	bytes     atomic.Int64
	datagrams atomic.Int64
	calls     atomic.Int64
	errors    atomic.Int64
	idle      atomic.Int64
	minIO     atomic.Int64
	maxIO     atomic.Int64
}

// Sample is a consistent-enough copy of Counters: each field is read
// atomically.
type Sample struct {
	Bytes     int64 `json:"bytes"`
	Datagrams int64 `json:"datagrams"`
	Calls     int64 `json:"io_calls"`
	Errors    int64 `json:"errors"`
	// Idle counts the calls that moved nothing (the read that saw EOF,
	// a sentinel); Calls - Errors - Idle calls moved data.
	Idle int64 `json:"idle_calls"`
	// MinIO and MaxIO are the smallest and largest byte counts moved by one
	// successful I/O call; both are 0 before the first one.
	MinIO int64 `json:"min_io"`
	MaxIO int64 `json:"max_io"`
}

// AddIO records one I/O call that moved n bytes (n > 0) as datagrams
// datagrams (0 for a stream).
func (c *Counters) AddIO(n int, datagrams int) {
	v := int64(n)
	c.bytes.Add(v)
	c.calls.Add(1)
	if datagrams > 0 {
		c.datagrams.Add(int64(datagrams))
	}
	if m := c.minIO.Load(); m == 0 || v < m {
		c.minIO.Store(v)
	}
	if v > c.maxIO.Load() {
		c.maxIO.Store(v)
	}
}

// AddCall records an I/O call that moved nothing (EOF, EAGAIN retry).
func (c *Counters) AddCall() {
	c.calls.Add(1)
	c.idle.Add(1)
}

// AddError records a failed I/O call.
func (c *Counters) AddError() {
	c.calls.Add(1)
	c.errors.Add(1)
}

// Snapshot reads the counters.
func (c *Counters) Snapshot() Sample {
	return Sample{
		Bytes:     c.bytes.Load(),
		Datagrams: c.datagrams.Load(),
		Calls:     c.calls.Load(),
		Errors:    c.errors.Load(),
		Idle:      c.idle.Load(),
		MinIO:     c.minIO.Load(),
		MaxIO:     c.maxIO.Load(),
	}
}

// DataCalls is the number of I/O calls that moved data.
func (s Sample) DataCalls() int64 { return s.Calls - s.Errors - s.Idle }

// AvgIO is the mean bytes per I/O call that moved data.
func (s Sample) AvgIO() float64 {
	if n := s.DataCalls(); n > 0 {
		return float64(s.Bytes) / float64(n)
	}
	return 0
}

// Sub returns the counts accumulated between earlier and s (the min/max
// fields are kept from s: they are not additive).
func (s Sample) Sub(earlier Sample) Sample {
	d := s
	d.Bytes -= earlier.Bytes
	d.Datagrams -= earlier.Datagrams
	d.Calls -= earlier.Calls
	d.Errors -= earlier.Errors
	d.Idle -= earlier.Idle
	return d
}

// Add sums several samples (min of mins, max of maxes).
func Add(samples ...Sample) Sample {
	var t Sample
	t.MinIO = math.MaxInt64
	for _, s := range samples {
		t.Bytes += s.Bytes
		t.Datagrams += s.Datagrams
		t.Calls += s.Calls
		t.Errors += s.Errors
		t.Idle += s.Idle
		if s.MinIO > 0 && s.MinIO < t.MinIO {
			t.MinIO = s.MinIO
		}
		if s.MaxIO > t.MaxIO {
			t.MaxIO = s.MaxIO
		}
	}
	if t.MinIO == math.MaxInt64 {
		t.MinIO = 0
	}
	return t
}
